package simulator

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"
)

// wecomReply is WeCom's error answer. WeCom answers HTTP 200 even for errors, with a
// non-zero errcode.
type wecomReply struct {
	ErrCode int    `json:"errcode"`
	ErrMsg  string `json:"errmsg"`
}

// wecomTokenReply is the successful answer of gettoken.
type wecomTokenReply struct {
	wecomReply
	AccessToken string `json:"access_token"`
	ExpiresIn   int64  `json:"expires_in"`
}

// wecomSendReply is the successful answer of message/send.
type wecomSendReply struct {
	wecomReply
	InvalidUser    string `json:"invaliduser,omitempty"`
	UnlicensedUser string `json:"unlicenseduser,omitempty"`
	MsgID          string `json:"msgid,omitempty"`
}

// WeComDirectory is what the simulated WeCom knows of a corp's people: the user ids it
// does not know (message/send names them in invaliduser) and those without a licence
// for application messages (unlicenseduser). Anyone else is a licensed member.
type WeComDirectory struct {
	Unknown    []string `json:"unknown"`
	Unlicensed []string `json:"unlicensed"`
}

// SetWeComDirectory replaces the WeCom directory.
func (s *Simulator) SetWeComDirectory(d WeComDirectory) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wecomUnknown, s.wecomUnlicensed = setOf(d.Unknown), setOf(d.Unlicensed)
}

// setOf makes a membership map of a list.
func setOf(list []string) map[string]bool {
	out := make(map[string]bool, len(list))
	for _, v := range list {
		out[v] = true
	}
	return out
}

// handleWeComDirectory serves PUT /_sim/wecom/directory: the WeCom directory, replaced
// whole (see WeComDirectory). Unknown fields are refused.
func (s *Simulator) handleWeComDirectory(w http.ResponseWriter, r *http.Request) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	var d WeComDirectory
	if err := dec.Decode(&d); err != nil {
		writeJSON(w, http.StatusBadRequest, controlError{Error: "invalid directory: " + err.Error()})
		return
	}
	s.SetWeComDirectory(d)
	w.WriteHeader(http.StatusNoContent)
}

// wecomReach splits a call's people into those WeCom delivers to, those it does not
// know and those without a licence.
func (s *Simulator) wecomReach(users []string) (reached, unknown, unlicensed []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range users {
		switch {
		case s.wecomUnknown[u]:
			unknown = append(unknown, u)
		case s.wecomUnlicensed[u]:
			unlicensed = append(unlicensed, u)
		default:
			reached = append(reached, u)
		}
	}
	return reached, unknown, unlicensed
}

// WeCom error codes, as the real API uses them.
const (
	wecomOK                 = 0
	wecomInvalidCredential  = 40001
	wecomInvalidMsgType     = 40008
	wecomInvalidToken       = 40014
	wecomInvalidParameter   = 40035
	wecomInvalidAgentID     = 40056
	wecomTokenMissing       = 41001
	wecomTokenExpired       = 42001
	wecomEmptyContent       = 44004
	wecomFreqOutOfLimit     = 45009
	wecomAllReceiversFailed = 81013
	// Recall's refusals of a message recalled already and of one sent more than 24
	// hours ago (an unknown msgid is an invalid parameter). The numbers are the
	// simulator's; the adapter maps them to permanent failures.
	wecomMsgRecalled   = 301084
	wecomRecallExpired = 301085
)

// wecomMemberLimits are WeCom's documented limits for application messages to one
// member: 30 a minute and 1,000 an hour. WeCom answers the excess with success and
// delivers nothing.
var wecomMemberLimits = []window{{30, time.Minute}, {1000, time.Hour}}

// handleWeComToken serves GET /wecom/cgi-bin/gettoken. Token requests are not fault
// draws: the rates apply to messages, and a sender fetches a token only now and then.
func (s *Simulator) handleWeComToken(w http.ResponseWriter, r *http.Request) {
	faults := s.Faults()
	if !sleep(r.Context(), time.Duration(faults.Latency)) {
		abortWithoutAnswer()
	}
	q := r.URL.Query()
	if q.Get("corpid") == "" || q.Get("corpsecret") == "" || faults.AuthFail {
		writeJSON(w, http.StatusOK, wecomReply{ErrCode: wecomInvalidCredential, ErrMsg: "invalid credential"})
		return
	}
	ttl := s.opts.WeComTokenTTL
	writeJSON(w, http.StatusOK, wecomTokenReply{
		wecomReply:  wecomReply{ErrCode: wecomOK, ErrMsg: "ok"},
		AccessToken: s.tokens.issue(s.now(), ttl),
		// Rounded up so a sub-second test TTL does not read as "no expiry given".
		ExpiresIn: int64((ttl + time.Second - 1) / time.Second),
	})
}

// wecomTokenValid checks the request's access_token, answering with WeCom's error
// through fail when it is missing, unknown or expired.
func (s *Simulator) wecomTokenValid(r *http.Request, now time.Time, fail func(code int, msg string)) bool {
	token := r.URL.Query().Get("access_token")
	if token == "" {
		fail(wecomTokenMissing, "access_token missing")
		return false
	}
	switch s.tokens.check(token, now) {
	case tokenUnknown:
		fail(wecomInvalidToken, "invalid access_token")
		return false
	case tokenExpired:
		fail(wecomTokenExpired, "access_token expired")
		return false
	}
	return true
}

// wecomMessage is the body of message/send for the text and markdown types.
type wecomMessage struct {
	ToUser       string        `json:"touser"`
	MsgType      string        `json:"msgtype"`
	AgentID      int64         `json:"agentid"`
	Text         *wecomContent `json:"text"`
	Markdown     *wecomContent `json:"markdown"`
	TemplateCard *wecomCard    `json:"template_card"`
}

type wecomContent struct {
	Content string `json:"content"`
}

// content returns the text of the message's own type, or false for an unsupported type.
func (m wecomMessage) content() (string, bool) {
	var c *wecomContent
	switch m.MsgType {
	case "text":
		c = m.Text
	case "markdown":
		c = m.Markdown
	case "template_card":
		if m.TemplateCard == nil {
			return "", true
		}
		return m.TemplateCard.text(), true
	default:
		return "", false
	}
	if c == nil {
		return "", true
	}
	return c.Content, true
}

// handleWeComSend serves POST /wecom/cgi-bin/message/send.
func (s *Simulator) handleWeComSend(w http.ResponseWriter, r *http.Request) {
	received := s.now()
	fail := func(code int, msg string) {
		writeJSON(w, http.StatusOK, wecomReply{ErrCode: code, ErrMsg: msg})
	}
	if !s.wecomTokenValid(r, received, fail) {
		return
	}
	var msg wecomMessage
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&msg); err != nil {
		fail(wecomInvalidParameter, "invalid parameter: "+err.Error())
		return
	}
	content, ok := msg.content()
	switch {
	case !ok:
		fail(wecomInvalidMsgType, "invalid message type")
		return
	case content == "":
		fail(wecomEmptyContent, "empty content")
		return
	case msg.AgentID == 0:
		fail(wecomInvalidAgentID, "invalid agentid")
		return
	}
	var card *Card
	if msg.TemplateCard != nil && msg.MsgType == "template_card" {
		if problem := s.checkCard(msg.TemplateCard); problem != "" {
			fail(wecomInvalidParameter, "invalid parameter: "+problem)
			return
		}
		card = msg.TemplateCard.recorded()
	}
	var users []string
	for u := range strings.SplitSeq(msg.ToUser, "|") {
		if u = strings.TrimSpace(u); u != "" {
			users = append(users, u)
		}
	}
	if len(users) == 0 {
		fail(wecomInvalidParameter, "invalid parameter: touser is empty")
		return
	}

	v := s.decide()
	waitLatency(r, v)
	requestID := r.Header.Get("X-Request-Id")
	msgID := s.newMsgID()
	users, unknown, unlicensed := s.wecomReach(users)
	deliveries := make([]Delivery, len(users))
	for i, u := range users {
		deliveries[i] = Delivery{
			Platform:      "wecom",
			To:            u,
			RequestID:     requestID,
			Content:       content,
			ReceivedAtMs:  received.UnixMilli(),
			ProviderMsgID: msgID,
			Card:          card,
		}
	}
	reply := wecomSendReply{wecomReply: wecomReply{ErrCode: wecomOK, ErrMsg: "ok"}, MsgID: msgID,
		InvalidUser: strings.Join(unknown, "|"), UnlicensedUser: strings.Join(unlicensed, "|")}
	switch {
	case v.outcome == outcomeAuth:
		fail(wecomInvalidToken, "invalid access_token")
	case v.outcome == outcomeFail:
		http.Error(w, "internal error", http.StatusInternalServerError)
	case v.outcome == outcomeThrottle:
		fail(wecomFreqOutOfLimit, "api freq out of limit")
	case v.outcome == outcomeReject:
		fail(wecomAllReceiversFailed, "user & party & tag all invalid")
	case v.outcome == outcomeTimeout:
		s.holdThenAbort(r)
	case len(users) == 0:
		// Nobody left to deliver to: WeCom fails the whole call, naming them.
		reply.wecomReply, reply.MsgID = wecomReply{ErrCode: wecomAllReceiversFailed, ErrMsg: "user & party & tag all invalid"}, ""
		writeJSON(w, http.StatusOK, reply)
	case v.outcome == outcomeAcceptThenTimeout:
		s.deliverWeCom(deliveries, received)
		s.holdThenAbort(r)
	default:
		s.deliverWeCom(deliveries, received)
		writeJSON(w, http.StatusOK, reply)
	}
}

// wecomRecallWindow is how long after sending WeCom lets an application message be
// recalled.
const wecomRecallWindow = 24 * time.Hour

// handleWeComRecall serves POST /wecom/cgi-bin/message/recall {"msgid"}: the message
// that send answered with msgid is taken back, within 24 hours of sending. Recalls are
// not fault draws but for auth-fail: they are rare, and a test of them wants them.
func (s *Simulator) handleWeComRecall(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	fail := func(code int, msg string) {
		writeJSON(w, http.StatusOK, wecomReply{ErrCode: code, ErrMsg: msg})
	}
	if !s.wecomTokenValid(r, now, fail) {
		return
	}
	if s.Faults().AuthFail {
		fail(wecomInvalidToken, "invalid access_token")
		return
	}
	var body struct {
		MsgID string `json:"msgid"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&body); err != nil || body.MsgID == "" {
		fail(wecomInvalidParameter, "invalid parameter: msgid")
		return
	}
	found, recalled, receivedAtMs := s.recallable("wecom", body.MsgID)
	switch {
	case !found:
		fail(wecomInvalidParameter, "invalid parameter: unknown msgid")
	case recalled:
		fail(wecomMsgRecalled, "message already recalled")
	case now.Sub(time.UnixMilli(receivedAtMs)) > wecomRecallWindow:
		fail(wecomRecallExpired, "message can only be recalled within 24 hours")
	default:
		s.markRecalled("wecom", body.MsgID)
		writeJSON(w, http.StatusOK, wecomReply{ErrCode: wecomOK, ErrMsg: "ok"})
	}
}

// deliverWeCom records the deliveries of members within their limits and drops the
// others silently, as WeCom does.
func (s *Simulator) deliverWeCom(deliveries []Delivery, now time.Time) {
	kept := deliveries[:0]
	for _, d := range deliveries {
		if ok, _ := s.wecomMembers.admit(d.To, now); ok {
			kept = append(kept, d)
		}
	}
	if dropped := len(deliveries) - len(kept); dropped > 0 {
		s.dropSilently("wecom", dropped)
	}
	s.record(kept...)
}

// tokenStore remembers issued WeCom access tokens with their expiry.
type tokenStore struct {
	mu      sync.Mutex
	expires map[string]time.Time
}

func newTokenStore() *tokenStore {
	return &tokenStore{expires: map[string]time.Time{}}
}

// forgetExpiredAfter is how long an expired token is still recognised, so a sender using
// it hears "expired" (and refreshes) rather than "invalid".
const forgetExpiredAfter = 24 * time.Hour

// issue creates a token valid for ttl from now.
func (ts *tokenStore) issue(now time.Time, ttl time.Duration) string {
	token := rand.Text()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for t, exp := range ts.expires {
		if now.Sub(exp) > forgetExpiredAfter {
			delete(ts.expires, t)
		}
	}
	ts.expires[token] = now.Add(ttl)
	return token
}

// tokenState is what the store knows about a presented token.
type tokenState int

const (
	tokenValid tokenState = iota
	tokenUnknown
	tokenExpired
)

// check reports whether token is valid at now.
func (ts *tokenStore) check(token string, now time.Time) tokenState {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	exp, ok := ts.expires[token]
	switch {
	case !ok:
		return tokenUnknown
	case !now.Before(exp):
		return tokenExpired
	}
	return tokenValid
}

// handleWeComAppChat serves POST /wecom/cgi-bin/appchat/send {"chatid","msgtype",…}:
// a post to an application's group chat, recorded with the chat id as its group and
// the people its markdown @s (<@userid>). A text post names people in words only.
func (s *Simulator) handleWeComAppChat(w http.ResponseWriter, r *http.Request) {
	received := s.now()
	fail := func(code int, msg string) {
		writeJSON(w, http.StatusOK, wecomReply{ErrCode: code, ErrMsg: msg})
	}
	if !s.wecomTokenValid(r, received, fail) {
		return
	}
	var msg struct {
		ChatID string `json:"chatid"`
		wecomMessage
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&msg); err != nil {
		fail(wecomInvalidParameter, "invalid parameter: "+err.Error())
		return
	}
	content, ok := msg.content()
	switch {
	case !ok || msg.MsgType == "template_card":
		fail(wecomInvalidMsgType, "invalid message type")
		return
	case content == "":
		fail(wecomEmptyContent, "empty content")
		return
	case msg.ChatID == "":
		fail(wecomInvalidParameter, "invalid chatid")
		return
	}
	var mentions []string
	if msg.MsgType == "markdown" {
		for _, m := range wecomAt.FindAllStringSubmatch(content, -1) {
			mentions = append(mentions, m[1])
		}
	}
	v := s.decide()
	waitLatency(r, v)
	d := Delivery{Platform: "wecom", To: msg.ChatID, Group: msg.ChatID, Mentions: mentions, RequestID: r.Header.Get("X-Request-Id"),
		Content: content, ReceivedAtMs: received.UnixMilli()}
	answerDraw(s, w, r, v, drawAnswers{deliver: func() { s.record(d) }, ok: func() { fail(wecomOK, "ok") },
		auth:     func() { fail(wecomInvalidToken, "invalid access_token") },
		throttle: func() { fail(wecomFreqOutOfLimit, "api freq out of limit") },
		reject:   func() { fail(wecomInvalidParameter, "invalid chatid") }})
}
