package simulator

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	feishuTokenURL    = "/feishu/open-apis/auth/v3/tenant_access_token/internal"
	feishuMessagesURL = "/feishu/open-apis/im/v1/messages"
)

// feishuToken fetches a tenant_access_token from the simulator at base.
func feishuToken(t *testing.T, base string) string {
	t.Helper()
	resp := mustDo(t, "POST", base+feishuTokenURL, nil, map[string]string{"app_id": "cli_1", "app_secret": "s"})
	reply := decode[feishuTokenReply](t, resp.body)
	if resp.status != 200 || reply.Code != 0 || reply.TenantAccessToken == "" {
		t.Fatalf("token = %d %s", resp.status, resp.body)
	}
	return reply.TenantAccessToken
}

// feishuSendReplyOf is a send's answer as a sender reads it.
type feishuSendReplyOf struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
	Data struct {
		MessageID string `json:"message_id"`
	} `json:"data"`
}

// feishuText is a text message to user with the given uuid.
func feishuText(user, text, uuid string) map[string]string {
	return map[string]string{"receive_id": user, "msg_type": "text", "content": fmt.Sprintf(`{"text":%q}`, text), "uuid": uuid}
}

// sendFeishu posts one message with token and returns the answer.
func sendFeishu(t *testing.T, base, token string, body any) (response, feishuSendReplyOf) {
	t.Helper()
	resp := mustDo(t, "POST", base+feishuMessagesURL+"?receive_id_type=user_id", http.Header{"Authorization": {"Bearer " + token}}, body)
	return resp, decode[feishuSendReplyOf](t, resp.body)
}

func TestFeishuToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		faults     Faults
		body       string
		wantStatus int
		wantCode   int
		wantExpire int64
	}{
		{"ok", Faults{}, `{"app_id":"cli_1","app_secret":"s"}`, 200, 0, 90},
		{"missing secret", Faults{}, `{"app_id":"cli_1"}`, 400, feishuAppSecretInvalid, 0},
		{"auth fault", Faults{AuthFail: true}, `{"app_id":"cli_1","app_secret":"s"}`, 400, feishuAppSecretInvalid, 0},
		{"not json", Faults{}, `app_id=cli_1`, 400, feishuInvalidParam, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, srv := newTestServer(t, tc.faults, Options{FeishuTokenTTL: 89500 * time.Millisecond})
			resp := mustDo(t, "POST", srv.URL+feishuTokenURL, nil, []byte(tc.body))
			got := decode[feishuTokenReply](t, resp.body)
			if resp.status != tc.wantStatus || got.Code != tc.wantCode || got.Expire != tc.wantExpire || (tc.wantCode == 0) != (got.TenantAccessToken != "") {
				t.Errorf("token = %d %s, want %d code %d expire %d", resp.status, resp.body, tc.wantStatus, tc.wantCode, tc.wantExpire)
			}
		})
	}
}

func TestFeishuSend(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	sim, srv := newTestServer(t, Faults{}, Options{Now: clock.Now, FeishuTokenTTL: time.Minute})
	token := feishuToken(t, srv.URL)

	resp, reply := sendFeishu(t, srv.URL, token, feishuText("u1", "Overdue\n\nreconcile", "m-1"))
	if resp.status != 200 || reply.Code != 0 || reply.Data.MessageID == "" {
		t.Fatalf("text: %d %s", resp.status, resp.body)
	}
	post := map[string]string{"receive_id": "u2", "msg_type": "post", "uuid": "m-2",
		"content": `{"zh_cn":{"title":"Overdue","content":[[{"tag":"md","text":"**ledger** 42"}]]}}`}
	if resp, reply := sendFeishu(t, srv.URL, token, post); resp.status != 200 || reply.Code != 0 {
		t.Fatalf("post: %d %s", resp.status, resp.body)
	}
	at := testStart.UnixMilli()
	want := []Delivery{
		{Platform: "feishu", To: "u1", RequestID: "m-1", Content: "Overdue\n\nreconcile", ReceivedAtMs: at},
		{Platform: "feishu", To: "u2", RequestID: "m-2", Content: "Overdue\n**ledger** 42", ReceivedAtMs: at},
	}
	got := sim.Deliveries()
	for i := range got {
		// The message id is the simulator's to choose (a recall names it).
		if !strings.HasPrefix(got[i].ProviderMsgID, "om_") {
			t.Errorf("delivery %d has message id %q", i, got[i].ProviderMsgID)
		}
		got[i].ProviderMsgID = ""
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("deliveries = %+v, want %+v", got, want)
	}

	// The same uuid within the hour is answered with the same message_id and sent once.
	if _, again := sendFeishu(t, srv.URL, token, feishuText("u1", "Overdue\n\nreconcile", "m-1")); again.Data.MessageID != reply.Data.MessageID || len(sim.Deliveries()) != 2 {
		t.Errorf("repeated uuid: message_id %q (first %q), %d deliveries", again.Data.MessageID, reply.Data.MessageID, len(sim.Deliveries()))
	}

	for _, tc := range []struct {
		name     string
		token    string
		body     any
		wantCode int
	}{
		{"no token", "", feishuText("u1", "x", "m-3"), feishuTokenMissing},
		{"unknown token", "t-nope", feishuText("u1", "x", "m-3"), feishuTokenInvalid},
		{"empty text", token, feishuText("u1", " ", "m-3"), feishuInvalidParam},
		{"no receiver", token, feishuText("", "x", "m-3"), feishuInvalidParam},
		{"unknown type", token, map[string]string{"receive_id": "u1", "msg_type": "audio", "content": "{}"}, feishuInvalidParam},
	} {
		resp, got := sendFeishu(t, srv.URL, tc.token, tc.body)
		if resp.status != 400 || got.Code != tc.wantCode {
			t.Errorf("%s: %d %s, want 400 code %d", tc.name, resp.status, resp.body, tc.wantCode)
		}
	}
	clock.Advance(time.Minute)
	if resp, got := sendFeishu(t, srv.URL, token, feishuText("u1", "x", "m-4")); resp.status != 400 || got.Code != feishuTokenInvalid {
		t.Errorf("expired token: %d %s", resp.status, resp.body)
	}
	if n := len(sim.Deliveries()); n != 2 {
		t.Errorf("%d deliveries after refused calls, want 2", n)
	}
}

// Past 5 a second to one user Feishu answers success and delivers nothing.
func TestFeishuDropsPastTheUserLimitSilently(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	sim, srv := newTestServer(t, Faults{}, Options{Now: clock.Now})
	token := feishuToken(t, srv.URL)
	for i := range 7 {
		if resp, reply := sendFeishu(t, srv.URL, token, feishuText("u1", "x", fmt.Sprint("a", i))); resp.status != 200 || reply.Code != 0 || reply.Data.MessageID == "" {
			t.Fatalf("call %d: %d %s, want success", i, resp.status, resp.body)
		}
		clock.Advance(100 * time.Millisecond)
	}
	// Another user has a window of their own.
	sendFeishu(t, srv.URL, token, feishuText("u2", "x", "b0"))
	st := sim.Stats()
	if st.ByPlatform["feishu"] != 6 || st.DroppedSilently["feishu"] != 2 || st.DroppedSilently["wecom"] != 0 {
		t.Errorf("stats = %+v, want 6 delivered and 2 dropped silently", st)
	}
	// 0.3 s after the 7th call the first five are out of its window: room again.
	clock.Advance(300 * time.Millisecond)
	sendFeishu(t, srv.URL, token, feishuText("u1", "x", "a7"))
	if st := sim.Stats(); st.ByPlatform["feishu"] != 7 || st.DroppedSilently["feishu"] != 2 {
		t.Errorf("after the window moved: %+v", st)
	}
}

// The application's 50 a second and 1,000 a minute are answered with 429, code
// 99991400 and x-ogw-ratelimit-reset.
func TestFeishuApplicationLimits(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	sim, srv := newTestServer(t, Faults{}, Options{Now: clock.Now})
	token := feishuToken(t, srv.URL)
	client := &http.Client{Timeout: 5 * time.Second}
	send := func(i int) response {
		resp, err := do(t, client, "POST", srv.URL+feishuMessagesURL+"?receive_id_type=user_id",
			http.Header{"Authorization": {"Bearer " + token}}, feishuText(fmt.Sprint("u", i), "x", fmt.Sprint("m", i)))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	limited := func(resp response, reset string) {
		t.Helper()
		if got := decode[feishuSendReplyOf](t, resp.body); resp.status != 429 || got.Code != feishuRateLimited || resp.reset != reset {
			t.Errorf("over the limit: %d %s reset %q, want 429 code %d reset %q", resp.status, resp.body, resp.reset, feishuRateLimited, reset)
		}
	}
	n := 0
	for second := range 20 {
		for range 50 {
			if resp := send(n); resp.status != 200 {
				t.Fatalf("call %d in second %d: %d %s", n, second, resp.status, resp.body)
			}
			n++
		}
		if second == 0 {
			limited(send(n), "1")
		}
		clock.Advance(time.Second)
	}
	// 1,000 in the last 20 s: room comes back when the first second's calls leave the
	// minute, 40 s from now.
	limited(send(n), "40")
	if st := sim.Stats(); st.Accepted != 1000 || st.Requests != 1000 {
		t.Errorf("stats = %+v, want 1,000 requests and deliveries (refused calls are not requests)", st)
	}
}

func TestFeishuRecall(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	sim, srv := newTestServer(t, Faults{}, Options{Now: clock.Now, FeishuTokenTTL: 48 * time.Hour})
	token := feishuToken(t, srv.URL)
	auth := http.Header{"Authorization": {"Bearer " + token}}
	_, first := sendFeishu(t, srv.URL, token, feishuText("u1", "x", "m-1"))
	_, second := sendFeishu(t, srv.URL, token, feishuText("u1", "x", "m-2"))
	recall := func(id string, header http.Header) (int, int) {
		resp := mustDo(t, "DELETE", srv.URL+feishuMessagesURL+"/"+id, header, nil)
		return resp.status, decode[feishuSendReplyOf](t, resp.body).Code
	}
	for _, tc := range []struct {
		name               string
		id                 string
		header             http.Header
		advance            time.Duration
		wantStatus, wantCd int
	}{
		{"recalled", first.Data.MessageID, auth, 0, 200, 0},
		{"again", first.Data.MessageID, auth, 0, 400, feishuAlreadyRecalled},
		{"unknown", "om_nope", auth, 0, 400, feishuInvalidParam},
		{"no token", second.Data.MessageID, nil, 0, 400, feishuTokenMissing},
		{"past the window", second.Data.MessageID, auth, 24*time.Hour + time.Second, 400, feishuRecallExpired},
	} {
		clock.Advance(tc.advance)
		if status, code := recall(tc.id, tc.header); status != tc.wantStatus || code != tc.wantCd {
			t.Errorf("%s: %d code %d, want %d code %d", tc.name, status, code, tc.wantStatus, tc.wantCd)
		}
	}
	if !sim.FeishuRecalled(first.Data.MessageID) || sim.FeishuRecalled(second.Data.MessageID) {
		t.Error("recalled state: want the first recalled and the second not")
	}
	// The deliveries show it too, as every platform's recall does.
	for _, d := range sim.Deliveries() {
		if want := d.ProviderMsgID == first.Data.MessageID; d.Recalled != want {
			t.Errorf("delivery %s recalled %v, want %v", d.ProviderMsgID, d.Recalled, want)
		}
	}
}

// WeCom's 30 a minute and 1,000 an hour to one member: the excess is answered with
// success and dropped.
func TestWeComDropsPastTheMemberLimitsSilently(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	sim, srv := newTestServer(t, Faults{}, Options{Now: clock.Now, WeComTokenTTL: 48 * time.Hour})
	token := weComToken(t, srv.URL)
	send := func(to string) {
		t.Helper()
		body := map[string]any{"touser": to, "msgtype": "text", "agentid": 1000002, "text": map[string]string{"content": "x"}}
		resp := mustDo(t, "POST", srv.URL+"/wecom/cgi-bin/message/send?access_token="+token, nil, body)
		if reply := decode[wecomSendReply](t, resp.body); reply.ErrCode != 0 {
			t.Fatalf("send to %s: %s, want success", to, resp.body)
		}
	}
	for range 31 {
		send("u1")
	}
	send("u1|u2") // u1 is over, u2 is not
	if st := sim.Stats(); st.ByPlatform["wecom"] != 31 || st.DroppedSilently["wecom"] != 2 {
		t.Fatalf("within one minute: %+v, want 31 delivered (30 to u1) and 2 dropped", st)
	}
	// 30 a minute for 33 more minutes reaches 1,000 in the hour; the rest are dropped.
	for range 33 {
		clock.Advance(time.Minute)
		for range 30 {
			send("u1")
		}
	}
	st := sim.Stats()
	if got := st.ByPlatform["wecom"] - 1; got != 1000 || st.DroppedSilently["wecom"] != 2+20 {
		t.Errorf("over 34 minutes: %d delivered to u1, %d dropped; want 1,000 and 22", got, st.DroppedSilently["wecom"])
	}
}

// A benchmark's simulator delivers past the documented limits: Feishu's per-user 5 a
// second, and DingTalk's same content once a day, 500 a day per employee and 5,000
// recipients a minute.
func TestNoPlatformLimits(t *testing.T) {
	t.Parallel()
	sim, srv := newTestServer(t, Faults{}, Options{NoPlatformLimits: true})
	token := feishuToken(t, srv.URL)
	for i := range 60 {
		if resp, _ := sendFeishu(t, srv.URL, token, feishuText("u1", "x", fmt.Sprint("m", i))); resp.status != 200 {
			t.Fatalf("call %d: %d %s", i, resp.status, resp.body)
		}
	}
	resp := mustDo(t, "GET", srv.URL+"/dingtalk/gettoken?appkey=k&appsecret=s", nil, nil)
	dt := decode[dingtalkReply](t, resp.body)
	if dt.AccessToken == "" {
		t.Fatalf("dingtalk token = %d %s", resp.status, resp.body)
	}
	users := make([]string, dingtalkPerAppMinute)
	for i := range users {
		users[i] = fmt.Sprint("d", i)
	}
	body := map[string]any{"agent_id": 1, "userid_list": strings.Join(users, ","),
		"msg": map[string]any{"msgtype": "text", "text": map[string]string{"content": "same"}}}
	for i := range 2 {
		resp := mustDo(t, "POST", srv.URL+"/dingtalk/topapi/message/corpconversation/asyncsend_v2?access_token="+dt.AccessToken, nil, body)
		if reply := decode[dingtalkReply](t, resp.body); reply.ErrCode != 0 {
			t.Fatalf("dingtalk call %d: %s", i, resp.body)
		}
	}
	st := sim.Stats()
	got := map[string]int64{"feishu": st.ByPlatform["feishu"], "dingtalk": st.ByPlatform["dingtalk"],
		"feishu dropped": st.DroppedSilently["feishu"], "dingtalk dropped": st.DroppedSilently["dingtalk"]}
	want := map[string]int64{"feishu": 60, "dingtalk": 2 * dingtalkPerAppMinute, "feishu dropped": 0, "dingtalk dropped": 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delivered and dropped (-want +got):\n%s", diff)
	}
}
