package channels

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/simulator"
)

// robotClock is a settable clock, for the simulator and the adapter alike.
type robotClock struct{ nanos atomic.Int64 }

func newRobotClock() *robotClock {
	c := &robotClock{}
	c.nanos.Store(time.Now().UnixNano())
	return c
}

func (c *robotClock) Now() time.Time          { return time.Unix(0, c.nanos.Load()) }
func (c *robotClock) Advance(d time.Duration) { c.nanos.Add(int64(d)) }

// robotURL is the simulator's webhook address of a robot with a token.
func robotURL(rig *simRig, platform, token string) string {
	switch platform {
	case WeComBot:
		return rig.url + "/wecom-bot/cgi-bin/webhook/send?key=" + token
	case DingTalkBot:
		return rig.url + "/dingtalk-bot/robot/send?access_token=" + token
	}
	return rig.url + "/feishu-bot/open-apis/bot/v2/hook/" + token
}

// newTestRobot builds a robot account's adapter on the simulator, on clock.
func newTestRobot(t *testing.T, platform string, cfg map[string]string, clock *robotClock) *Robot {
	t.Helper()
	if err := ValidateConfig(platform, cfg, true); err != nil {
		t.Fatal(err)
	}
	r := newRobot(platform, cfg, true)
	if clock != nil {
		r.now = clock.Now
	}
	return r
}

// robotSecrets are secrets of the right shape, by platform ("" for WeCom: none).
var robotSecrets = map[string]string{WeComBot: "", DingTalkBot: "SEC0123456789abcdef", FeishuBot: "fs-signing-key-1"}

// Each robot posts a signed message with its keyword added and its mentions rendered;
// a wrong secret is refused as bad credentials, a missing keyword as a refused content,
// a wrong key as an unknown robot: the classes the retry policy needs.
func TestRobotsPostSignedWithKeyword(t *testing.T) {
	mentions := []Mention{{Name: "Li Wei", UserID: "liwei", Mobile: "13800000001"}, {Name: "Zhang Min", Mobile: "13800000002"}}
	wantMentions := map[string][]string{
		WeComBot:    {"liwei", "13800000002"},
		DingTalkBot: {"liwei", "13800000002"},
		FeishuBot:   {"liwei"},
	}
	for _, platform := range []string{WeComBot, DingTalkBot, FeishuBot} {
		t.Run(platform, func(t *testing.T) {
			rig := startSim(t, simulator.Options{})
			keyword := "告警"
			if platform == WeComBot {
				keyword = "" // WeCom robots have no keyword setting
			}
			secret := robotSecrets[platform]
			rig.sim.SetRobot(simulator.RobotSettings{Platform: platform, Token: "tok-1", Secret: secret, Keyword: keyword})
			cfg := map[string]string{"webhook_url": robotURL(rig, platform, "tok-1"), "keyword": keyword}
			if secret != "" {
				cfg["secret"] = secret
			}
			m := Message{ID: "m1", To: "ops-core", Group: true, MsgType: "text", Title: "磁盘", Content: "db-01 disk 95%", Mentions: mentions}
			if _, err := newTestRobot(t, platform, cfg, nil).Send(context.Background(), m); err != nil {
				t.Fatalf("send: %v", err)
			}
			ds := rig.sim.Deliveries()
			if len(ds) != 1 {
				t.Fatalf("%d deliveries, want 1", len(ds))
			}
			d := ds[0]
			if d.Platform != platform || d.Group != "tok-1" || !strings.Contains(d.Content, "db-01 disk 95%") || !strings.Contains(d.Content, keyword) {
				t.Errorf("delivery %+v, want the post to tok-1 with the content and the keyword %q", d, keyword)
			}
			if diff := cmp.Diff(wantMentions[platform], d.Mentions); diff != "" {
				t.Errorf("mentions (-want +got):\n%s", diff)
			}

			// A wrong key: an unknown robot.
			bad := map[string]string{"webhook_url": robotURL(rig, platform, "tok-unknown"), "secret": cfg["secret"], "keyword": keyword}
			if platform == WeComBot {
				delete(bad, "secret")
			}
			if _, err := newTestRobot(t, platform, bad, nil).Send(context.Background(), m); classOf(t, err) != Auth {
				t.Errorf("unknown robot: %v, want auth", err)
			}
			if platform == WeComBot {
				return
			}
			// A wrong secret.
			wrong := map[string]string{"webhook_url": cfg["webhook_url"], "secret": secret + "x", "keyword": keyword}
			if _, err := newTestRobot(t, platform, wrong, nil).Send(context.Background(), m); classOf(t, err) != Auth {
				t.Errorf("wrong secret: %v, want auth", err)
			}
			// No keyword configured, and the content lacks it.
			noKeyword := map[string]string{"webhook_url": cfg["webhook_url"], "secret": secret}
			if _, err := newTestRobot(t, platform, noKeyword, nil).Send(context.Background(), m); classOf(t, err) != Permanent {
				t.Errorf("missing keyword: %v, want permanent", err)
			}
			if n := len(rig.sim.Deliveries()); n != 1 {
				t.Errorf("%d deliveries after the refusals, want still 1", n)
			}
		})
	}
}

// A signature more than an hour old is refused, as DingTalk and Feishu refuse it.
func TestRobotSignatureTimestampWindow(t *testing.T) {
	for _, platform := range []string{DingTalkBot, FeishuBot} {
		t.Run(platform, func(t *testing.T) {
			simClock, adapterClock := newRobotClock(), newRobotClock()
			rig := startSim(t, simulator.Options{Now: simClock.Now})
			rig.sim.SetRobot(simulator.RobotSettings{Platform: platform, Token: "t", Secret: robotSecrets[platform]})
			r := newTestRobot(t, platform, map[string]string{"webhook_url": robotURL(rig, platform, "t"), "secret": robotSecrets[platform]}, adapterClock)
			adapterClock.Advance(-59 * time.Minute)
			if _, err := r.Send(context.Background(), newMessage("g")); err != nil {
				t.Errorf("signed 59 minutes ago: %v, want delivered", err)
			}
			adapterClock.Advance(-2 * time.Minute)
			if _, err := r.Send(context.Background(), newMessage("g")); classOf(t, err) != Auth {
				t.Errorf("signed 61 minutes ago: %v, want auth", err)
			}
		})
	}
}

// DingTalk refuses a robot's 21st post in a minute with 130101 and then everything to
// it for ten minutes: the adapter reports rate_limited with a ten-minute wait; the other
// robot of the pool goes on.
func TestDingTalkRobotRefusesForTenMinutes(t *testing.T) {
	clock := newRobotClock()
	rig := startSim(t, simulator.Options{Now: clock.Now})
	cfg := map[string]string{"webhook_url": robotURL(rig, DingTalkBot, "a") + "\n" + robotURL(rig, DingTalkBot, "b")}
	r := newTestRobot(t, DingTalkBot, cfg, clock)
	ctx := context.Background()
	for i := range 20 {
		if _, err := r.Send(ctx, newMessage("g")); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	_, err := r.Send(ctx, newMessage("g"))
	var ce *Error
	if !errors.As(err, &ce) || ce.Class != RateLimited || ce.Code != "130101" || ce.RetryAfter != DingTalkRobotHold {
		t.Fatalf("21st post in a minute: %v, want rate_limited 130101 for ten minutes", err)
	}
	clock.Advance(2 * time.Minute)
	if _, err := r.Send(ctx, newMessage("g")); classOf(t, err) != RateLimited {
		t.Errorf("two minutes later: %v, want still refused", err)
	}
	second := newMessage("g")
	second.Robot = 1
	if _, err := r.Send(ctx, second); err != nil {
		t.Errorf("the pool's other robot: %v, want delivered", err)
	}
	clock.Advance(8*time.Minute + time.Second)
	if _, err := r.Send(ctx, newMessage("g")); err != nil {
		t.Errorf("ten minutes later: %v, want delivered", err)
	}
	if got := rig.sim.Deliveries(); len(got) != 22 || got[20].Group != "b" {
		t.Errorf("%d deliveries, want 22 with the 21st to robot b", len(got))
	}
}

// Content past a robot's cap is trimmed to it, ending with the note that it was cut,
// rather than refused; a Feishu robot's whole body stays within 20 KB.
func TestRobotTrimsToItsCap(t *testing.T) {
	for _, platform := range []string{WeComBot, DingTalkBot, FeishuBot} {
		t.Run(platform, func(t *testing.T) {
			rig := startSim(t, simulator.Options{})
			r := newTestRobot(t, platform, map[string]string{"webhook_url": robotURL(rig, platform, "t"), "keyword": "告警"}, nil)
			m := newMessage("g")
			m.Content = strings.Repeat("磁盘\"空间\"不足。", 4000)
			if _, err := r.Send(context.Background(), m); err != nil {
				t.Fatalf("send: %v", err)
			}
			d := rig.sim.Deliveries()[0]
			if !strings.Contains(d.Content, "…（已截断）") || !strings.HasSuffix(d.Content, "告警") {
				t.Errorf("content ends %q, want the truncation note and then the keyword", d.Content[max(0, len(d.Content)-60):])
			}
			if c := robotKinds[platform].cap; !c.Fits(d.Content) {
				t.Errorf("content of %d %s, over the cap of %d", c.Len(d.Content), c.Unit, c.Max)
			}
			if platform == FeishuBot {
				raw, _ := json.Marshal(map[string]any{"msg_type": "text", "content": map[string]string{"text": d.Content}})
				if len(raw) > 20<<10 {
					t.Errorf("Feishu body of %d bytes, over 20 KB", len(raw))
				}
			}
		})
	}
}

// A webhook URL must be https on the platform's own host unless the account may reach
// private networks; a secret of the wrong shape is refused; each problem names its field.
func TestRobotConfigNamesTheField(t *testing.T) {
	tests := []struct {
		platform     string
		cfg          map[string]string
		allowPrivate bool
		field        string
	}{
		{DingTalkBot, map[string]string{"webhook_url": "https://oapi.dingtalk.com/robot/send?access_token=x"}, false, ""},
		{DingTalkBot, map[string]string{"webhook_url": "https://oapi.dingtalk.com/robot/send?access_token=x\nhttps://oapi.dingtalk.com/robot/send?access_token=y", "secret": "SECabc"}, false, ""},
		{DingTalkBot, map[string]string{"webhook_url": "http://oapi.dingtalk.com/robot/send?access_token=x"}, false, "config.webhook_url"},
		{DingTalkBot, map[string]string{"webhook_url": "https://evil.example.com/robot/send?access_token=x"}, false, "config.webhook_url"},
		{DingTalkBot, map[string]string{"webhook_url": "https://oapi.dingtalk.com/robot/send?access_token=x\nhttps://open.feishu.cn/x"}, false, "config.webhook_url"},
		{DingTalkBot, map[string]string{"webhook_url": "https://oapi.dingtalk.com/robot/send?access_token=x", "secret": "abc"}, false, "config.secret"},
		{DingTalkBot, map[string]string{"webhook_url": "http://10.0.0.5/robot/send?access_token=x"}, true, ""},
		{DingTalkBot, map[string]string{"webhook_url": ""}, false, "config.webhook_url"},
		{FeishuBot, map[string]string{"webhook_url": "https://open.larksuite.com/open-apis/bot/v2/hook/x", "secret": "short"}, false, "config.secret"},
		{FeishuBot, map[string]string{"webhook_url": "https://open.feishu.cn/open-apis/bot/v2/hook/x", "secret": "long-enough-key"}, false, ""},
		{WeComBot, map[string]string{"webhook_url": "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=x", "secret": "SECabc"}, false, "config.secret"},
		{WeComBot, map[string]string{"webhook_url": "https://qyapi.weixin.qq.com:8443/cgi-bin/webhook/send?key=x"}, false, "config.webhook_url"},
	}
	for _, tt := range tests {
		err := ValidateConfig(tt.platform, tt.cfg, tt.allowPrivate)
		var se *SettingError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s %v: %v, want accepted", tt.platform, tt.cfg, err)
		case tt.field != "" && (!errors.As(err, &se) || se.Field != tt.field):
			t.Errorf("%s %v: %v, want a problem with %s", tt.platform, tt.cfg, err, tt.field)
		}
	}
	if !slicesEqual(SecretKeys[DingTalkBot], []string{"webhook_url", "secret"}) || !slicesEqual(SecretKeys[WeComBot], []string{"webhook_url"}) {
		t.Errorf("secret keys %v %v, want the webhook URL and the secret sealed", SecretKeys[DingTalkBot], SecretKeys[WeComBot])
	}
	if RecallWindow(DingTalkBot) != 0 || RecallWindow(FeishuBot) != 0 || RecallWindow(WeComBot) != 0 {
		t.Error("a robot can recall")
	}
	if l := DocumentedLimits(FeishuBot); l["per_minute"] != 100 || l["per_second"] != 5 {
		t.Errorf("Feishu robot's documented limits %v", l)
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

// The connection test says which setting is wrong, and shows no key or token.
func TestRobotProbeNamesTheWrongSetting(t *testing.T) {
	rig := startSim(t, simulator.Options{})
	rig.sim.SetRobot(simulator.RobotSettings{Platform: DingTalkBot, Token: "good-token", Secret: "SECright", Keyword: "告警"})
	reg := NewRegistry(nil)
	probe := func(cfg map[string]string) ProbeResult {
		return reg.Probe(context.Background(), Account{Name: "bot", Platform: DingTalkBot, Config: cfg, AllowPrivateNetwork: true})
	}
	ok := probe(map[string]string{"webhook_url": robotURL(rig, DingTalkBot, "good-token"), "secret": "SECright"})
	if !ok.OK || ok.Summary.Key != "channels.probe.robot_ok" {
		t.Errorf("right settings: %+v", ok)
	}
	if sec := probe(map[string]string{"webhook_url": robotURL(rig, DingTalkBot, "good-token"), "secret": "SECwrong"}); sec.OK || sec.Summary.Key != "channels.probe.robot_bad_secret" {
		t.Errorf("wrong secret: %+v, want robot_bad_secret", sec.Summary)
	}
	bad := probe(map[string]string{"webhook_url": robotURL(rig, DingTalkBot, "good-token") + "\n" + robotURL(rig, DingTalkBot, "no-such")})
	if bad.OK || bad.Summary.Key != "channels.probe.robot_bad_secret" && bad.Summary.Key != "channels.probe.robot_bad_url" {
		t.Errorf("pool with a wrong robot: %+v", bad.Summary)
	}
	badURL := probe(map[string]string{"webhook_url": robotURL(rig, DingTalkBot, "no-such"), "secret": "SECright"})
	if badURL.OK || badURL.Summary.Key != "channels.probe.robot_bad_url" {
		t.Errorf("unknown robot: %+v, want robot_bad_url", badURL.Summary)
	}
	for _, res := range []ProbeResult{ok, badURL} {
		for _, line := range res.Lines("en") {
			if strings.Contains(line, "good-token") || strings.Contains(line, "no-such") {
				t.Errorf("probe shows a robot's token: %s", line)
			}
		}
	}
	if n := len(rig.sim.Deliveries()); n != 0 {
		t.Errorf("the tests posted %d messages, want none", n)
	}
}

// A WeCom application posts to its group chat by chatid, a Feishu app to a chat by
// chat_id; both are recorded with their chat and the people they @.
func TestAppGroupChats(t *testing.T) {
	rig := startSim(t, simulator.Options{})
	ctx := context.Background()
	mentions := []Mention{{Name: "Li Wei", UserID: "liwei"}}
	wecom := newWeCom(map[string]string{"corp_id": "c", "agent_id": "1", "secret": "s", "base_url": rig.url + "/wecom"}, true)
	if _, err := wecom.Send(ctx, Message{ID: "w1", To: "wrOpsChat", Group: true, MsgType: "markdown", Content: "**db-01** disk 95%", Mentions: mentions}); err != nil {
		t.Fatalf("WeCom group chat: %v", err)
	}
	feishu := newFeishu(map[string]string{"app_id": "a", "app_secret": "s", "base_url": rig.url + "/feishu"}, true)
	if _, err := feishu.Send(ctx, Message{ID: "f1", To: "oc_ops", Group: true, MsgType: "text", Content: "db-01 disk 95%", Mentions: mentions}); err != nil {
		t.Fatalf("Feishu chat: %v", err)
	}
	if rig.hitCount("/wecom/cgi-bin/appchat/send") != 1 || rig.hitCount("/wecom/cgi-bin/message/send") != 0 {
		t.Error("the WeCom group post did not go to appchat/send")
	}
	type post struct {
		Platform, Group string
		Mentions        []string
	}
	var got []post
	for _, d := range rig.sim.Deliveries() {
		got = append(got, post{d.Platform, d.Group, d.Mentions})
	}
	want := []post{{"wecom", "wrOpsChat", []string{"liwei"}}, {"feishu", "oc_ops", []string{"liwei"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("group posts (-want +got):\n%s", diff)
	}
	// And the simulator's list says so over HTTP.
	raw, _ := json.Marshal(rig.sim.Deliveries()[0])
	if !strings.Contains(string(raw), `"group":"wrOpsChat"`) || !strings.Contains(string(raw), `"mentions":["liwei"]`) {
		t.Errorf("delivery as JSON: %s", raw)
	}
}

// Each robot's connection test tells a right setup from an unknown robot and, where
// robots sign, from a wrong secret.
func TestEveryRobotProbe(t *testing.T) {
	for _, platform := range []string{WeComBot, DingTalkBot, FeishuBot} {
		t.Run(platform, func(t *testing.T) {
			rig := startSim(t, simulator.Options{})
			secret := robotSecrets[platform]
			rig.sim.SetRobot(simulator.RobotSettings{Platform: platform, Token: "known", Secret: secret, Keyword: "告警"})
			reg := NewRegistry(nil)
			probe := func(token, secret string) string {
				cfg := map[string]string{"webhook_url": robotURL(rig, platform, token)}
				if secret != "" {
					cfg["secret"] = secret
				}
				res := reg.Probe(context.Background(), Account{Name: "bot", Platform: platform, Config: cfg, AllowPrivateNetwork: true})
				for _, line := range append(res.Lines("en"), res.Summary.String()) {
					if strings.Contains(line, token) {
						t.Errorf("the test shows the robot's key or token: %s", line)
					}
				}
				return res.Summary.Key
			}
			if got := probe("known", secret); got != "channels.probe.robot_ok" {
				t.Errorf("right settings: %s", got)
			}
			if got := probe("nobody", secret); got != "channels.probe.robot_bad_url" {
				t.Errorf("unknown robot: %s, want robot_bad_url", got)
			}
			if secret != "" {
				if got := probe("known", secret+"x"); got != "channels.probe.robot_bad_secret" {
					t.Errorf("wrong secret: %s, want robot_bad_secret", got)
				}
			}
			if n := len(rig.sim.Deliveries()); n != 0 {
				t.Errorf("the tests posted %d messages, want none", n)
			}
		})
	}
}
