package channels

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DingTalk sends DingTalk (钉钉) work notices (工作通知) of an internal app: one
// asyncsend_v2 call carries one content to many user ids, and getsendresult then says,
// user by user, what became of it. DingTalk accepts calls past its limits with success
// and delivers nothing to the users over them (they come back as forbidden), so Herald
// keeps those limits itself (the platform table's limits, and intake's "same content
// once a day"). It is safe for concurrent use; the registry keeps one per account so
// the access token outlives single sends.
type DingTalk struct {
	baseURL   string
	appKey    string
	appSecret string
	agentID   int64
	client    *http.Client
	tokens    *tokenCache
}

// DefaultDingTalkBaseURL is DingTalk's API host for work notices.
const DefaultDingTalkBaseURL = "https://oapi.dingtalk.com"

// DingTalkMaxGroup is how many people one DingTalk call carries. DingTalk takes up to
// 5,000 user ids in one asyncsend_v2 call, but getsendresult, which says what became of
// each of them, is documented to time out for tasks of more than 100 people; Herald
// needs each person's outcome, so its calls carry at most 100 (a chunk's worth).
const DingTalkMaxGroup = 100

// NewDingTalk returns the adapter for a DingTalk account's config (keys app_key,
// app_secret, agent_id, base_url).
func NewDingTalk(cfg map[string]string, allowPrivate bool) (*DingTalk, error) {
	if err := ValidateConfig("dingtalk", cfg, allowPrivate); err != nil {
		return nil, fmt.Errorf("channels: dingtalk: %w", err)
	}
	return newDingTalk(cfg, allowPrivate), nil
}

// newDingTalk is NewDingTalk for a config already validated.
func newDingTalk(cfg map[string]string, allowPrivate bool) *DingTalk {
	agentID, _ := strconv.ParseInt(cfg["agent_id"], 10, 64) // checked by ValidateConfig
	base := strings.TrimSpace(cfg["base_url"])
	if base == "" {
		base = DefaultDingTalkBaseURL
	}
	d := &DingTalk{
		baseURL:   strings.TrimRight(base, "/"),
		appKey:    cfg["app_key"],
		appSecret: cfg["app_secret"],
		agentID:   agentID,
		client:    NewHTTPClient(allowPrivate, backstopTimeout),
	}
	d.tokens = &tokenCache{prefix: "channels: dingtalk", now: time.Now,
		fetch: func(ctx context.Context) (string, time.Duration, error) {
			_, reply, err := d.requestToken(ctx)
			return reply.AccessToken, time.Duration(reply.ExpiresIn) * time.Second, err
		}}
	return d
}

// dingtalkErrors maps DingTalk's errcodes to error classes (its global error codes);
// codes not listed fall back to dingtalkErrorAction's ranges.
var dingtalkErrors = map[int]codeAction{
	-1: {Transient, false, "system busy"},

	40014: {Auth, true, "invalid access_token"},
	41001: {Auth, true, "access_token missing"},
	42001: {Auth, true, "access_token expired"},

	88:    {Auth, false, "authorization error (see sub_code)"},
	33001: {Auth, false, "invalid corp"},
	40001: {Auth, false, "invalid credential"},
	40089: {Auth, false, "invalid app_key or app_secret"},
	60011: {Auth, false, "no permission for this API"},
	60020: {Auth, false, "server IP not in the app's allowed IPs"},

	// Flow control: DingTalk refuses calls from the app (or the server) for a while.
	90002: {RateLimited, false, "calls from this server temporarily refused"},
	90005: {RateLimited, false, "the organisation's call quota is used up"},
	90006: {RateLimited, false, "calls temporarily refused"},
	90018: {RateLimited, false, "calls temporarily refused (flow control)"},

	40035: {Permanent, false, "invalid parameter"},
	40056: {Permanent, false, "invalid agent_id"},
}

// dingtalkErrorAction returns what a non-zero errcode means.
func dingtalkErrorAction(code int) codeAction {
	if a, ok := dingtalkErrors[code]; ok {
		return a
	}
	switch {
	case code/1000 == 90:
		// 90xxx are DingTalk's flow-control codes.
		return codeAction{class: RateLimited, meaning: "flow control"}
	case code/10000 >= 3 && code/10000 <= 8:
		// Request, contact and message errors that the same request will hit again.
		return codeAction{class: Permanent, meaning: "request refused"}
	}
	return codeAction{class: Transient, meaning: "unexpected error"}
}

// dingtalkReply is the part of every DingTalk answer this adapter reads.
type dingtalkReply struct {
	ErrCode     *int                `json:"errcode"`
	ErrMsg      string              `json:"errmsg"`
	SubCode     string              `json:"sub_code"`
	AccessToken string              `json:"access_token"`
	ExpiresIn   int64               `json:"expires_in"`
	TaskID      int64               `json:"task_id"`
	SendResult  *dingtalkSendResult `json:"send_result"`
}

// dingtalkSendResult is what getsendresult says became of each user of a task.
type dingtalkSendResult struct {
	InvalidUsers   []string            `json:"invalid_user_id_list"`
	ForbiddenUsers []string            `json:"forbidden_user_id_list"`
	FailedUsers    []string            `json:"failed_user_id_list"`
	ReadUsers      []string            `json:"read_user_id_list"`
	UnreadUsers    []string            `json:"unread_user_id_list"`
	Forbidden      []dingtalkForbidden `json:"forbidden_list"`
}

// dingtalkForbidden is why one user's notice was held back by flow control.
type dingtalkForbidden struct {
	Code   string `json:"code"`
	Count  int64  `json:"count"`
	UserID string `json:"userid"`
}

// dingtalkContent is the body of a text or markdown message.
type dingtalkContent struct {
	Title   string `json:"title,omitempty"`
	Text    string `json:"text,omitempty"`
	Content string `json:"content,omitempty"`
}

// dingtalkMsg is the msg of asyncsend_v2.
type dingtalkMsg struct {
	MsgType  string           `json:"msgtype"`
	Text     *dingtalkContent `json:"text,omitempty"`
	Markdown *dingtalkContent `json:"markdown,omitempty"`
}

// dingtalkSend is the body of asyncsend_v2.
type dingtalkSend struct {
	AgentID    int64       `json:"agent_id"`
	UserIDList string      `json:"userid_list"`
	Msg        dingtalkMsg `json:"msg"`
}

// dingtalkMessage builds the msg for a message. The title leads the text, as for WeCom
// (CountedContent counts them together); markdown also gets it as its title field,
// which DingTalk shows in the notification list.
func dingtalkMessage(m Message) dingtalkMsg {
	text := Cap("dingtalk").Truncate(wecomText(m))
	if m.MsgType == "markdown" {
		title := m.Title
		if title == "" {
			title = ContentCap{Max: dingtalkTitleChars, Unit: Characters}.Truncate(firstLine(m.Content))
		}
		return dingtalkMsg{MsgType: "markdown", Markdown: &dingtalkContent{Title: title, Text: text}}
	}
	return dingtalkMsg{MsgType: "text", Text: &dingtalkContent{Content: text}}
}

// dingtalkTitleChars bounds a markdown title made from the content's first line.
const dingtalkTitleChars = 64

// firstLine is s up to its first line break.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Send implements Sender: a group of one.
func (d *DingTalk) Send(ctx context.Context, m Message) (Receipt, error) {
	r := d.SendGroup(ctx, []Message{m})[0]
	return r.Receipt, r.Err
}

// MaxGroup implements GroupSender.
func (d *DingTalk) MaxGroup() int { return DingTalkMaxGroup }

// SendGroup implements GroupSender: one asyncsend_v2 call for every message (they share
// their content; each names one user), then getsendresult for each user's outcome.
// Every result carries the call's task id as its receipt: a recall takes back the
// whole task.
func (d *DingTalk) SendGroup(ctx context.Context, ms []Message) []GroupResult {
	out := make([]GroupResult, len(ms))
	fail := func(err error) []GroupResult {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	if len(ms) == 0 {
		return out
	}
	if len(ms) > DingTalkMaxGroup {
		return fail(Errorf(Permanent, "", "channels: dingtalk: %d people in one call, at most %d", len(ms), DingTalkMaxGroup))
	}
	users := make([]string, len(ms))
	for i, m := range ms {
		users[i] = m.To
	}
	body, err := json.Marshal(dingtalkSend{AgentID: d.agentID, UserIDList: strings.Join(users, ","), Msg: dingtalkMessage(ms[0])})
	if err != nil {
		return fail(Errorf(Permanent, "", "channels: dingtalk: encoding the message: %v", err))
	}
	reply, err := d.call(ctx, "send", "/topapi/message/corpconversation/asyncsend_v2", ms[0].ID, body)
	if err != nil {
		return fail(err)
	}
	receipt := Receipt{ProviderMessageID: strconv.FormatInt(reply.TaskID, 10)}
	outcomes := d.sendResult(ctx, reply.TaskID)
	for i, m := range ms {
		out[i] = GroupResult{Receipt: receipt, Err: outcomes.of(m.To, reply.TaskID)}
	}
	return out
}

// call posts body to path with a valid token and checks the errcode. A token rejected
// as expired or invalid is replaced and the call made once more: DingTalk refused the
// first before doing anything, so this cannot send twice.
func (d *DingTalk) call(ctx context.Context, step, path, requestID string, body []byte) (dingtalkReply, error) {
	for attempt := 1; ; attempt++ {
		token, err := d.tokens.get(ctx)
		if err != nil {
			return dingtalkReply{}, err
		}
		target := d.baseURL + path + "?access_token=" + url.QueryEscape(token)
		r, err := postJSON(ctx, d.client, "channels: dingtalk: "+step, target, http.Header{"X-Request-Id": {requestID}}, body)
		if err != nil {
			return dingtalkReply{}, err
		}
		reply, err := readDingTalkReply(r, step)
		if err != nil {
			return dingtalkReply{}, err
		}
		code := *reply.ErrCode
		if code == 0 {
			return reply, nil
		}
		action := dingtalkErrorAction(code)
		if action.refreshToken || action.class == Auth {
			d.tokens.drop(token)
		}
		if !action.refreshToken || attempt == 2 {
			return dingtalkReply{}, dingtalkError(step, code, action, reply)
		}
	}
}

// userOutcomes is what getsendresult said of a task's users; a user it does not name
// was delivered (or is still on the way: the task was accepted).
type userOutcomes struct {
	invalid, failed map[string]bool
	forbidden       map[string]string // user id → flow-control code
}

// of returns the error for one user, nil when delivered.
func (u userOutcomes) of(user string, taskID int64) error {
	switch {
	case u.invalid[user]:
		return Errorf(Permanent, "invalid_user", "channels: dingtalk: task %d: user id %q unknown to DingTalk", taskID, user)
	case u.forbidden[user] != "":
		// Held back by DingTalk's flow control (its per-person or per-minute limits, or
		// the same content twice in a day): nothing reached the person.
		return Errorf(RateLimited, u.forbidden[user], "channels: dingtalk: task %d: user %q held back by DingTalk's flow control", taskID, user)
	case u.failed[user]:
		return Errorf(Transient, "failed_user", "channels: dingtalk: task %d: DingTalk failed to deliver to %q", taskID, user)
	}
	return nil
}

// sendResult asks what became of each user of a task. When it cannot be read, every
// user counts as delivered: DingTalk accepted the task, and sending it again could
// reach people twice.
func (d *DingTalk) sendResult(ctx context.Context, taskID int64) userOutcomes {
	body, _ := json.Marshal(map[string]int64{"agent_id": d.agentID, "task_id": taskID})
	reply, err := d.call(ctx, "getsendresult", "/topapi/message/corpconversation/getsendresult", strconv.FormatInt(taskID, 10), body)
	if err != nil || reply.SendResult == nil {
		return userOutcomes{}
	}
	r := reply.SendResult
	u := userOutcomes{invalid: set(r.InvalidUsers), failed: set(r.FailedUsers), forbidden: map[string]string{}}
	for _, user := range r.ForbiddenUsers {
		u.forbidden[user] = "forbidden"
	}
	for _, f := range r.Forbidden {
		if f.Code == "" {
			f.Code = "forbidden"
		}
		u.forbidden[f.UserID] = f.Code
	}
	return u
}

// set makes a membership map of a list.
func set(list []string) map[string]bool {
	out := make(map[string]bool, len(list))
	for _, s := range list {
		out[s] = true
	}
	return out
}

// Recall implements Recaller. DingTalk recalls a whole task, not one person's copy: the
// receipt is the task id of the call that carried m, and recalling it takes the notice
// back from everyone that call reached (up to DingTalkMaxGroup people, who received the
// same content).
func (d *DingTalk) Recall(ctx context.Context, m Message, receipt Receipt) error {
	taskID, err := strconv.ParseInt(receipt.ProviderMessageID, 10, 64)
	if err != nil {
		return Errorf(Permanent, "", "channels: dingtalk: recall: %q is not a DingTalk task id", receipt.ProviderMessageID)
	}
	body, _ := json.Marshal(map[string]int64{"agent_id": d.agentID, "msg_task_id": taskID})
	_, err = d.call(ctx, "recall", "/topapi/message/corpconversation/recall", m.ID, body)
	return err
}

// readDingTalkReply checks the HTTP status and decodes an answer that has an errcode.
func readDingTalkReply(r httpReply, step string) (dingtalkReply, error) {
	prefix := "channels: dingtalk: " + step
	if e := statusError(prefix, r, ""); e != nil {
		return dingtalkReply{}, e
	}
	var reply dingtalkReply
	if err := json.Unmarshal(r.body, &reply); err != nil || reply.ErrCode == nil {
		return dingtalkReply{}, Errorf(Transient, r.httpCode(), "%s: unreadable answer: %s", prefix, excerpt(r.body))
	}
	return reply, nil
}

// dingtalkError builds the error for a non-zero errcode.
func dingtalkError(step string, code int, action codeAction, reply dingtalkReply) *Error {
	detail := excerpt([]byte(reply.ErrMsg))
	if reply.SubCode != "" {
		detail += " (sub_code " + excerpt([]byte(reply.SubCode)) + ")"
	}
	return Errorf(action.class, strconv.Itoa(code), "channels: dingtalk: %s: errcode %d (%s): %s", step, code, action.meaning, detail)
}

// tokenURL is the gettoken URL; it carries the app secret.
func (d *DingTalk) tokenURL() string {
	q := url.Values{"appkey": {d.appKey}, "appsecret": {d.appSecret}}
	return d.baseURL + "/gettoken?" + q.Encode()
}

// requestToken calls gettoken. On success the reply holds the token and its lifetime.
// Whatever the outcome it also returns what DingTalk answered (status 0 when nothing
// came, ErrCode nil when the answer was unreadable), which a connection test reports.
func (d *DingTalk) requestToken(ctx context.Context) (httpReply, dingtalkReply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.tokenURL(), nil)
	if err != nil {
		return httpReply{}, dingtalkReply{}, Errorf(Permanent, "", "channels: dingtalk: gettoken: building the request: %v", unwrapURLError(err))
	}
	r, err := call(d.client, req, "channels: dingtalk: gettoken")
	if err != nil {
		return httpReply{}, dingtalkReply{}, err
	}
	reply, err := readDingTalkReply(r, "gettoken")
	if err != nil {
		return r, dingtalkReply{}, err
	}
	if code := *reply.ErrCode; code != 0 {
		action := dingtalkErrorAction(code)
		if action.refreshToken {
			// Token codes cannot describe gettoken itself: bad credentials.
			action.class = Auth
		}
		return r, reply, dingtalkError("gettoken", code, action, reply)
	}
	if reply.AccessToken == "" || reply.ExpiresIn <= 0 {
		return r, reply, Errorf(Transient, "", "channels: dingtalk: gettoken: answer without a token or expiry")
	}
	return r, reply, nil
}

// dingtalkScopesPath is microapp/visible_scopes, which says who may see an app: the
// connection test's harmless call, made for the account's agent_id.
const dingtalkScopesPath = "/microapp/visible_scopes"

// dingtalkScopes is what visible_scopes answers besides the errcode.
type dingtalkScopes struct {
	ErrCode *int     `json:"errcode"`
	ErrMsg  string   `json:"errmsg"`
	Depts   []int64  `json:"deptVisibleScopes"`
	Users   []string `json:"userVisibleScopes"`
}

// Probe asks DingTalk for an access token, through the same call a send makes when it
// needs one, and then, with that token, who may see the app of the account's agent_id
// (microapp/visible_scopes): a read that sends nothing and shows whether DingTalk knows
// the agent_id. The token is the test's own; the adapter's cache is not touched.
func (d *DingTalk) Probe(ctx context.Context) ProbeResult {
	r, reply, err := d.requestToken(ctx)
	res := tokenProbe("dingtalk", "GET "+redactURL(d.tokenURL()), r,
		tokenAnswer{codeName: "errcode", code: reply.ErrCode, msg: reply.ErrMsg, lifetime: fmt.Sprintf("expires_in %d", reply.ExpiresIn)},
		err, note("channels.probe.dingtalk_ok", "Seconds", reply.ExpiresIn, "AgentID", d.agentID))
	if !res.OK {
		return res
	}
	target := d.baseURL + dingtalkScopesPath + "?access_token=" + url.QueryEscape(reply.AccessToken)
	body, _ := json.Marshal(map[string]int64{"agentId": d.agentID})
	action := verbatim("POST " + redactURL(target) + " agentId=" + strconv.FormatInt(d.agentID, 10))
	r, err = postJSON(ctx, d.client, "channels: dingtalk: visible_scopes", target, nil, body)
	if err != nil {
		res.OK = false
		res.Steps = append(res.Steps, exchange(action, answerNote(r)), failedWith(err))
		res.Summary = note("channels.probe.dingtalk_unreachable", "Problem", noAnswer(err))
		return res
	}
	var scopes dingtalkScopes
	answer := answerNote(r).Text
	readable := r.status == http.StatusOK && json.Unmarshal(r.body, &scopes) == nil && scopes.ErrCode != nil
	if readable {
		answer += fmt.Sprintf(", errcode %d (%s)", *scopes.ErrCode, excerpt([]byte(scopes.ErrMsg)))
		if *scopes.ErrCode == 0 {
			// Work notices reach only the people who can see the app.
			answer += fmt.Sprintf(", deptVisibleScopes %d, userVisibleScopes %d", len(scopes.Depts), len(scopes.Users))
		}
	}
	res.Steps = append(res.Steps, exchange(action, verbatim(answer)))
	switch {
	case !readable:
		res.OK = false
		res.Summary = note("channels.probe.dingtalk_agent_unchecked", "AgentID", d.agentID, "Answer", answer)
	case *scopes.ErrCode != 0:
		res.OK = false
		res.Summary = note("channels.probe.dingtalk_agent_refused", "AgentID", d.agentID, "Code", *scopes.ErrCode,
			"Message", excerpt([]byte(scopes.ErrMsg)))
	default:
		res.Summary = note("channels.probe.dingtalk_ok", "Seconds", reply.ExpiresIn, "AgentID", d.agentID)
	}
	return res
}
