package simulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The group robots' platforms, as deliveries name them.
const (
	wecomBot    = "wecom_bot"
	dingtalkBot = "dingtalk_bot"
	feishuBot   = "feishu_bot"
)

// robotSpec is how one platform's group robots answer: their codes, their limits and
// the window a signature's timestamp must fall in.
type robotSpec struct {
	platform string
	// limits are each robot's documented limits; hold is how long a robot past them
	// refuses everything (DingTalk: ten minutes), 0 for none.
	limits []window
	hold   time.Duration
	// signWindow is how far a signed post's timestamp may be from now (DingTalk and
	// Feishu both document one hour).
	signWindow time.Duration
	// The platform's codes for: an unknown robot, a bad signature or timestamp, a
	// missing keyword, an empty or malformed post, too many posts, a refusal of the
	// content (the reject fault).
	unknown, badSign, noKeyword, badRequest, tooMany, rejected int
	// The messages it answers them with.
	unknownMsg, badSignMsg, noKeywordMsg, badRequestMsg, tooManyMsg string
}

// feishuBotMaxBody is the most a Feishu robot's request body may hold.
const feishuBotMaxBody = 20 << 10

// robotSpecs are the three platforms' robots.
var robotSpecs = map[string]*robotSpec{
	wecomBot: {platform: wecomBot, limits: []window{{20, time.Minute}},
		unknown: 93000, badRequest: 44004, tooMany: 45009, rejected: 40008,
		unknownMsg: "invalid webhook url", badRequestMsg: "empty content", tooManyMsg: "api freq out of limit"},
	dingtalkBot: {platform: dingtalkBot, limits: []window{{20, time.Minute}}, hold: 10 * time.Minute, signWindow: time.Hour,
		unknown: 300001, badSign: 310000, noKeyword: 310000, badRequest: 40035, tooMany: 130101, rejected: 400013,
		unknownMsg: "token is not exist", badSignMsg: "sign not match", noKeywordMsg: "keywords not in content",
		badRequestMsg: "缺少参数 content", tooManyMsg: "send too fast, exceed 20 times per minute"},
	feishuBot: {platform: feishuBot, limits: []window{{5, time.Second}, {100, time.Minute}}, signWindow: time.Hour,
		unknown: 19001, badSign: 19021, noKeyword: 19024, badRequest: 9499, tooMany: 11232, rejected: 9499,
		unknownMsg:   "param invalid: incoming webhook access token invalid",
		badSignMsg:   "sign match fail or timestamp is not within one hour from current time",
		noKeywordMsg: "Key Words Not Found", badRequestMsg: "Bad Request", tooManyMsg: "frequency limited psm[lark.oapi.app_platform_runtime]appID[1]"},
}

// RobotSettings are what the simulator knows of one robot: its signing secret and its
// keyword, either empty for none. Once a platform has one robot registered, posts to
// a robot it does not know are refused as to an unknown robot; until then every token
// is a robot without security settings.
type RobotSettings struct {
	Platform string `json:"platform"` // wecom_bot, dingtalk_bot or feishu_bot
	Token    string `json:"token"`    // the key (WeCom), access_token (DingTalk) or hook token (Feishu)
	Secret   string `json:"secret"`
	Keyword  string `json:"keyword"`
}

// robotState is what the simulated robots remember: their settings, their windows
// and DingTalk's ten-minute refusals.
type robotState struct {
	sim      *Simulator
	counters map[string]*windowCounter // by platform, keyed by token

	mu       sync.Mutex               // guards the maps below
	settings map[string]RobotSettings // by platform + " " + token
	known    map[string]bool          // platforms with a registered robot
	heldTill map[string]time.Time     // by platform + " " + token
}

func newRobotState(sim *Simulator, limits bool) *robotState {
	r := &robotState{sim: sim, counters: map[string]*windowCounter{}}
	for p, spec := range robotSpecs {
		if limits {
			r.counters[p] = newWindowCounter(spec.limits...)
		} else {
			r.counters[p] = newWindowCounter()
		}
	}
	r.reset()
	return r
}

// reset forgets the windows and the refusals; the robots' settings stay.
func (r *robotState) reset() {
	for _, c := range r.counters {
		c.reset()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.settings == nil {
		r.settings, r.known = map[string]RobotSettings{}, map[string]bool{}
	}
	r.heldTill = map[string]time.Time{}
}

// register learns a robot's settings.
func (r *robotState) register(rs RobotSettings) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settings[rs.Platform+" "+rs.Token] = rs
	r.known[rs.Platform] = true
}

// lookup returns a robot's settings and whether it is a robot at all.
func (r *robotState) lookup(platform, token string) (RobotSettings, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rs, ok := r.settings[platform+" "+token]
	return rs, ok || !r.known[platform] && token != ""
}

// admit counts a post against its robot's limits. A robot past them refuses it; one
// whose platform holds robots past their limit (DingTalk) refuses everything until
// the hold ends.
func (r *robotState) admit(spec *robotSpec, token string, now time.Time) bool {
	key := spec.platform + " " + token
	r.mu.Lock()
	held := now.Before(r.heldTill[key])
	r.mu.Unlock()
	if held {
		return false
	}
	if ok, _ := r.counters[spec.platform].admit(token, now); ok {
		return true
	}
	if spec.hold > 0 {
		r.mu.Lock()
		r.heldTill[key] = now.Add(spec.hold)
		r.mu.Unlock()
	}
	return false
}

// robotPost is what a robot's post says, whatever the platform: the text the group
// reads, the people it @s and, for Feishu, its signature.
type robotPost struct {
	text      string
	mentions  []string
	timestamp string
	sign      string
}

// atElement is Feishu's mention in a text.
var atElement = regexp.MustCompile(`<at user_id="([^"]*)">`)

// wecomAt is WeCom's mention in a markdown text.
var wecomAt = regexp.MustCompile(`<@([^>]+)>`)

// readRobotPost reads a post's body as its platform writes it; false when it does
// not parse.
func readRobotPost(platform string, body []byte) (robotPost, bool) {
	var raw struct {
		MsgType string `json:"msgtype"`
		Text    struct {
			Content string   `json:"content"`
			IDs     []string `json:"mentioned_list"`
			Mobiles []string `json:"mentioned_mobile_list"`
		} `json:"text"`
		Markdown struct {
			Content string `json:"content"`
			Text    string `json:"text"`
		} `json:"markdown"`
		At struct {
			UserIDs []string `json:"atUserIds"`
			Mobiles []string `json:"atMobiles"`
		} `json:"at"`
		// Feishu.
		FeishuType string `json:"msg_type"`
		Content    struct {
			Text string `json:"text"`
		} `json:"content"`
		Timestamp string `json:"timestamp"`
		Sign      string `json:"sign"`
	}
	if json.Unmarshal(body, &raw) != nil {
		return robotPost{}, false
	}
	var p robotPost
	switch platform {
	case wecomBot:
		switch raw.MsgType {
		case "text":
			p.text = raw.Text.Content
			p.mentions = append(append(p.mentions, raw.Text.IDs...), raw.Text.Mobiles...)
		case "markdown":
			p.text = raw.Markdown.Content
			for _, m := range wecomAt.FindAllStringSubmatch(p.text, -1) {
				p.mentions = append(p.mentions, m[1])
			}
		default:
			return p, false
		}
	case dingtalkBot:
		switch raw.MsgType {
		case "text":
			p.text = raw.Text.Content
		case "markdown":
			p.text = raw.Markdown.Text
		default:
			return p, false
		}
		// DingTalk @s a person only when the text names them too.
		for _, id := range append(append([]string(nil), raw.At.UserIDs...), raw.At.Mobiles...) {
			if strings.Contains(p.text, "@"+id) {
				p.mentions = append(p.mentions, id)
			}
		}
	case feishuBot:
		if raw.FeishuType != "text" {
			return p, false
		}
		p.text, p.timestamp, p.sign = raw.Content.Text, raw.Timestamp, raw.Sign
		p.mentions = feishuMentions(p.text)
	}
	return p, true
}

// feishuMentions are the user ids of the <at> elements of a Feishu text.
func feishuMentions(text string) []string {
	var out []string
	for _, m := range atElement.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// robotReply is a robot's answer in its platform's words.
func robotReply(w http.ResponseWriter, platform string, code int, msg string) {
	if platform == feishuBot {
		writeJSON(w, http.StatusOK, map[string]any{"code": code, "msg": msg, "data": map[string]any{}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"errcode": code, "errmsg": msg})
}

// signedInTime checks a signature against the robot's secret and its timestamp against
// the platform's window, as DingTalk (milliseconds, HMAC of timestamp+"\n"+secret keyed
// by the secret) and Feishu (seconds, HMAC of "" keyed by timestamp+"\n"+secret) do.
func signedInTime(spec *robotSpec, secret, timestamp, sign string, now time.Time) bool {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || sign == "" {
		return false
	}
	var at time.Time
	var mac []byte
	if spec.platform == dingtalkBot {
		at = time.UnixMilli(ts)
		h := hmac.New(sha256.New, []byte(secret))
		h.Write([]byte(timestamp + "\n" + secret))
		mac = h.Sum(nil)
	} else {
		at = time.Unix(ts, 0)
		mac = hmac.New(sha256.New, []byte(timestamp+"\n"+secret)).Sum(nil)
	}
	if d := now.Sub(at); d > spec.signWindow || d < -spec.signWindow {
		return false
	}
	return hmac.Equal([]byte(base64.StdEncoding.EncodeToString(mac)), []byte(sign))
}

// handleRobot serves a platform's robot webhook: the robot known, the signature and its
// timestamp, the post readable and not empty, the keyword present, the robot's limits
// (and DingTalk's ten-minute refusal), then the fault draw; an accepted post is recorded
// with its robot as its group and the people it @s.
func (rb *robotState) handleRobot(platform string) http.HandlerFunc {
	s, spec := rb.sim, robotSpecs[platform]
	return func(w http.ResponseWriter, r *http.Request) {
		received := s.now()
		fail := func(code int, msg string) { robotReply(w, platform, code, msg) }
		var token string
		switch platform {
		case wecomBot:
			token = r.URL.Query().Get("key")
		case dingtalkBot:
			token = r.URL.Query().Get("access_token")
		default:
			token = r.PathValue("token")
		}
		rs, known := s.robots.lookup(platform, token)
		if !known {
			fail(spec.unknown, spec.unknownMsg)
			return
		}
		body, err := readBody(w, r)
		if err != nil {
			fail(spec.badRequest, spec.badRequestMsg)
			return
		}
		post, ok := readRobotPost(platform, body)
		if platform == feishuBot && len(body) > feishuBotMaxBody {
			ok = false
		}
		if rs.Secret != "" && platform == dingtalkBot {
			post.timestamp, post.sign = r.URL.Query().Get("timestamp"), r.URL.Query().Get("sign")
		}
		switch {
		case rs.Secret != "" && !signedInTime(spec, rs.Secret, post.timestamp, post.sign, received):
			fail(spec.badSign, spec.badSignMsg)
			return
		case !ok || strings.TrimSpace(post.text) == "":
			fail(spec.badRequest, spec.badRequestMsg)
			return
		case rs.Keyword != "" && !strings.Contains(post.text, rs.Keyword):
			fail(spec.noKeyword, spec.noKeywordMsg)
			return
		case !s.robots.admit(spec, token, received):
			fail(spec.tooMany, spec.tooManyMsg)
			return
		}
		v := s.decide()
		waitLatency(r, v)
		d := Delivery{Platform: platform, To: token, Group: token, Mentions: post.mentions, RequestID: r.Header.Get("X-Request-Id"),
			Content: post.text, ReceivedAtMs: received.UnixMilli()}
		answerDraw(s, w, r, v, drawAnswers{deliver: func() { s.record(d) },
			ok:       func() { fail(0, map[bool]string{true: "success", false: "ok"}[platform == feishuBot]) },
			auth:     func() { fail(spec.unknown, spec.unknownMsg) },
			throttle: func() { fail(spec.tooMany, spec.tooManyMsg) },
			reject:   func() { fail(spec.rejected, "content refused") }})
	}
}

// drawAnswers are how one endpoint answers each outcome of the fault draw: deliver
// records what was accepted, ok answers success, the others answer the refusals in
// the platform's words.
type drawAnswers struct {
	deliver, ok, auth, throttle, reject func()
}

// answerDraw answers a request as the fault draw decided: a refusal, a server error,
// no answer, the ambiguous case (recorded, then no answer), or success.
func answerDraw(s *Simulator, w http.ResponseWriter, r *http.Request, v verdict, a drawAnswers) {
	switch v.outcome {
	case outcomeAuth:
		a.auth()
	case outcomeFail:
		http.Error(w, "internal error", http.StatusInternalServerError)
	case outcomeThrottle:
		a.throttle()
	case outcomeReject:
		a.reject()
	case outcomeTimeout:
		s.holdThenAbort(r)
	case outcomeAcceptThenTimeout:
		a.deliver()
		s.holdThenAbort(r)
	default:
		a.deliver()
		a.ok()
	}
}

// handleRobotSettings serves POST /_sim/robots: {"platform","token","secret","keyword"}
// teaches the simulator one robot's security settings.
func (rb *robotState) handleRobotSettings(w http.ResponseWriter, r *http.Request) {
	var rs RobotSettings
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&rs); err != nil {
		writeJSON(w, http.StatusBadRequest, controlError{Error: "invalid body: " + err.Error()})
		return
	}
	if robotSpecs[rs.Platform] == nil || rs.Token == "" {
		writeJSON(w, http.StatusBadRequest, controlError{Error: "platform must be wecom_bot, dingtalk_bot or feishu_bot, with a token"})
		return
	}
	rb.register(rs)
	w.WriteHeader(http.StatusNoContent)
}

// SetRobot teaches the simulator one robot's security settings, as POST /_sim/robots.
func (s *Simulator) SetRobot(rs RobotSettings) { s.robots.register(rs) }

// readBody reads a request's body within maxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
}
