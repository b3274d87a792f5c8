package channels

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WeCom sends WeCom (企业微信) application messages. It fetches an access token with
// the corp secret, keeps it until shortly before it expires, and shares it between
// concurrent sends; it is safe for concurrent use, and the registry keeps one instance
// per account so the token outlives single sends.
type WeCom struct {
	baseURL string
	corpID  string
	secret  string
	agentID int64
	client  *http.Client
	now     func() time.Time
	tokens  *tokenCache
}

// DefaultWeComBaseURL is WeCom's API host.
const DefaultWeComBaseURL = "https://qyapi.weixin.qq.com"

// WeComMaxGroup is how many people one WeCom call carries: message/send takes up to
// 1,000 user ids in touser ("a|b|c") and names in its answer those it could not reach
// (invaliduser, unlicenseduser), so each person's outcome is known from the call itself.
const WeComMaxGroup = 1000

// NewWeCom returns the adapter for a WeCom account's config (keys corp_id, secret,
// agent_id, base_url).
func NewWeCom(cfg map[string]string, allowPrivate bool) (*WeCom, error) {
	if err := ValidateConfig("wecom", cfg, allowPrivate); err != nil {
		return nil, fmt.Errorf("channels: wecom: %w", err)
	}
	return newWeCom(cfg, allowPrivate), nil
}

// newWeCom is NewWeCom for a config already validated.
func newWeCom(cfg map[string]string, allowPrivate bool) *WeCom {
	agentID, _ := strconv.ParseInt(cfg["agent_id"], 10, 64) // checked by ValidateConfig
	base := strings.TrimSpace(cfg["base_url"])
	if base == "" {
		base = DefaultWeComBaseURL
	}
	w := &WeCom{
		baseURL: strings.TrimRight(base, "/"),
		corpID:  cfg["corp_id"],
		secret:  cfg["secret"],
		agentID: agentID,
		client:  NewHTTPClient(allowPrivate, backstopTimeout),
		now:     time.Now,
	}
	// The cache reads w.now at each call, so a test may swap the clock after this.
	w.tokens = &tokenCache{prefix: "channels: wecom", now: func() time.Time { return w.now() },
		fetch: func(ctx context.Context) (string, time.Duration, error) {
			_, reply, err := w.requestToken(ctx)
			return reply.AccessToken, time.Duration(reply.ExpiresIn) * time.Second, err
		}}
	return w
}

// wecomErrors maps WeCom's errcodes to error classes. Codes not listed fall back to
// wecomErrorAction's ranges.
var wecomErrors = map[int]codeAction{
	-1: {Transient, false, "system busy"},

	40014: {Auth, true, "invalid access_token"},
	41001: {Auth, true, "access_token missing"},
	42001: {Auth, true, "access_token expired"},

	40001: {Auth, false, "invalid secret"},
	40013: {Auth, false, "invalid corp_id"},
	41002: {Auth, false, "corp_id missing"},
	41004: {Auth, false, "secret missing"},
	48002: {Auth, false, "API forbidden for this application"},
	60020: {Auth, false, "server IP not in the application's trusted IPs"},

	45009: {RateLimited, false, "API frequency limit"},
	45011: {RateLimited, false, "API minute frequency limit"},
	45033: {RateLimited, false, "too many concurrent calls"},

	40003: {Permanent, false, "invalid userid"},
	40008: {Permanent, false, "invalid message type"},
	40035: {Permanent, false, "invalid parameter"},
	40056: {Permanent, false, "invalid agent_id"},
	40058: {Permanent, false, "invalid parameter"},
	44004: {Permanent, false, "empty content"},
	45002: {Permanent, false, "content too long"},
	60011: {Permanent, false, "no permission for this recipient"},
	60111: {Permanent, false, "userid not found"},
	81013: {Permanent, false, "recipient invalid or outside the application's visible range"},
	82001: {Permanent, false, "no valid recipient"},

	// message/recall's refusals (as the simulator answers them): the message was
	// recalled already, or sent more than 24 hours ago.
	301084: {Permanent, false, "message recalled already"},
	301085: {Permanent, false, "recall window passed"},
}

// wecomErrorAction returns what a non-zero errcode means.
func wecomErrorAction(code int) codeAction {
	if a, ok := wecomErrors[code]; ok {
		return a
	}
	// WeCom's 4xxxx, 6xxxx and 8xxxx codes are request, contact and message errors
	// that the same request will hit again.
	switch code / 10000 {
	case 4, 6, 8:
		return codeAction{class: Permanent, meaning: "request refused"}
	}
	return codeAction{class: Transient, meaning: "unexpected error"}
}

// wecomReply is the part of every WeCom answer this adapter reads.
type wecomReply struct {
	ErrCode     *int   `json:"errcode"`
	ErrMsg      string `json:"errmsg"`
	AccessToken string `json:"access_token"`
	ExpiresIn   int64  `json:"expires_in"`
	InvalidUser string `json:"invaliduser"`
	// UnlicensedUser lists the people of the call without a licence for the
	// application's messages (pipe-separated, as InvalidUser).
	UnlicensedUser string `json:"unlicenseduser"`
	MsgID          string `json:"msgid"`
}

// wecomContent is the body of a text or markdown message.
type wecomContent struct {
	Content string `json:"content"`
}

// wecomMessage is the body of message/send.
type wecomMessage struct {
	ToUser       string        `json:"touser"`
	MsgType      string        `json:"msgtype"`
	AgentID      int64         `json:"agentid"`
	Text         *wecomContent `json:"text,omitempty"`
	Markdown     *wecomContent `json:"markdown,omitempty"`
	TemplateCard *wecomCard    `json:"template_card,omitempty"`
}

// wecomCard is a template card of type button_interaction: a title, the text, and
// buttons whose clicks WeCom reports to the application's callback with the card's
// task_id and the button's key.
type wecomCard struct {
	CardType     string            `json:"card_type"`
	MainTitle    wecomCardTitle    `json:"main_title"`
	SubTitleText string            `json:"sub_title_text,omitempty"`
	TaskID       string            `json:"task_id"`
	ButtonList   []wecomCardButton `json:"button_list"`
}

type wecomCardTitle struct {
	Title string `json:"title"`
}

type wecomCardButton struct {
	Text  string `json:"text"`
	Style int    `json:"style"`
	Key   string `json:"key"`
}

// wecomCardTitleMax is how much of a card's title WeCom shows (it advises at most 36
// characters); the whole text follows below it.
const wecomCardTitleMax = 36

// Send implements Sender: a call of one. A group post goes to the application's group
// chat whose chatid is m.To (appchat/send), with the people it @s named in the text (an
// application's group chat has no mention list; markdown @s by <@userid>).
func (w *WeCom) Send(ctx context.Context, m Message) (Receipt, error) {
	r := w.SendGroup(ctx, []Message{m})[0]
	return r.Receipt, r.Err
}

// MaxGroup implements GroupSender.
func (w *WeCom) MaxGroup() int { return WeComMaxGroup }

// SendGroup implements GroupSender: one message/send for the messages that share their
// content, with every person in touser. Those WeCom names in invaliduser or
// unlicenseduser fail for good; the others are sent, each with the call's msgid as its
// receipt (a recall takes the call back from all of them). An error of the whole call
// is every message's. Messages that cannot share a call are sent alone: a group post
// (appchat/send) and an alert card (its task_id is the message's id). A person named
// twice waits for the next call, so that each message reaches its person.
func (w *WeCom) SendGroup(ctx context.Context, ms []Message) []GroupResult {
	out := make([]GroupResult, len(ms))
	var calls [][]int // indexes into ms, per call
	var people []map[string]bool
	for i, m := range ms {
		if m.Group || len(m.Actions) > 0 {
			out[i].Receipt, out[i].Err = w.sendAlone(ctx, m)
			continue
		}
		c := slices.IndexFunc(people, func(p map[string]bool) bool { return !p[m.To] && len(p) < WeComMaxGroup })
		if c < 0 {
			c = len(calls)
			calls, people = append(calls, nil), append(people, map[string]bool{})
		}
		calls[c], people[c][m.To] = append(calls[c], i), true
	}
	for _, idx := range calls {
		w.sendTogether(ctx, ms, idx, out)
	}
	return out
}

// sendAlone sends a message that has a call of its own: a group post or an alert card.
func (w *WeCom) sendAlone(ctx context.Context, m Message) (Receipt, error) {
	path := "/cgi-bin/message/send"
	var body any = wecomBody(m, w.agentID)
	if m.Group {
		path, body = "/cgi-bin/appchat/send", wecomChatBody(m)
	}
	reply, err := w.send(ctx, path, m.ID, body)
	if err != nil {
		return Receipt{}, err
	}
	if !m.Group {
		if err := wecomUnreached(reply, m.To); err != nil {
			return Receipt{}, err
		}
	}
	return Receipt{ProviderMessageID: reply.MsgID}, nil
}

// sendTogether makes one message/send for the messages of ms at idx (people all
// different, content shared) and sets their results in out.
func (w *WeCom) sendTogether(ctx context.Context, ms []Message, idx []int, out []GroupResult) {
	users := make([]string, len(idx))
	for k, i := range idx {
		users[k] = ms[i].To
	}
	body := wecomBody(ms[idx[0]], w.agentID)
	body.ToUser = strings.Join(users, "|")
	reply, err := w.send(ctx, "/cgi-bin/message/send", ms[idx[0]].ID, body)
	for _, i := range idx {
		if out[i].Err = err; err == nil {
			if out[i].Err = wecomUnreached(reply, ms[i].To); out[i].Err == nil {
				out[i].Receipt = Receipt{ProviderMessageID: reply.MsgID}
			}
		}
	}
}

// send posts body to path with a valid token and returns WeCom's answer to a call it
// accepted (errcode 0).
func (w *WeCom) send(ctx context.Context, path, requestID string, body any) (wecomReply, error) {
	encoded, err := json.Marshal(body)
	if err != nil {
		return wecomReply{}, Errorf(Permanent, "", "channels: wecom: encoding the message: %v", err)
	}
	var reply wecomReply
	err = w.withToken(ctx, func(token string) (codeAction, error) {
		var action codeAction
		reply, action, err = w.post(ctx, token, path, requestID, encoded)
		return action, err
	})
	return reply, err
}

// wecomUnreached is the error of a person an accepted call did not reach: WeCom names
// those it does not know in invaliduser and those without a licence in
// unlicenseduser. Nil when the person is in neither.
func wecomUnreached(reply wecomReply, user string) error {
	switch {
	case pipeListHas(reply.InvalidUser, user):
		return Errorf(Permanent, "invaliduser", "channels: wecom: send: recipient %q unknown to WeCom", user)
	case pipeListHas(reply.UnlicensedUser, user):
		return Errorf(Permanent, "unlicenseduser", "channels: wecom: send: recipient %q has no licence for the application", user)
	}
	return nil
}

// pipeListHas reports whether WeCom's pipe-separated list names user.
func pipeListHas(list, user string) bool {
	for u := range strings.SplitSeq(list, "|") {
		if strings.TrimSpace(u) == user {
			return true
		}
	}
	return false
}

// withToken runs one call with an access token. A token rejected as expired or invalid
// is replaced and the call tried once more: WeCom refused the first try before acting
// on it, so this cannot duplicate a send or a recall.
func (w *WeCom) withToken(ctx context.Context, call func(token string) (codeAction, error)) error {
	for attempt := 1; ; attempt++ {
		token, err := w.accessToken(ctx)
		if err != nil {
			return err
		}
		action, err := call(token)
		if err == nil {
			return nil
		}
		if action.refreshToken || action.class == Auth {
			w.dropToken(token)
		}
		if !action.refreshToken || attempt == 2 {
			return err
		}
	}
}

// Recall implements Recaller: message/recall takes back the message WeCom accepted as
// receipt.ProviderMessageID, within 24 hours of sending, from everyone that call
// reached (up to WeComMaxGroup people, who received the same content). Its errors are
// classified as a send's are.
func (w *WeCom) Recall(ctx context.Context, m Message, receipt Receipt) error {
	if receipt.ProviderMessageID == "" {
		return Errorf(Permanent, "", "channels: wecom: recall: the message has no WeCom msgid")
	}
	body, err := json.Marshal(map[string]string{"msgid": receipt.ProviderMessageID})
	if err != nil {
		return Errorf(Permanent, "", "channels: wecom: recall: encoding the request: %v", err)
	}
	return w.withToken(ctx, func(token string) (codeAction, error) {
		target := w.baseURL + "/cgi-bin/message/recall?access_token=" + url.QueryEscape(token)
		r, err := postJSON(ctx, w.client, "channels: wecom: recall", target, http.Header{"X-Request-Id": {m.ID}}, body)
		if err != nil {
			return codeAction{}, err
		}
		reply, err := w.readReply(r, "recall")
		if err != nil {
			return codeAction{}, err
		}
		if code := *reply.ErrCode; code != 0 {
			action := wecomErrorAction(code)
			return action, wecomError("recall", code, action, reply.ErrMsg, r)
		}
		return codeAction{}, nil
	})
}

// wecomBody builds the message/send body. Text messages have no title field, so a
// title leads the text; markdown gets it as a heading (see wecomText). Intake keeps the
// content within WeCom's cap, and counts the title with it (CountedContent); text that
// still comes out past the cap (a message queued before that check) is cut here, on a
// character boundary with an ellipsis, rather than by WeCom, which cuts at a byte and
// can leave half a Chinese character.
func wecomBody(m Message, agentID int64) wecomMessage {
	msg := wecomMessage{ToUser: m.To, AgentID: agentID}
	if len(m.Actions) > 0 {
		msg.MsgType, msg.TemplateCard = "template_card", wecomCardOf(m)
		return msg
	}
	content := &wecomContent{Content: Cap("wecom").Truncate(wecomText(m))}
	if m.MsgType == "markdown" {
		msg.MsgType, msg.Markdown = "markdown", content
	} else {
		msg.MsgType, msg.Text = "text", content
	}
	return msg
}

// wecomChat is the body of appchat/send.
type wecomChat struct {
	ChatID   string        `json:"chatid"`
	MsgType  string        `json:"msgtype"`
	Text     *wecomContent `json:"text,omitempty"`
	Markdown *wecomContent `json:"markdown,omitempty"`
}

// wecomChatBody builds the appchat/send body of a group post: the text as for one
// person, the mentions after it, within WeCom's cap.
func wecomChatBody(m Message) wecomChat {
	mentions := mentionsText("wecom", m)
	room := Cap("wecom")
	room.Max -= room.Len(mentions)
	content := &wecomContent{Content: trimWithNote(room, wecomText(m)) + mentions}
	if m.MsgType == "markdown" {
		return wecomChat{ChatID: m.To, MsgType: "markdown", Markdown: content}
	}
	return wecomChat{ChatID: m.To, MsgType: "text", Text: content}
}

// wecomCardOf is the button card of a message with actions. The message's id is the
// task id (WeCom allows letters, digits and "_-@", at most 128 bytes, never reused by
// the application), so a click names the message it belongs to. The title is the
// message's, else its first line.
func wecomCardOf(m Message) *wecomCard {
	title, text := m.Title, m.Content
	if title == "" {
		title, text, _ = strings.Cut(m.Content, "\n")
	}
	card := &wecomCard{CardType: "button_interaction", TaskID: m.ID,
		MainTitle:    wecomCardTitle{Title: ContentCap{Max: wecomCardTitleMax, Unit: Characters}.Truncate(title)},
		SubTitleText: Cap("wecom").Truncate(strings.TrimSpace(text))}
	for i, a := range m.Actions {
		// Style 1 is WeCom's prominent button, 2 a plain one.
		card.ButtonList = append(card.ButtonList, wecomCardButton{Text: a.Label, Style: min(i+1, 2), Key: a.Key})
	}
	return card
}

// wecomText is the text WeCom receives for a message: the title, if any, leads it.
func wecomText(m Message) string {
	if m.Title == "" {
		return m.Content
	}
	if m.MsgType == "markdown" {
		return "# " + m.Title + "\n\n" + m.Content
	}
	return m.Title + "\n\n" + m.Content
}

// post makes one send call and returns WeCom's answer when it accepted it. On failure
// it also returns what the answer meant, so a caller can tell a stale token from other
// errors.
func (w *WeCom) post(ctx context.Context, token, path, requestID string, body []byte) (wecomReply, codeAction, error) {
	target := w.baseURL + path + "?access_token=" + url.QueryEscape(token)
	r, err := postJSON(ctx, w.client, "channels: wecom: send", target, http.Header{"X-Request-Id": {requestID}}, body)
	if err != nil {
		return wecomReply{}, codeAction{}, err
	}
	reply, err := w.readReply(r, "send")
	if err != nil {
		return wecomReply{}, codeAction{}, err
	}
	if code := *reply.ErrCode; code != 0 {
		action := wecomErrorAction(code)
		return wecomReply{}, action, wecomError("send", code, action, reply.ErrMsg, r)
	}
	return reply, codeAction{}, nil
}

// readReply checks the HTTP status and decodes a WeCom answer that has an errcode.
func (w *WeCom) readReply(r httpReply, step string) (wecomReply, error) {
	prefix := "channels: wecom: " + step
	if e := statusError(prefix, r, ""); e != nil {
		return wecomReply{}, e
	}
	var reply wecomReply
	if err := json.Unmarshal(r.body, &reply); err != nil || reply.ErrCode == nil {
		return wecomReply{}, Errorf(Transient, r.httpCode(), "%s: unreadable answer: %s", prefix, excerpt(r.body))
	}
	return reply, nil
}

// wecomError builds the error for a non-zero errcode.
func wecomError(step string, code int, action codeAction, errmsg string, r httpReply) *Error {
	e := Errorf(action.class, strconv.Itoa(code), "channels: wecom: %s: errcode %d (%s): %s",
		step, code, action.meaning, excerpt([]byte(errmsg)))
	if action.class == RateLimited {
		e.RetryAfter = retryAfter(r.header, time.Now())
	}
	return e
}

// accessToken returns a valid token, fetching one if needed (see tokenCache).
func (w *WeCom) accessToken(ctx context.Context) (string, error) { return w.tokens.get(ctx) }

// tokenURL is the gettoken URL; it carries the corp secret.
func (w *WeCom) tokenURL() string {
	q := url.Values{"corpid": {w.corpID}, "corpsecret": {w.secret}}
	return w.baseURL + "/cgi-bin/gettoken?" + q.Encode()
}

// requestToken calls gettoken. On success the reply holds the token and its lifetime.
// Whatever the outcome it also returns what WeCom answered (status 0 when nothing came,
// ErrCode nil when the answer was unreadable), which a connection test reports.
func (w *WeCom) requestToken(ctx context.Context) (httpReply, wecomReply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.tokenURL(), nil)
	if err != nil {
		return httpReply{}, wecomReply{}, Errorf(Permanent, "", "channels: wecom: gettoken: building the request: %v", unwrapURLError(err))
	}
	r, err := call(w.client, req, "channels: wecom: gettoken")
	if err != nil {
		return httpReply{}, wecomReply{}, err
	}
	reply, err := w.readReply(r, "gettoken")
	if err != nil {
		return r, wecomReply{}, err
	}
	if code := *reply.ErrCode; code != 0 {
		action := wecomErrorAction(code)
		if action.refreshToken {
			// Token codes cannot describe gettoken itself; treat them as bad credentials.
			action.class = Auth
		}
		return r, reply, wecomError("gettoken", code, action, reply.ErrMsg, r)
	}
	if reply.AccessToken == "" || reply.ExpiresIn <= 0 {
		return r, reply, Errorf(Transient, "", "channels: wecom: gettoken: answer without a token or expiry")
	}
	return r, reply, nil
}

// dropToken forgets token if it is still the cached one.
func (w *WeCom) dropToken(token string) { w.tokens.drop(token) }

// Probe asks WeCom for an access token, through the same call a send makes when it
// needs one, and reports what WeCom said. agent_id is not part of that call.
func (w *WeCom) Probe(ctx context.Context) ProbeResult {
	r, reply, err := w.requestToken(ctx)
	return tokenProbe("wecom", "GET "+redactURL(w.tokenURL()), r,
		tokenAnswer{codeName: "errcode", code: reply.ErrCode, msg: reply.ErrMsg, lifetime: fmt.Sprintf("expires_in %d", reply.ExpiresIn)},
		err, note("channels.probe.wecom_ok", "Seconds", reply.ExpiresIn, "AgentID", w.agentID))
}
