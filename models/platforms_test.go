package models

import (
	"errors"
	"fmt"
	"maps"
	"slices"
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
	r := &directory.Recipient{ExternalID: "E1001", TianyuanID: "ty-1", ZhaohuID: "zh-1", WecomUserid: "wx-1", FeishuUserID: "fs-1", DingtalkUserid: "dt-1", Email: "a@example.com", Mobile: "13800138000"}
	want := map[string]string{"tianyuan": "ty-1", "zhaohu": "zh-1", "wecom": "wx-1", "feishu": "fs-1", "dingtalk": "dt-1", "email": "a@example.com", "webhook": "E1001", "sandbox": "E1001", "sms": "13800138000", "voice": "13800138000",
		// A group robot posts to its own group; a person's address on it is their id in Herald.
		"wecom_bot": "E1001", "dingtalk_bot": "E1001", "feishu_bot": "E1001"}
	for _, p := range channels.Platforms {
		if got := r.Address(p); got != want[p] || got == "" {
			t.Errorf("Address(%s) = %q, want %q", p, got, want[p])
		}
		for _, provider := range []string{"", channels.ProviderAliyun, channels.ProviderTencent} {
			if provider != "" && !channels.ChoosesProvider(p) {
				continue
			}
			checkDefaultLimits(t, p, map[string]string{"provider": provider})
		}
	}
	if r.Address("pigeon") != "" {
		t.Error("an unknown platform has an address")
	}
	if got := delivery.DocumentedLimits("wecom", nil); got.PerRecipientPerMinute != 30 || got.PerRecipientPerHour != 1000 {
		t.Errorf("WeCom defaults = %+v", got)
	}
	if got := delivery.DocumentedLimits("voice", map[string]string{"provider": "tencent"}); got.PerRecipientPer30s != 1 || got.PerRecipientPer10m != 2 {
		t.Errorf("Tencent voice defaults = %+v", got)
	}
	if got := delivery.DocumentedLimits("voice", map[string]string{"provider": "aliyun"}); got.PerRecipientPerMinute != 1 || got.PerRecipientPerHour != 5 || got.PerRecipientPerDay != 20 {
		t.Errorf("Alibaba voice defaults = %+v", got)
	}
	checkPlatformConfigErrors(t)
}

// checkDefaultLimits: a new account's limits are the ones the table documents for
// its platform (and provider), each in a window Herald has.
func checkDefaultLimits(t *testing.T, p string, cfg map[string]string) {
	t.Helper()
	{
		documented := channels.DocumentedLimits(p, cfg)
		l := delivery.DocumentedLimits(p, cfg)
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
}

// checkPlatformConfigErrors: a setting's problem is a translated field error.
func checkPlatformConfigErrors(t *testing.T) {
	t.Helper()
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

// Every platform that posts to chat groups @s people by a staff field there is, and the
// robots of the platforms that @ by mobile say so.
func TestGroupPlatformsMentionByAStaffField(t *testing.T) {
	want := map[string]string{"wecom": "wecom_userid false", "feishu": "feishu_user_id false", "wecom_bot": "wecom_userid true",
		"dingtalk_bot": "dingtalk_userid true", "feishu_bot": "feishu_user_id false"}
	got := map[string]string{}
	for _, p := range channels.GroupPlatforms() {
		field, byMobile, ok := channels.MentionBy(p)
		if !ok || !slices.ContainsFunc(directory.IMAddresses, func(a directory.IMAddress) bool { return a.Field == field }) {
			t.Errorf("%s @s by %q, which is no staff field", p, field)
		}
		got[p] = fmt.Sprint(field, " ", byMobile)
	}
	if !maps.Equal(got, want) {
		t.Errorf("mentions by platform %v, want %v", got, want)
	}
	if _, _, ok := channels.MentionBy("email"); ok {
		t.Error("email posts to chat groups")
	}
}
