package models

import (
	"errors"
	"testing"

	"herald/channels"
	"herald/delivery"
	"herald/directory"
	"herald/i18n"
	"herald/kernel"
)

// Each platform's address, default limits and setting problems come from the platform
// table in channels, read the same way here for every platform.
func TestPlatformTableReadByModels(t *testing.T) {
	r := &directory.Recipient{ExternalID: "E1001", TianyuanID: "ty-1", ZhaohuID: "zh-1", WecomUserid: "wx-1", FeishuUserID: "fs-1", DingtalkUserid: "dt-1", Email: "a@example.com"}
	want := map[string]string{"tianyuan": "ty-1", "zhaohu": "zh-1", "wecom": "wx-1", "feishu": "fs-1", "dingtalk": "dt-1", "email": "a@example.com", "webhook": "E1001", "sandbox": "E1001",
		// A group robot posts to its own group; a person's address on it is their id in Herald.
		"wecom_bot": "E1001", "dingtalk_bot": "E1001", "feishu_bot": "E1001"}
	for _, p := range channels.Platforms {
		if got := r.Address(p); got != want[p] || got == "" {
			t.Errorf("Address(%s) = %q, want %q", p, got, want[p])
		}
		documented := channels.DocumentedLimits(p)
		l := delivery.DocumentedLimits(p)
		set := 0
		for _, w := range delivery.LimitWindows {
			if v := *w.Of(&l); v != documented[w.Name] {
				t.Errorf("%s: default %s = %d, documented %d", p, w.Name, v, documented[w.Name])
			} else if v != 0 {
				set++
			}
		}
		if set != len(documented) {
			t.Errorf("%s: documented limits %v name a window Herald does not have", p, documented)
		}
	}
	if r.Address("pigeon") != "" {
		t.Error("an unknown platform has an address")
	}
	if got := delivery.DocumentedLimits("wecom"); got.PerRecipientPerMinute != 30 || got.PerRecipientPerHour != 1000 {
		t.Errorf("WeCom defaults = %+v", got)
	}

	err := kernel.SettingInvalid(channels.ValidateConfig("tianyuan", map[string]string{"base_url": "https://im.example.com"}, false))
	fe, ok := errors.AsType[*kernel.FieldError](err)
	if !ok || fe.Field != "config.token" || fe.Key == "" || fe.Text(i18n.Chinese) == fe.Message {
		t.Errorf("missing token = %#v, want a translated failure of config.token", err)
	}
	if kernel.SettingInvalid(nil) != nil {
		t.Error("no problem became one")
	}
	other := errors.New("boom")
	if kernel.SettingInvalid(other) != other {
		t.Error("an error that is not a setting's changed")
	}
}
