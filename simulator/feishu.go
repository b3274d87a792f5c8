package simulator

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Feishu's documented limits for sending messages (POST /open-apis/im/v1/messages):
// 5 a second to one user, and 50 a second and 1,000 a minute for the application.
var (
	feishuUserLimits = []window{{5, time.Second}}
	feishuAppLimits  = []window{{50, time.Second}, {1000, time.Minute}}
)

// Feishu answers, as the real API gives them.
const (
	feishuOK                = 0
	feishuAppSecretInvalid  = 10014
	feishuTokenMissing      = 99991661
	feishuTokenInvalid      = 99991663
	feishuRateLimited       = 99991400
	feishuInvalidParam      = 230001
	feishuRecallExpired     = 230009
	feishuAlreadyRecalled   = 230011
	feishuUserNotAvailable  = 230013
	defaultFeishuTokenTTL   = 7200 * time.Second
	feishuRecallWindow      = 24 * time.Hour
	feishuUUIDRemembered    = time.Hour
	feishuRateLimitResetHdr = "X-Ogw-Ratelimit-Reset"
)

// feishuState is what the simulated Feishu remembers between calls.
type feishuState struct {
	tokens *tokenStore
	users  *windowCounter // per receive_id
	app    *windowCounter // one key: the whole application

	mu sync.Mutex // guards the maps below
	// sent remembers each message_id answered with success, for recall.
	sent map[string]*feishuSent
	// uuids maps a request's uuid to the message_id it was answered with: Feishu sends
	// a uuid it saw within the hour only once.
	uuids map[string]feishuUUID
}

type feishuSent struct {
	at       time.Time
	recalled bool
}

type feishuUUID struct {
	msgID string
	at    time.Time
}

// newFeishuState returns Feishu's state, keeping its documented limits unless told not
// to.
func newFeishuState(limits bool) *feishuState {
	users, app := feishuUserLimits, feishuAppLimits
	if !limits {
		users, app = nil, nil
	}
	return &feishuState{
		tokens: newTokenStore(),
		users:  newWindowCounter(users...),
		app:    newWindowCounter(app...),
		sent:   map[string]*feishuSent{},
		uuids:  map[string]feishuUUID{},
	}
}

// reset forgets the windows, the messages and the uuids; tokens stay valid.
func (f *feishuState) reset() {
	f.users.reset()
	f.app.reset()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = map[string]*feishuSent{}
	f.uuids = map[string]feishuUUID{}
}

// feishuReply is every Feishu answer: code 0 is success.
type feishuReply struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
	Data any    `json:"data,omitempty"`
}

// feishuTokenReply is the answer of tenant_access_token/internal.
type feishuTokenReply struct {
	Code              int    `json:"code"`
	Msg               string `json:"msg"`
	TenantAccessToken string `json:"tenant_access_token,omitempty"`
	Expire            int64  `json:"expire,omitempty"`
}

// feishuFail answers an error the way Feishu does: an HTTP status and a code.
func feishuFail(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, feishuReply{Code: code, Msg: msg})
}

// handleFeishuToken serves POST /feishu/open-apis/auth/v3/tenant_access_token/internal.
// Token requests are not fault draws, as for WeCom.
func (s *Simulator) handleFeishuToken(w http.ResponseWriter, r *http.Request) {
	faults := s.Faults()
	if !sleep(r.Context(), time.Duration(faults.Latency)) {
		abortWithoutAnswer()
	}
	var body struct {
		AppID     string `json:"app_id"`
		AppSecret string `json:"app_secret"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&body); err != nil {
		feishuFail(w, http.StatusBadRequest, feishuInvalidParam, "invalid request body: "+err.Error())
		return
	}
	if body.AppID == "" || body.AppSecret == "" || faults.AuthFail {
		feishuFail(w, http.StatusBadRequest, feishuAppSecretInvalid, "app secret invalid")
		return
	}
	ttl := s.opts.FeishuTokenTTL
	writeJSON(w, http.StatusOK, feishuTokenReply{Code: feishuOK, Msg: "ok",
		TenantAccessToken: "t-" + s.feishu.tokens.issue(s.now(), ttl),
		// Rounded up so a sub-second test TTL does not read as "no expiry given".
		Expire: int64((ttl + time.Second - 1) / time.Second)})
}

// feishuAuthorized checks the request's tenant_access_token and answers for it when
// it is missing, unknown or expired.
func (s *Simulator) feishuAuthorized(w http.ResponseWriter, r *http.Request, now time.Time) bool {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	token, _ = strings.CutPrefix(token, "t-")
	if !ok || token == "" {
		feishuFail(w, http.StatusBadRequest, feishuTokenMissing, "Missing access token for authorization")
		return false
	}
	if s.feishu.tokens.check(token, now) != tokenValid {
		feishuFail(w, http.StatusBadRequest, feishuTokenInvalid, "Invalid access token for authorization")
		return false
	}
	return true
}

// feishuAppAdmitted counts a call against the application's limits, and answers 429
// with code 99991400 and x-ogw-ratelimit-reset (whole seconds until room comes back)
// when it is past them.
func (s *Simulator) feishuAppAdmitted(w http.ResponseWriter, now time.Time) bool {
	ok, wait := s.feishu.app.admit("app", now)
	if !ok {
		w.Header().Set(feishuRateLimitResetHdr, strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
		feishuFail(w, http.StatusTooManyRequests, feishuRateLimited, "request trigger frequency limit")
	}
	return ok
}

// feishuMessage is the body of a send.
type feishuMessage struct {
	ReceiveID string `json:"receive_id"`
	MsgType   string `json:"msg_type"`
	Content   string `json:"content"`
	UUID      string `json:"uuid"`
}

// text is what the recipient reads: a text message's text, or a post's title and the
// text of its elements, paragraph by paragraph; false when the content does not parse
// as the message type.
func (m feishuMessage) text() (string, bool) {
	switch m.MsgType {
	case "text":
		var c struct {
			Text string `json:"text"`
		}
		err := json.Unmarshal([]byte(m.Content), &c)
		return c.Text, err == nil
	case "post":
		var c map[string]struct {
			Title   string `json:"title"`
			Content [][]struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal([]byte(m.Content), &c); err != nil || len(c) != 1 {
			return "", false
		}
		var lines []string
		for _, post := range c {
			if post.Title != "" {
				lines = append(lines, post.Title)
			}
			for _, paragraph := range post.Content {
				var line strings.Builder
				for _, el := range paragraph {
					line.WriteString(el.Text)
				}
				lines = append(lines, line.String())
			}
		}
		return strings.Join(lines, "\n"), true
	}
	return "", false
}

// handleFeishuSend serves POST /feishu/open-apis/im/v1/messages?receive_id_type=…: the
// application's limits first (429), then the fault draw, then one user's limit, past
// which Feishu answers success and delivers nothing.
func (s *Simulator) handleFeishuSend(w http.ResponseWriter, r *http.Request) {
	received := s.now()
	if !s.feishuAuthorized(w, r, received) {
		return
	}
	switch r.URL.Query().Get("receive_id_type") {
	case "user_id", "open_id", "union_id", "email", "chat_id":
	default:
		feishuFail(w, http.StatusBadRequest, feishuInvalidParam, "invalid receive_id_type")
		return
	}
	var msg feishuMessage
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&msg); err != nil {
		feishuFail(w, http.StatusBadRequest, feishuInvalidParam, "invalid request body: "+err.Error())
		return
	}
	text, ok := msg.text()
	switch {
	case !ok:
		feishuFail(w, http.StatusBadRequest, feishuInvalidParam, "invalid msg_type or content")
		return
	case strings.TrimSpace(text) == "":
		feishuFail(w, http.StatusBadRequest, feishuInvalidParam, "content is empty")
		return
	case msg.ReceiveID == "":
		feishuFail(w, http.StatusBadRequest, feishuInvalidParam, "receive_id is empty")
		return
	}
	if !s.feishuAppAdmitted(w, received) {
		return
	}
	if msgID, seen := s.feishu.seenUUID(msg.UUID, received); seen {
		writeJSON(w, http.StatusOK, feishuSendReply(msgID))
		return
	}

	v := s.decide()
	waitLatency(r, v)
	d := Delivery{Platform: "feishu", To: msg.ReceiveID, RequestID: msg.UUID, Content: text, ReceivedAtMs: received.UnixMilli()}
	if r.URL.Query().Get("receive_id_type") == "chat_id" {
		// A post to a group chat, with the people its <at> elements @.
		d.Group, d.Mentions = msg.ReceiveID, feishuMentions(text)
	}
	switch v.outcome {
	case outcomeAuth:
		feishuFail(w, http.StatusBadRequest, feishuTokenInvalid, "Invalid access token for authorization")
	case outcomeFail:
		http.Error(w, "internal error", http.StatusInternalServerError)
	case outcomeThrottle:
		w.Header().Set(feishuRateLimitResetHdr, "1")
		feishuFail(w, http.StatusTooManyRequests, feishuRateLimited, "request trigger frequency limit")
	case outcomeReject:
		feishuFail(w, http.StatusBadRequest, feishuUserNotAvailable, "Bot has NO availability to this user.")
	case outcomeTimeout:
		s.holdThenAbort(r)
	case outcomeAcceptThenTimeout:
		s.deliverFeishu(msg.UUID, d, received)
		s.holdThenAbort(r)
	default:
		writeJSON(w, http.StatusOK, feishuSendReply(s.deliverFeishu(msg.UUID, d, received)))
	}
}

// feishuSendReply is a successful send's answer.
func feishuSendReply(msgID string) feishuReply {
	return feishuReply{Code: feishuOK, Msg: "success", Data: map[string]string{"message_id": msgID}}
}

// deliverFeishu records d unless its user is past the per-user limit, in which case it
// is dropped silently; either way the call gets a message_id, as on Feishu.
func (s *Simulator) deliverFeishu(uuid string, d Delivery, now time.Time) string {
	msgID := "om_" + s.newMsgID()
	if ok, _ := s.feishu.users.admit(d.To, now); !ok {
		s.dropSilently("feishu", 1)
		return msgID
	}
	s.feishu.remember(uuid, msgID, now)
	d.ProviderMsgID = msgID
	s.record(d)
	return msgID
}

// seenUUID returns the message_id a uuid was answered with within the hour.
func (f *feishuState) seenUUID(uuid string, now time.Time) (string, bool) {
	if uuid == "" {
		return "", false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.uuids[uuid]
	if !ok || now.Sub(u.at) >= feishuUUIDRemembered {
		return "", false
	}
	return u.msgID, true
}

// remember keeps a delivered message for recall and its uuid for an hour.
func (f *feishuState) remember(uuid, msgID string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent[msgID] = &feishuSent{at: now}
	if uuid != "" {
		f.uuids[uuid] = feishuUUID{msgID: msgID, at: now}
	}
}

// handleFeishuRecall serves DELETE /feishu/open-apis/im/v1/messages/{message_id}: the
// bot recalls a message it sent, within the tenant's window (24 hours, the default).
func (s *Simulator) handleFeishuRecall(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	if !s.feishuAuthorized(w, r, now) {
		return
	}
	if !s.feishuAppAdmitted(w, now) {
		return
	}
	code, msg := s.feishu.recall(r.PathValue("message_id"), now)
	if code != feishuOK {
		feishuFail(w, http.StatusBadRequest, code, msg)
		return
	}
	s.markRecalled("feishu", r.PathValue("message_id"))
	writeJSON(w, http.StatusOK, feishuReply{Code: feishuOK, Msg: "success", Data: map[string]any{}})
}

// recall marks a message recalled and returns Feishu's code for the outcome.
func (f *feishuState) recall(msgID string, now time.Time) (int, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.sent[msgID]
	switch {
	case !ok:
		return feishuInvalidParam, "message_id not found"
	case m.recalled:
		return feishuAlreadyRecalled, "The message was withdrawn."
	case now.Sub(m.at) > feishuRecallWindow:
		return feishuRecallExpired, "Message can only be recalled within one days."
	}
	m.recalled = true
	return feishuOK, ""
}

// FeishuRecalled reports whether the simulated Feishu recalled the message it answered
// with msgID.
func (s *Simulator) FeishuRecalled(msgID string) bool {
	s.feishu.mu.Lock()
	defer s.feishu.mu.Unlock()
	m, ok := s.feishu.sent[msgID]
	return ok && m.recalled
}
