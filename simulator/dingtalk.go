package simulator

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DingTalk work notices, as an internal app sees them. DingTalk answers success past
// its documented limits and delivers nothing to the people over them; getsendresult
// then lists them as forbidden. The simulator does the same and counts them in
// dropped_silently (unless Options.NoPlatformLimits):
//   - the same content reaches one employee only once a calendar day;
//   - at most 500 notices per employee per calendar day;
//   - at most 5,000 recipients a minute per app;
//   - at most 5,000 user ids in one call (the excess is dropped too).
//
// Days and minutes are China's (UTC+8), on the simulator's clock (Options.Now).
const (
	dingtalkPerEmployeeDay = 500
	dingtalkPerAppMinute   = 5000
	dingtalkPerCall        = 5000
	// dingtalkResultWindow is how long DingTalk answers getsendresult and recall for a
	// task.
	dingtalkResultWindow = 24 * time.Hour
)

// DingTalk error codes the simulator answers with, as the real API uses them.
const (
	dingtalkOK             = 0
	dingtalkInvalidToken   = 40014
	dingtalkTokenExpired   = 42001
	dingtalkInvalidParam   = 40035
	dingtalkInvalidAgent   = 40056
	dingtalkBadAppKey      = 40089
	dingtalkFlowControlled = 90018
)

// Flow-control codes in forbidden_list. DingTalk's own values are not documented where
// Herald's authors could read them; these name the rule that held the notice back.
const (
	dingtalkForbiddenSameContent = "same_content_today"
	dingtalkForbiddenPerDay      = "per_employee_day"
	dingtalkForbiddenPerMinute   = "per_app_minute"
	dingtalkForbiddenPerCall     = "per_call"
)

// china is DingTalk's day.
var china = time.FixedZone("UTC+8", 8*60*60)

// dingtalkState is what the simulator remembers of DingTalk: its counters and tasks.
type dingtalkState struct {
	// limits keeps DingTalk's documented limits (Options.NoPlatformLimits turns them
	// off); the 5,000 user ids a call carries hold either way.
	limits bool

	mu sync.Mutex
	// perDay counts notices by day and user; sameContent remembers day, user and content.
	perDay      map[string]int
	sameContent map[string]bool
	// minute is the current minute and the recipients reached in it.
	minute     string
	minuteUsed int
	// tasks are the calls of the last day by task id; seq numbers them.
	seq   int64
	tasks map[int64]*dingtalkTask
}

// dingtalkTask is one asyncsend_v2 call.
type dingtalkTask struct {
	at        time.Time
	delivered []string
	invalid   []string
	forbidden []dingtalkForbidden
}

type dingtalkForbidden struct {
	Code   string `json:"code"`
	Count  int64  `json:"count"`
	UserID string `json:"userid"`
}

// newDingTalkState returns DingTalk's state, keeping its documented limits unless told
// not to.
func newDingTalkState(limits bool) *dingtalkState {
	return &dingtalkState{limits: limits, perDay: map[string]int{}, sameContent: map[string]bool{}, tasks: map[int64]*dingtalkTask{}}
}

// dingtalkReply is DingTalk's answer; errors come with HTTP 200 and a non-zero errcode.
type dingtalkReply struct {
	ErrCode     int                `json:"errcode"`
	ErrMsg      string             `json:"errmsg"`
	AccessToken string             `json:"access_token,omitempty"`
	ExpiresIn   int64              `json:"expires_in,omitempty"`
	TaskID      int64              `json:"task_id,omitempty"`
	SendResult  *dingtalkSendReply `json:"send_result,omitempty"`
}

// dingtalkSendReply is getsendresult's send_result.
type dingtalkSendReply struct {
	InvalidUsers   []string            `json:"invalid_user_id_list"`
	ForbiddenUsers []string            `json:"forbidden_user_id_list"`
	FailedUsers    []string            `json:"failed_user_id_list"`
	ReadUsers      []string            `json:"read_user_id_list"`
	UnreadUsers    []string            `json:"unread_user_id_list"`
	Forbidden      []dingtalkForbidden `json:"forbidden_list"`
}

// dingtalkContent is the body of a text or markdown msg.
type dingtalkContent struct {
	Title   string `json:"title"`
	Text    string `json:"text"`
	Content string `json:"content"`
}

// dingtalkRequest is the body of asyncsend_v2, getsendresult and recall.
type dingtalkRequest struct {
	AgentID    int64  `json:"agent_id"`
	UserIDList string `json:"userid_list"`
	TaskID     int64  `json:"task_id"`
	MsgTaskID  int64  `json:"msg_task_id"`
	Msg        struct {
		MsgType  string           `json:"msgtype"`
		Text     *dingtalkContent `json:"text"`
		Markdown *dingtalkContent `json:"markdown"`
	} `json:"msg"`
}

// content is the msg's text and the text its title and type make it unique by.
func (r dingtalkRequest) content() (text, key string, ok bool) {
	switch {
	case r.Msg.MsgType == "text" && r.Msg.Text != nil:
		text = r.Msg.Text.Content
	case r.Msg.MsgType == "markdown" && r.Msg.Markdown != nil:
		text = r.Msg.Markdown.Text
		key = r.Msg.Markdown.Title
	default:
		return "", "", false
	}
	sum := sha256.Sum256([]byte(r.Msg.MsgType + "\x00" + key + "\x00" + text))
	return text, string(sum[:]), true
}

// handleDingTalkToken serves GET /dingtalk/gettoken. Token requests are not fault
// draws, as for WeCom.
func (s *Simulator) handleDingTalkToken(w http.ResponseWriter, r *http.Request) {
	faults := s.Faults()
	if !sleep(r.Context(), time.Duration(faults.Latency)) {
		abortWithoutAnswer()
	}
	q := r.URL.Query()
	if q.Get("appkey") == "" || q.Get("appsecret") == "" || faults.AuthFail {
		writeJSON(w, http.StatusOK, dingtalkReply{ErrCode: dingtalkBadAppKey, ErrMsg: "invalid appkey or appsecret"})
		return
	}
	ttl := s.opts.DingTalkTokenTTL
	writeJSON(w, http.StatusOK, dingtalkReply{ErrCode: dingtalkOK, ErrMsg: "ok",
		AccessToken: s.tokens.issue(s.now(), ttl), ExpiresIn: int64((ttl + time.Second - 1) / time.Second)})
}

// dingtalkCall checks the token and decodes the body of a DingTalk call; false when it
// has already answered.
func (s *Simulator) dingtalkCall(w http.ResponseWriter, r *http.Request, now time.Time) (dingtalkRequest, bool) {
	var req dingtalkRequest
	switch s.tokens.check(r.URL.Query().Get("access_token"), now) {
	case tokenUnknown:
		dingtalkFail(w, dingtalkInvalidToken, "invalid access_token")
		return req, false
	case tokenExpired:
		dingtalkFail(w, dingtalkTokenExpired, "access_token expired")
		return req, false
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&req); err != nil {
		dingtalkFail(w, dingtalkInvalidParam, "invalid parameter: "+err.Error())
		return req, false
	}
	if req.AgentID <= 0 {
		dingtalkFail(w, dingtalkInvalidAgent, "invalid agent_id")
		return req, false
	}
	return req, true
}

func dingtalkFail(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, http.StatusOK, dingtalkReply{ErrCode: code, ErrMsg: msg})
}

// handleDingTalkSend serves POST /dingtalk/topapi/message/corpconversation/asyncsend_v2.
func (s *Simulator) handleDingTalkSend(w http.ResponseWriter, r *http.Request) {
	received := s.now()
	req, ok := s.dingtalkCall(w, r, received)
	if !ok {
		return
	}
	text, key, ok := req.content()
	var users []string
	seen := map[string]bool{}
	for u := range strings.SplitSeq(req.UserIDList, ",") {
		if u = strings.TrimSpace(u); u != "" && !seen[u] {
			seen[u] = true
			users = append(users, u)
		}
	}
	switch {
	case !ok || text == "":
		dingtalkFail(w, dingtalkInvalidParam, "invalid parameter: msg")
		return
	case len(users) == 0:
		dingtalkFail(w, dingtalkInvalidParam, "invalid parameter: userid_list is empty")
		return
	}

	v := s.decide()
	waitLatency(r, v)
	requestID := r.Header.Get("X-Request-Id")
	id := s.dingtalk.nextID()
	task := &dingtalkTask{at: received}
	switch v.outcome {
	case outcomeAuth:
		dingtalkFail(w, dingtalkInvalidToken, "invalid access_token")
		return
	case outcomeFail:
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	case outcomeThrottle:
		dingtalkFail(w, dingtalkFlowControlled, "flow controlled")
		return
	case outcomeReject:
		// Unknown user ids do not fail the call: getsendresult lists them as invalid.
		task.invalid = users
	case outcomeTimeout:
		s.holdThenAbort(r)
	default: // accepted, also when the answer is then withheld (accept-then-timeout)
		s.dingtalkDeliver(task, users, key, text, requestID, id, received)
	}
	s.dingtalk.add(id, task)
	if v.outcome == outcomeAcceptThenTimeout {
		s.holdThenAbort(r)
	}
	writeJSON(w, http.StatusOK, dingtalkReply{ErrCode: dingtalkOK, ErrMsg: "ok", TaskID: id})
}

// dingtalkDeliver applies DingTalk's limits to a call's users and records a delivery
// for each user within them; the others are forbidden, answered with success all the
// same, and counted as dropped silently.
func (s *Simulator) dingtalkDeliver(task *dingtalkTask, users []string, key, text, requestID string, id int64, at time.Time) {
	st := s.dingtalk
	day, minute := at.In(china).Format("2006-01-02"), at.In(china).Format("2006-01-02T15:04")
	st.mu.Lock()
	if st.minute != minute {
		st.minute, st.minuteUsed = minute, 0
	}
	var deliveries []Delivery
	for i, u := range users {
		forbid := func(code string, limit int) {
			task.forbidden = append(task.forbidden, dingtalkForbidden{Code: code, Count: int64(limit), UserID: u})
		}
		contentKey := day + "\x00" + u + "\x00" + key
		delivery := Delivery{Platform: "dingtalk", To: u, RequestID: requestID,
			Content: text, ReceivedAtMs: at.UnixMilli(), ProviderMsgID: strconv.FormatInt(id, 10)}
		switch {
		case i >= dingtalkPerCall:
			forbid(dingtalkForbiddenPerCall, dingtalkPerCall)
		case !st.limits:
			task.delivered = append(task.delivered, u)
			deliveries = append(deliveries, delivery)
		case st.sameContent[contentKey]:
			forbid(dingtalkForbiddenSameContent, 1)
		case st.perDay[day+"\x00"+u] >= dingtalkPerEmployeeDay:
			forbid(dingtalkForbiddenPerDay, dingtalkPerEmployeeDay)
		case st.minuteUsed >= dingtalkPerAppMinute:
			forbid(dingtalkForbiddenPerMinute, dingtalkPerAppMinute)
		default:
			st.sameContent[contentKey] = true
			st.perDay[day+"\x00"+u]++
			st.minuteUsed++
			task.delivered = append(task.delivered, u)
			deliveries = append(deliveries, delivery)
		}
	}
	st.mu.Unlock()
	s.record(deliveries...)
	if n := len(task.forbidden); n > 0 {
		s.dropSilently("dingtalk", n)
	}
}

// nextID numbers a new task.
func (st *dingtalkState) nextID() int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.seq++
	return st.seq
}

// add stores a task once its users are settled; tasks past the result window are
// forgotten.
func (st *dingtalkState) add(id int64, t *dingtalkTask) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for old, ot := range st.tasks {
		if t.at.Sub(ot.at) > dingtalkResultWindow {
			delete(st.tasks, old)
		}
	}
	st.tasks[id] = t
}

// task returns a task still within the result window.
func (st *dingtalkState) task(id int64, now time.Time) (*dingtalkTask, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	t, ok := st.tasks[id]
	if !ok || now.Sub(t.at) > dingtalkResultWindow {
		return nil, false
	}
	return t, true
}

// handleDingTalkResult serves POST /dingtalk/topapi/message/corpconversation/getsendresult.
// Every delivered user is listed as unread: nobody reads the simulator's notices.
func (s *Simulator) handleDingTalkResult(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	req, ok := s.dingtalkCall(w, r, now)
	if !ok {
		return
	}
	t, ok := s.dingtalk.task(req.TaskID, now)
	if !ok {
		dingtalkFail(w, dingtalkInvalidParam, "invalid parameter: task_id")
		return
	}
	res := &dingtalkSendReply{InvalidUsers: t.invalid, UnreadUsers: t.delivered, Forbidden: t.forbidden,
		FailedUsers: []string{}, ReadUsers: []string{}}
	for _, f := range t.forbidden {
		res.ForbiddenUsers = append(res.ForbiddenUsers, f.UserID)
	}
	writeJSON(w, http.StatusOK, dingtalkReply{ErrCode: dingtalkOK, ErrMsg: "ok", SendResult: res})
}

// handleDingTalkRecall serves POST /dingtalk/topapi/message/corpconversation/recall: it
// takes back the whole task, from every user the call reached.
func (s *Simulator) handleDingTalkRecall(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	req, ok := s.dingtalkCall(w, r, now)
	if !ok {
		return
	}
	if _, ok := s.dingtalk.task(req.MsgTaskID, now); !ok {
		dingtalkFail(w, dingtalkInvalidParam, "invalid parameter: msg_task_id unknown or older than 24 hours")
		return
	}
	s.markRecalled("dingtalk", strconv.FormatInt(req.MsgTaskID, 10))
	writeJSON(w, http.StatusOK, dingtalkReply{ErrCode: dingtalkOK, ErrMsg: "ok"})
}

// handleDingTalkScopes serves POST /dingtalk/microapp/visible_scopes, which a connection
// test reads: the app of any agentId is visible to the whole organisation (department
// 1). It sends nothing and is no fault draw.
func (s *Simulator) handleDingTalkScopes(w http.ResponseWriter, r *http.Request) {
	switch s.tokens.check(r.URL.Query().Get("access_token"), s.now()) {
	case tokenUnknown:
		dingtalkFail(w, dingtalkInvalidToken, "invalid access_token")
		return
	case tokenExpired:
		dingtalkFail(w, dingtalkTokenExpired, "access_token expired")
		return
	}
	var req struct {
		AgentID int64 `json:"agentId"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&req); err != nil || req.AgentID <= 0 {
		dingtalkFail(w, dingtalkInvalidAgent, "invalid agentId")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"errcode": dingtalkOK, "errmsg": "ok", "isHidden": false,
		"deptVisibleScopes": []int64{1}, "userVisibleScopes": []string{}})
}
