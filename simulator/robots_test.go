package simulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// The control route teaches a robot its secret and keyword; the robot then refuses
// what DingTalk refuses, with DingTalk's codes, and records what it accepts with its
// group and the people it @s (only those the text names).
func TestDingTalkRobotChecksAsDingTalk(t *testing.T) {
	clock := newFakeClock()
	sim, srv := newTestServer(t, Faults{}, Options{Now: clock.Now})
	if resp := mustDo(t, "POST", srv.URL+"/_sim/robots", nil, map[string]string{"platform": "pigeon_bot", "token": "x"}); resp.status != http.StatusBadRequest {
		t.Errorf("unknown platform: HTTP %d, want 400", resp.status)
	}
	if resp := mustDo(t, "POST", srv.URL+"/_sim/robots", nil, RobotSettings{Platform: dingtalkBot, Token: "ops", Secret: "SECx", Keyword: "告警"}); resp.status != http.StatusNoContent {
		t.Fatalf("teaching a robot: HTTP %d %s", resp.status, resp.body)
	}
	sign := func(at time.Time, secret string) string {
		ts := strconv.FormatInt(at.UnixMilli(), 10)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(ts + "\n" + secret))
		return "&timestamp=" + ts + "&sign=" + url.QueryEscape(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	post := map[string]any{"msgtype": "text", "text": map[string]string{"content": "告警 db-01 @13800000001"},
		"at": map[string]any{"atMobiles": []string{"13800000001", "13800000002"}}}
	tests := []struct {
		name  string
		query string
		body  any
		code  int
	}{
		{"unknown robot", "access_token=nobody" + sign(clock.Now(), "SECx"), post, 300001},
		{"unsigned", "access_token=ops", post, 310000},
		{"wrong secret", "access_token=ops" + sign(clock.Now(), "SECy"), post, 310000},
		{"two hours old", "access_token=ops" + sign(clock.Now().Add(-2*time.Hour), "SECx"), post, 310000},
		{"no keyword", "access_token=ops" + sign(clock.Now(), "SECx"), map[string]any{"msgtype": "text", "text": map[string]string{"content": "db-01"}}, 310000},
		{"right", "access_token=ops" + sign(clock.Now(), "SECx"), post, 0},
	}
	for _, tt := range tests {
		resp := mustDo(t, "POST", srv.URL+"/dingtalk-bot/robot/send?"+tt.query, nil, tt.body)
		if got := decode[struct{ ErrCode int }](t, resp.body); got.ErrCode != tt.code {
			t.Errorf("%s: errcode %d (%s), want %d", tt.name, got.ErrCode, resp.body, tt.code)
		}
	}
	ds := sim.Deliveries()
	if len(ds) != 1 || ds[0].Group != "ops" || len(ds[0].Mentions) != 1 || ds[0].Mentions[0] != "13800000001" {
		t.Errorf("deliveries %+v, want one to ops @-ing 13800000001 only", ds)
	}
}

// A Feishu robot takes 5 posts a second and 100 a minute, answering 11232 past them;
// a WeCom robot 20 a minute, answering 45009. Nothing is dropped silently.
func TestRobotLimitsAsThePlatforms(t *testing.T) {
	clock := newFakeClock()
	sim, srv := newTestServer(t, Faults{}, Options{Now: clock.Now})
	feishu := func() int {
		resp := mustDo(t, "POST", srv.URL+"/feishu-bot/open-apis/bot/v2/hook/fs1", nil,
			map[string]any{"msg_type": "text", "content": map[string]string{"text": "disk"}})
		return decode[struct{ Code int }](t, resp.body).Code
	}
	for i := range 5 {
		if code := feishu(); code != 0 {
			t.Fatalf("Feishu post %d: code %d", i, code)
		}
	}
	if code := feishu(); code != 11232 {
		t.Errorf("sixth Feishu post in a second: code %d, want 11232", code)
	}
	clock.Advance(time.Second)
	if code := feishu(); code != 0 {
		t.Errorf("a second later: code %d, want 0", code)
	}
	wecom := func() int {
		resp := mustDo(t, "POST", srv.URL+"/wecom-bot/cgi-bin/webhook/send?key=k1", nil,
			map[string]any{"msgtype": "text", "text": map[string]any{"content": "disk", "mentioned_list": []string{"liwei"}}})
		return decode[struct{ ErrCode int }](t, resp.body).ErrCode
	}
	for i := range 20 {
		if code := wecom(); code != 0 {
			t.Fatalf("WeCom post %d: errcode %d", i, code)
		}
	}
	if code := wecom(); code != 45009 {
		t.Errorf("21st WeCom post in a minute: errcode %d, want 45009", code)
	}
	clock.Advance(time.Minute)
	if code := wecom(); code != 0 {
		t.Errorf("a minute later: errcode %d, want 0", code)
	}
	st := sim.Stats()
	if st.Accepted != 27 || st.ByPlatform[wecomBot] != 21 || st.ByPlatform[feishuBot] != 6 {
		t.Errorf("stats %+v, want 21 WeCom and 6 Feishu robot posts", st)
	}
}
