package channels

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"herald/i18n"
)

// The group robot platforms: a robot belongs to one group chat and posts there
// through its webhook URL. An account holds one robot or a pool of them.
const (
	WeComBot    = "wecom_bot"
	DingTalkBot = "dingtalk_bot"
	FeishuBot   = "feishu_bot"
)

// robotKind is what differs between the group robots of the three platforms.
type robotKind struct {
	platform string
	// hosts are the platform's own hosts, the only ones a webhook URL may name unless
	// the account may reach private networks.
	hosts []string
	// secret checks a signing secret's shape; nil for a platform whose robots have none.
	secret func(string) bool
	// cap is how much text the robot takes, counted as the platform counts it: past it
	// Herald trims the text rather than refuse the message.
	cap ContentCap
	// body builds the request body and says what to add to the URL's query (DingTalk's
	// signature), given the text to post.
	body func(k *robotKind, m Message, text, secret string, now time.Time) ([]byte, url.Values, error)
	// maxBody bounds the whole request body (Feishu: 20 KB); 0 for no bound of its own.
	maxBody int
	// code reads the platform's answer: its code (0 is success) and message.
	code func(body []byte) (int, string, bool)
	// action says what a non-zero code means.
	action func(code int, msg string) codeAction
	// retryAfter is how long a rate-limited robot refuses posts, when the platform says.
	retryAfter func(code int) time.Duration
	// probeOK are the codes an empty test post is refused with once the robot's URL and
	// signature were accepted: the post reached the content check.
	probeOK map[int]bool
	// badURL and badSecret are the codes that name the webhook URL or the secret as wrong.
	badURL, badSecret map[int]bool
}

// robotKinds are the three robots, by platform.
var robotKinds = map[string]*robotKind{
	WeComBot: {platform: WeComBot, hosts: []string{"qyapi.weixin.qq.com"},
		// Text at most 2,048 bytes (markdown 4,096; Herald keeps to the smaller).
		cap: ContentCap{Max: 2048, Unit: Bytes}, body: wecomBotBody, code: errcodeOf,
		action: func(code int, msg string) codeAction {
			switch code {
			case 45009:
				return codeAction{class: RateLimited, meaning: "robot frequency limit"}
			case 93000:
				return codeAction{class: Auth, meaning: "invalid webhook key"}
			}
			return wecomErrorAction(code)
		},
		probeOK:    map[int]bool{44004: true, 40008: true},
		badURL:     map[int]bool{93000: true},
		retryAfter: func(int) time.Duration { return 0 }},
	DingTalkBot: {platform: DingTalkBot, hosts: []string{"oapi.dingtalk.com"},
		secret: func(s string) bool {
			return strings.HasPrefix(s, "SEC") && len(s) > 3 && !strings.ContainsAny(s, " \t\r\n")
		},
		// DingTalk documents no cap on a robot's text; it refuses bodies of about 20,000
		// bytes, so Herald keeps the text below that.
		cap: ContentCap{Max: 18000, Unit: Bytes}, body: dingtalkBotBody, code: errcodeOf,
		action: func(code int, msg string) codeAction {
			switch code {
			case 130101:
				return codeAction{class: RateLimited, meaning: "robot sent too fast; refused for 10 minutes"}
			case 310000:
				// One code for a bad signature, a missing keyword and an address outside the
				// robot's IP list; the message says which.
				if strings.Contains(strings.ToLower(msg), "keyword") {
					return codeAction{class: Permanent, meaning: "keyword missing from the content"}
				}
				return codeAction{class: Auth, meaning: "security check failed (signature, timestamp or IP)"}
			case 300001, 400102:
				return codeAction{class: Auth, meaning: "robot unknown or stopped"}
			}
			return dingtalkErrorAction(code)
		},
		retryAfter: func(code int) time.Duration {
			if code == 130101 {
				return DingTalkRobotHold
			}
			return 0
		},
		probeOK:   map[int]bool{40035: true},
		badURL:    map[int]bool{300001: true, 400102: true},
		badSecret: map[int]bool{310000: true}},
	FeishuBot: {platform: FeishuBot, hosts: []string{"open.feishu.cn", "open.larksuite.com"},
		secret: func(s string) bool { return len(s) >= 8 && !strings.ContainsAny(s, " \t\r\n") },
		// The whole request body at most 20 KB.
		cap: ContentCap{Max: 20 << 10, Unit: Bytes}, maxBody: 20 << 10, body: feishuBotBody, code: feishuCodeOf,
		action: func(code int, msg string) codeAction {
			switch code {
			case 11232:
				return codeAction{class: RateLimited, meaning: "robot frequency limit"}
			case 19021:
				return codeAction{class: Auth, meaning: "signature or timestamp refused"}
			case 19022:
				return codeAction{class: Auth, meaning: "address outside the robot's IP list"}
			case 19001:
				return codeAction{class: Auth, meaning: "robot unknown"}
			case 19024:
				return codeAction{class: Permanent, meaning: "keyword missing from the content"}
			case 9499:
				return codeAction{class: Permanent, meaning: "bad request"}
			}
			return codeAction{class: Transient, meaning: "unexpected error"}
		},
		retryAfter: func(int) time.Duration { return 0 },
		probeOK:    map[int]bool{9499: true, 19024: true},
		badURL:     map[int]bool{19001: true},
		badSecret:  map[int]bool{19021: true}},
}

// DingTalkRobotHold is how long DingTalk refuses every post to a robot that sent more
// than 20 in a minute (errcode 130101).
const DingTalkRobotHold = 10 * time.Minute

// robotIntakeCap is what intake accepts for a robot: the adapter trims to the robot's
// own cap.
var robotIntakeCap = ContentCap{Max: 32 << 10, Unit: Bytes}

// IsRobot reports whether a platform is a group robot's.
func IsRobot(platform string) bool { return robotKinds[platform] != nil }

// RobotURLs are the webhook URLs of a robot account's pool, one a line, in order.
func RobotURLs(cfg map[string]string) []string {
	var out []string
	for line := range strings.SplitSeq(cfg["webhook_url"], "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// RobotCount is how many robots a robot account's pool holds; 0 for other platforms.
// Each robot has the account's limits on its own.
func RobotCount(platform string, cfg map[string]string) int {
	if !IsRobot(platform) {
		return 0
	}
	return len(RobotURLs(cfg))
}

// robotFields are a robot account's settings; signed says the platform's robots have
// a secret.
func robotFields(platform string, signed bool) []Field {
	fields := []Field{{Key: "webhook_url", Required: true, Secret: true, Destination: true, Lines: true,
		Label: "channels.field.webhook_url", Help: "channels.help.webhook_url_" + platform}}
	if signed {
		fields = append(fields, Field{Key: "secret", Secret: true, Label: "channels.field.robot_secret", Help: "channels.help.robot_secret_" + platform})
	}
	return append(fields, Field{Key: "keyword", Label: "channels.field.keyword", Help: "channels.help.keyword"})
}

// checkRobot is a robot account's rule: every URL of the pool https on the platform's
// host (or, for an account that may reach private networks, any URL the address rule
// lets through), and a secret of the platform's shape.
func checkRobot(platform string) func(cfg map[string]string, allowPrivate bool) error {
	return func(cfg map[string]string, allowPrivate bool) error {
		k := robotKinds[platform]
		urls := RobotURLs(cfg)
		if len(urls) == 0 {
			return note("channels.config.required").invalid("config.webhook_url")
		}
		for _, raw := range urls {
			if problem := k.urlProblem(raw, allowPrivate); !problem.IsZero() {
				return problem.invalid("config.webhook_url")
			}
		}
		if s := cfg["secret"]; s != "" && (k.secret == nil || !k.secret(s)) {
			return note("channels.config.robot_secret_" + platform).invalid("config.secret")
		}
		return nil
	}
}

// urlProblem says what is wrong with one webhook URL of a pool, or a zero Note.
func (k *robotKind) urlProblem(raw string, allowPrivate bool) Note {
	if problem := urlProblem(raw, allowPrivate); !problem.IsZero() {
		return problem
	}
	if allowPrivate {
		return Note{}
	}
	u, _ := url.Parse(raw)
	for _, h := range k.hosts {
		if u.Scheme == "https" && strings.EqualFold(u.Hostname(), h) && u.Port() == "" {
			return Note{}
		}
	}
	return note("channels.config.robot_host", "Hosts", strings.Join(k.hosts, " / "))
}

// Robot posts to group chats through group robots' webhooks: one robot, or a pool of
// them that the worker spreads posts across (Message.Robot picks one). It signs each
// post when the account has a secret and adds the account's keyword to content that
// lacks it. It is safe for concurrent use.
type Robot struct {
	kind    *robotKind
	urls    []string
	secret  string
	keyword string
	client  *http.Client
	now     func() time.Time
}

// newRobot is the adapter of a robot account whose config passed ValidateConfig.
func newRobot(platform string, cfg map[string]string, allowPrivate bool) *Robot {
	return &Robot{kind: robotKinds[platform], urls: RobotURLs(cfg), secret: cfg["secret"],
		keyword: strings.TrimSpace(cfg["keyword"]), client: NewHTTPClient(allowPrivate, backstopTimeout), now: time.Now}
}

// buildRobot is the table's builder for the three robots.
func buildRobot(_ *Registry, a Account) (Sender, error) {
	return newRobot(a.Platform, a.Config, a.AllowPrivateNetwork), nil
}

// Send implements Sender: one post through the robot the message names.
func (r *Robot) Send(ctx context.Context, m Message) (Receipt, error) {
	target := r.urls[robotIndex(m.Robot, len(r.urls))]
	code, msg, reply, err := r.post(ctx, target, m, r.text(m))
	if err != nil {
		return Receipt{}, err
	}
	if code == 0 {
		return Receipt{}, nil
	}
	action := r.kind.action(code, msg)
	e := Errorf(action.class, strconv.Itoa(code), "channels: %s: robot %d: errcode %d (%s): %s",
		r.kind.platform, robotIndex(m.Robot, len(r.urls)), code, action.meaning, excerpt([]byte(msg)))
	if action.class == RateLimited {
		e.RetryAfter = max(r.kind.retryAfter(code), retryAfter(reply.header, r.now()))
	}
	return Receipt{}, e
}

// robotIndex keeps a robot number within the pool.
func robotIndex(i, n int) int {
	if i < 0 || i >= n {
		return 0
	}
	return i
}

// post signs and posts one message's text to one robot and reads the platform's code.
func (r *Robot) post(ctx context.Context, target string, m Message, text string) (int, string, httpReply, error) {
	prefix := "channels: " + r.kind.platform
	now := r.now()
	body, query, err := r.kind.body(r.kind, m, text, r.secret, now)
	for room := r.kind.cap; err == nil && r.kind.maxBody > 0 && len(body) > r.kind.maxBody; {
		// Escaping makes the body longer than the text: take off what is over, and
		// look again.
		if room.Max -= len(body) - r.kind.maxBody; room.Max <= 0 {
			break
		}
		body, query, err = r.kind.body(r.kind, m, r.textWithin(m, room), r.secret, now)
	}
	if err != nil {
		return 0, "", httpReply{}, Errorf(Permanent, "", "%s: encoding the message: %v", prefix, err)
	}
	if len(query) > 0 {
		u, perr := url.Parse(target)
		if perr != nil {
			return 0, "", httpReply{}, Errorf(Permanent, "", "%s: unreadable webhook URL", prefix)
		}
		q := u.Query()
		for k, v := range query {
			q[k] = v
		}
		u.RawQuery = q.Encode()
		target = u.String()
	}
	reply, err := postJSON(ctx, r.client, prefix, target, http.Header{"X-Request-Id": {m.ID}}, body)
	if err != nil {
		return 0, "", reply, err
	}
	code, msg, ok := r.kind.code(reply.body)
	if !ok {
		if e := statusError(prefix, reply, ""); e != nil {
			return 0, "", reply, e
		}
		return 0, "", reply, Errorf(Transient, reply.httpCode(), "%s: unreadable answer: %s", prefix, excerpt(reply.body))
	}
	return code, msg, reply, nil
}

// text is what the robot posts: the title leading the content, the keyword added
// when the content lacks it, all within the robot's cap; text past the cap is trimmed
// and says so (robots.truncated) rather than refused.
func (r *Robot) text(m Message) string { return r.textWithin(m, r.kind.cap) }

// textWithin is text within a cap of its own (a Feishu body past its bound).
func (r *Robot) textWithin(m Message, room ContentCap) string {
	text := wecomText(m)
	suffix := ""
	if r.keyword != "" && !strings.Contains(text, r.keyword) {
		suffix = "\n" + r.keyword
	}
	room.Max -= room.Len(suffix) + room.Len(mentionsText(r.kind.platform, m))
	return trimWithNote(room, text) + suffix
}

// trimWithNote cuts text to the cap on a character boundary, ending it with the
// catalog's note that it was cut; text that fits is returned as it is.
func trimWithNote(c ContentCap, text string) string {
	if c.Fits(text) {
		return text
	}
	tail := i18n.In(i18n.Chinese, "robots.truncated")
	room := c.Max - c.Len(tail)
	if room <= 0 {
		return ""
	}
	if c.Unit == Characters {
		runes := []rune(text)
		return string(runes[:min(room, len(runes))]) + tail
	}
	return cutBytes(text, room) + tail
}

// mentionsText is the @ text a platform shows for a message's mentions (DingTalk and
// Feishu render them in the text; a WeCom robot's text post lists them apart).
func mentionsText(platform string, m Message) string {
	var b strings.Builder
	for _, p := range m.Mentions {
		switch platform {
		case DingTalkBot:
			if id := cmpOr(p.UserID, p.Mobile); id != "" {
				b.WriteString(" @" + id)
			}
		case FeishuBot, "feishu":
			if p.UserID != "" {
				fmt.Fprintf(&b, ` <at user_id="%s">%s</at>`, p.UserID, xmlEscape(cmpOr(p.Name, p.UserID)))
			} else if p.Name != "" {
				b.WriteString(" @" + p.Name)
			}
		case WeComBot, "wecom":
			if m.MsgType == "markdown" && p.UserID != "" {
				b.WriteString(" <@" + p.UserID + ">")
			} else if platform == "wecom" && p.Name != "" {
				// An application's group chat has no mention list: name the person.
				b.WriteString(" @" + p.Name)
			}
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "\n" + strings.TrimSpace(b.String())
}

// cmpOr is the first non-empty string.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// xmlEscape escapes the few characters that would end Feishu's <at> element.
func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// errcodeOf reads WeCom's and DingTalk's answers: errcode and errmsg.
func errcodeOf(body []byte) (int, string, bool) {
	var reply struct {
		ErrCode *int   `json:"errcode"`
		ErrMsg  string `json:"errmsg"`
	}
	if json.Unmarshal(body, &reply) != nil || reply.ErrCode == nil {
		return 0, "", false
	}
	return *reply.ErrCode, reply.ErrMsg, true
}

// feishuCodeOf reads a Feishu robot's answer: code and msg (older robots answer
// StatusCode and StatusMessage).
func feishuCodeOf(body []byte) (int, string, bool) {
	var reply struct {
		Code       *int   `json:"code"`
		Msg        string `json:"msg"`
		StatusCode *int   `json:"StatusCode"`
		StatusMsg  string `json:"StatusMessage"`
	}
	if json.Unmarshal(body, &reply) != nil {
		return 0, "", false
	}
	switch {
	case reply.Code != nil:
		return *reply.Code, reply.Msg, true
	case reply.StatusCode != nil:
		return *reply.StatusCode, reply.StatusMsg, true
	}
	return 0, "", false
}

// wecomBotBody is a WeCom robot's post: text with its mention lists, or markdown
// with <@userid> in the text.
func wecomBotBody(_ *robotKind, m Message, text, _ string, _ time.Time) ([]byte, url.Values, error) {
	if m.MsgType == "markdown" {
		body, err := marshalPlain(map[string]any{"msgtype": "markdown", "markdown": map[string]string{"content": text + mentionsText(WeComBot, m)}})
		return body, nil, err
	}
	content := map[string]any{"content": text}
	addMentionLists(content, m, "mentioned_list", "mentioned_mobile_list")
	body, err := marshalPlain(map[string]any{"msgtype": "text", "text": content})
	return body, nil, err
}

// addMentionLists puts a message's mentions into a body's two lists, named as the
// platform names them: the people with a user id in the first, by it, the others by
// their mobile number in the second. An empty list is left out.
func addMentionLists(into map[string]any, m Message, byID, byMobile string) {
	var ids, mobiles []string
	for _, p := range m.Mentions {
		if p.UserID != "" {
			ids = append(ids, p.UserID)
		} else if p.Mobile != "" {
			mobiles = append(mobiles, p.Mobile)
		}
	}
	if len(ids) > 0 {
		into[byID] = ids
	}
	if len(mobiles) > 0 {
		into[byMobile] = mobiles
	}
}

// DingTalkRobotSign is DingTalk's signature of a robot post at a time in
// milliseconds: base64(HMAC-SHA256(key=secret, msg=timestamp+"\n"+secret)), sent
// URL-encoded as the sign query parameter beside timestamp.
func DingTalkRobotSign(secret string, timestampMs int64) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(timestampMs, 10) + "\n" + secret))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// dingtalkBotBody is a DingTalk robot's post: text or markdown with @ in the text and
// the people in at.atUserIds / at.atMobiles, signed in the query when there is a secret.
func dingtalkBotBody(_ *robotKind, m Message, text, secret string, now time.Time) ([]byte, url.Values, error) {
	text += mentionsText(DingTalkBot, m)
	at := map[string]any{"isAtAll": false}
	addMentionLists(at, m, "atUserIds", "atMobiles")
	msg := map[string]any{"msgtype": "text", "text": map[string]string{"content": text}, "at": at}
	if m.MsgType == "markdown" {
		title := cmpOr(m.Title, ContentCap{Max: dingtalkTitleChars, Unit: Characters}.Truncate(firstLine(m.Content)))
		msg = map[string]any{"msgtype": "markdown", "markdown": map[string]string{"title": title, "text": text}, "at": at}
	}
	body, err := marshalPlain(msg)
	if err != nil || secret == "" {
		return body, nil, err
	}
	ts := now.UnixMilli()
	return body, url.Values{"timestamp": {strconv.FormatInt(ts, 10)}, "sign": {DingTalkRobotSign(secret, ts)}}, nil
}

// FeishuRobotSign is Feishu's signature of a robot post at a time in seconds:
// base64(HMAC-SHA256(key=timestamp+"\n"+secret, msg="")), sent in the body.
func FeishuRobotSign(secret string, timestamp int64) string {
	mac := hmac.New(sha256.New, []byte(strconv.FormatInt(timestamp, 10)+"\n"+secret))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// feishuBotBody is a Feishu robot's text post with <at> elements for the mentions,
// signed in the body when there is a secret.
func feishuBotBody(_ *robotKind, m Message, text, secret string, now time.Time) ([]byte, url.Values, error) {
	msg := map[string]any{"msg_type": "text", "content": map[string]string{"text": text + mentionsText(FeishuBot, m)}}
	if secret != "" {
		ts := now.Unix()
		msg["timestamp"] = strconv.FormatInt(ts, 10)
		msg["sign"] = FeishuRobotSign(secret, ts)
	}
	body, err := marshalPlain(msg)
	return body, nil, err
}

// Probe posts an empty text to each robot of the pool: the platform checks the URL and
// the signature before the content, and refuses an empty content without posting
// anything, so its answer says which setting is wrong without a message reaching the
// group.
func (r *Robot) Probe(ctx context.Context) ProbeResult {
	res := ProbeResult{OK: true}
	for i, target := range r.urls {
		shown := redactRobotURL(target)
		code, msg, reply, err := r.post(ctx, target, Message{ID: "probe", MsgType: "text"}, "")
		action := verbatim("POST " + shown + " (empty text)")
		switch {
		case err != nil && reply.status == 0:
			res.Steps = append(res.Steps, exchange(action, answerNote(reply)), failedWith(err))
			res.OK, res.Summary = false, note("channels.probe.robot_unreachable", "Robot", i+1, "Problem", noAnswer(err))
			return res
		case err != nil:
			res.Steps = append(res.Steps, exchange(action, answerNote(reply)), failedWith(err))
			res.OK, res.Summary = false, note("channels.probe.robot_refused", "Robot", i+1, "Code", reply.status, "Message", excerpt(reply.body))
			return res
		}
		res.Steps = append(res.Steps, exchange(action, verbatim(fmt.Sprintf("%s, code %d (%s)", answerNote(reply).Text, code, excerpt([]byte(msg))))))
		keyword := strings.Contains(strings.ToLower(msg), "keyword")
		switch {
		case code == 0 || r.kind.probeOK[code] || keyword:
			// Refused for its content: the URL and the signature passed.
		case r.kind.badURL[code]:
			res.OK, res.Summary = false, note("channels.probe.robot_bad_url", "Robot", i+1, "Code", code, "Message", excerpt([]byte(msg)))
			return res
		case r.kind.badSecret[code]:
			res.OK, res.Summary = false, note("channels.probe.robot_bad_secret", "Robot", i+1, "Code", code, "Message", excerpt([]byte(msg)))
			return res
		case r.kind.action(code, msg).class == RateLimited:
			// The robot is resting; its URL and secret were accepted.
		default:
			res.OK, res.Summary = false, note("channels.probe.robot_refused", "Robot", i+1, "Code", code, "Message", excerpt([]byte(msg)))
			return res
		}
	}
	res.Summary = note("channels.probe.robot_ok", "Count", len(r.urls))
	return res
}

// redactRobotURL shows a webhook URL without its key or token: WeCom's and DingTalk's
// are query parameters, Feishu's the last step of the path.
func redactRobotURL(raw string) string {
	shown := redactURL(raw)
	if i := strings.Index(shown, "/hook/"); i >= 0 {
		end := i + len("/hook/")
		rest := shown[end:]
		if j := strings.IndexAny(rest, "?#"); j >= 0 {
			return shown[:end] + "***" + rest[j:]
		}
		return shown[:end] + "***"
	}
	return shown
}
