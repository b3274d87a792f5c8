package simulator

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// weComToken fetches an access token from the simulator at base.
func weComToken(t *testing.T, base string) string {
	t.Helper()
	resp := mustDo(t, "GET", base+"/wecom/cgi-bin/gettoken?corpid=ww1&corpsecret=s", nil, nil)
	reply := decode[wecomTokenReply](t, resp.body)
	if reply.ErrCode != 0 || reply.AccessToken == "" {
		t.Fatalf("gettoken = %s", resp.body)
	}
	return reply.AccessToken
}

func TestWeComGetToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		faults Faults
		query  string
		want   wecomTokenReply
	}{
		{"ok", Faults{}, "corpid=ww1&corpsecret=s", wecomTokenReply{wecomReply{0, "ok"}, "<token>", 90}},
		{"missing corpid", Faults{}, "corpsecret=s", wecomTokenReply{wecomReply{40001, "invalid credential"}, "", 0}},
		{"missing secret", Faults{}, "corpid=ww1", wecomTokenReply{wecomReply{40001, "invalid credential"}, "", 0}},
		{"auth fault", Faults{AuthFail: true}, "corpid=ww1&corpsecret=s", wecomTokenReply{wecomReply{40001, "invalid credential"}, "", 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// expires_in is whole seconds, rounded up so a sub-second TTL does not read as 0.
			_, srv := newTestServer(t, tt.faults, Options{WeComTokenTTL: 89500 * time.Millisecond})
			resp := mustDo(t, "GET", srv.URL+"/wecom/cgi-bin/gettoken?"+tt.query, nil, nil)
			got := decode[wecomTokenReply](t, resp.body)
			if got.AccessToken != "" {
				got.AccessToken = "<token>"
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(wecomTokenReply{})); diff != "" {
				t.Errorf("gettoken (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWeComSend(t *testing.T) {
	t.Parallel()
	text := func(to, content string) map[string]any {
		return map[string]any{"touser": to, "msgtype": "text", "agentid": 1000002, "text": map[string]string{"content": content}}
	}
	reqID := http.Header{"X-Request-Id": {"m-7"}}
	at := testStart.UnixMilli()

	tests := []struct {
		name string
		// token is "" for a fresh valid token, or the literal token to send.
		token          string
		header         http.Header
		body           any
		faults         Faults
		wantStatus     int
		wantCode       int
		wantDeliveries []Delivery
	}{
		{
			name: "text to two users", header: reqID, body: text("u1|u2", "hi"),
			wantStatus: 200, wantCode: 0,
			wantDeliveries: []Delivery{
				{Platform: "wecom", To: "u1", RequestID: "m-7", Content: "hi", ReceivedAtMs: at},
				{Platform: "wecom", To: "u2", RequestID: "m-7", Content: "hi", ReceivedAtMs: at},
			},
		},
		{
			name:       "markdown without request id",
			body:       map[string]any{"touser": "u1", "msgtype": "markdown", "agentid": 1, "markdown": map[string]string{"content": "**hi**"}},
			wantStatus: 200, wantCode: 0,
			wantDeliveries: []Delivery{{Platform: "wecom", To: "u1", Content: "**hi**", ReceivedAtMs: at}},
		},
		{name: "missing token", token: "-", body: text("u1", "hi"), wantStatus: 200, wantCode: 41001},
		{name: "unknown token", token: "nope", body: text("u1", "hi"), wantStatus: 200, wantCode: 40014},
		{name: "bad JSON", body: []byte("{"), wantStatus: 200, wantCode: 40035},
		{name: "unsupported msgtype", body: map[string]any{"touser": "u1", "msgtype": "image", "agentid": 1}, wantStatus: 200, wantCode: 40008},
		{name: "empty content", body: text("u1", ""), wantStatus: 200, wantCode: 44004},
		{name: "text type with markdown field", body: map[string]any{"touser": "u1", "msgtype": "text", "agentid": 1, "markdown": map[string]string{"content": "x"}}, wantStatus: 200, wantCode: 44004},
		{name: "missing agentid", body: map[string]any{"touser": "u1", "msgtype": "text", "text": map[string]string{"content": "x"}}, wantStatus: 200, wantCode: 40056},
		{name: "empty touser", body: text(" | ", "hi"), wantStatus: 200, wantCode: 40035},
		{name: "fail fault", faults: Faults{FailRate: 1}, body: text("u1", "hi"), wantStatus: 500},
		{name: "throttle fault", faults: Faults{ThrottleRate: 1}, body: text("u1", "hi"), wantStatus: 200, wantCode: 45009},
		{name: "reject fault", faults: Faults{RejectRate: 1}, body: text("u1", "hi"), wantStatus: 200, wantCode: 81013},
		{name: "auth fault", faults: Faults{AuthFail: true}, body: text("u1", "hi"), wantStatus: 200, wantCode: 40014},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim, srv := newTestServer(t, Faults{}, Options{})
			token := tt.token
			switch token {
			case "":
				token = weComToken(t, srv.URL)
			case "-":
				token = ""
			}
			// Faults are set after the token is issued, as gettoken refuses under AuthFail.
			sim.SetFaults(tt.faults)
			resp := mustDo(t, "POST", srv.URL+"/wecom/cgi-bin/message/send?access_token="+url.QueryEscape(token), tt.header, tt.body)
			if resp.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d (body %s)", resp.status, tt.wantStatus, resp.body)
			}
			if resp.status == 200 {
				got := decode[wecomSendReply](t, resp.body)
				if got.ErrCode != tt.wantCode {
					t.Errorf("errcode = %d (%s), want %d", got.ErrCode, got.ErrMsg, tt.wantCode)
				}
				if got.ErrCode == 0 && got.MsgID == "" {
					t.Error("success without msgid")
				}
			}
			if diff := cmp.Diff(tt.wantDeliveries, sim.Deliveries(), cmpopts.EquateEmpty(), ignoreMsgID); diff != "" {
				t.Errorf("deliveries (-want +got):\n%s", diff)
			}
		})
	}
}

// A token works until its TTL passes, then reads as expired (42001), and a new one works.
func TestWeComTokenExpiry(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	_, srv := newTestServer(t, Faults{}, Options{WeComTokenTTL: time.Minute, Now: clock.Now})
	body := map[string]any{"touser": "u1", "msgtype": "text", "agentid": 1, "text": map[string]string{"content": "hi"}}
	send := func(token string) int {
		resp := mustDo(t, "POST", srv.URL+"/wecom/cgi-bin/message/send?access_token="+token, nil, body)
		return decode[wecomSendReply](t, resp.body).ErrCode
	}

	token := weComToken(t, srv.URL)
	var got []int
	got = append(got, send(token))
	clock.Advance(59 * time.Second)
	got = append(got, send(token))
	clock.Advance(time.Second)
	got = append(got, send(token))
	got = append(got, send(weComToken(t, srv.URL)))
	if diff := cmp.Diff([]int{0, 0, 42001, 0}, got); diff != "" {
		t.Errorf("errcodes over time (-want +got):\n%s", diff)
	}
}

// ignoreMsgID leaves the provider message id out of a comparison of deliveries: it is
// the simulator's to choose.
var ignoreMsgID = cmpopts.IgnoreFields(Delivery{}, "ProviderMsgID")

// A recall names the msgid send answered with: GET /_sim/deliveries shows the delivery
// recalled; a second recall of it is refused.
func TestWeComRecallEndpoint(t *testing.T) {
	t.Parallel()
	_, srv := newTestServer(t, Faults{}, Options{})
	token := weComToken(t, srv.URL)
	base := srv.URL + "/wecom/cgi-bin/message/"
	q := "?access_token=" + url.QueryEscape(token)
	sent := decode[wecomSendReply](t, mustDo(t, "POST", base+"send"+q, nil,
		[]byte(`{"touser":"zhangsan|lisi","msgtype":"text","agentid":1000002,"text":{"content":"hi"}}`)).body)
	mustDo(t, "POST", base+"send"+q, nil, []byte(`{"touser":"wangwu","msgtype":"text","agentid":1000002,"text":{"content":"stays"}}`))
	recall := func() int {
		return decode[wecomReply](t, mustDo(t, "POST", base+"recall"+q, nil, map[string]string{"msgid": sent.MsgID}).body).ErrCode
	}
	if code := recall(); code != 0 {
		t.Fatalf("recall errcode = %d", code)
	}
	list := decode[[]map[string]any](t, mustDo(t, "GET", srv.URL+"/_sim/deliveries", nil, "").body)
	got := map[string]any{}
	for _, d := range list {
		got[d["to"].(string)] = d["recalled"]
	}
	if diff := cmp.Diff(map[string]any{"zhangsan": true, "lisi": true, "wangwu": nil}, got); diff != "" {
		t.Errorf("recalled by recipient (-want +got):\n%s", diff)
	}
	if code := recall(); code != wecomMsgRecalled {
		t.Errorf("second recall errcode = %d, want %d", code, wecomMsgRecalled)
	}
}

// WeCom's directory, set through PUT /_sim/wecom/directory: message/send delivers to
// the people it knows with a licence, names the others in invaliduser and
// unlicenseduser, and fails the call with 81013 when nobody is left. Each delivered
// person's limits still apply.
func TestWeComDirectory(t *testing.T) {
	t.Parallel()
	sim, srv := newTestServer(t, Faults{}, Options{})
	if resp := mustDo(t, "PUT", srv.URL+"/_sim/wecom/directory", nil, []byte(`{"unknown":["u1"],"bogus":1}`)); resp.status != http.StatusBadRequest {
		t.Errorf("a directory with an unknown field: %d %s, want 400", resp.status, resp.body)
	}
	if resp := mustDo(t, "PUT", srv.URL+"/_sim/wecom/directory", nil, WeComDirectory{Unknown: []string{"ghost", "gone"}, Unlicensed: []string{"intern"}}); resp.status != http.StatusNoContent {
		t.Fatalf("set the directory: %d %s", resp.status, resp.body)
	}
	token := weComToken(t, srv.URL)
	send := func(to string) wecomSendReply {
		t.Helper()
		resp := mustDo(t, "POST", srv.URL+"/wecom/cgi-bin/message/send?access_token="+url.QueryEscape(token), nil,
			map[string]any{"touser": to, "msgtype": "text", "agentid": 1, "text": map[string]string{"content": "hi"}})
		return decode[wecomSendReply](t, resp.body)
	}
	got := send("u1|ghost|intern|u2|gone")
	if got.ErrCode != 0 || got.MsgID == "" || got.InvalidUser != "ghost|gone" || got.UnlicensedUser != "intern" {
		t.Errorf("send to a mixed list: %+v, want success naming ghost|gone invalid and intern unlicensed", got)
	}
	var to []string
	for _, d := range sim.Deliveries() {
		to = append(to, d.To)
	}
	if diff := cmp.Diff([]string{"u1", "u2"}, to); diff != "" {
		t.Errorf("delivered to (-want +got):\n%s", diff)
	}
	if got := send("ghost|intern"); got.ErrCode != wecomAllReceiversFailed || got.InvalidUser != "ghost" || got.UnlicensedUser != "intern" || got.MsgID != "" {
		t.Errorf("send to nobody it can reach: %+v, want 81013 naming both", got)
	}
	// One member's 30 a minute holds for a person in a list as for one alone.
	for range 30 {
		send("u3|ghost")
	}
	send("u3|u4")
	if n := sim.Stats().DroppedSilently["wecom"]; n != 1 {
		t.Errorf("%d dropped silently, want u3's 31st", n)
	}
	sim.Reset()
	if got := send("ghost"); got.ErrCode != wecomAllReceiversFailed {
		t.Errorf("after a reset: %+v, want the directory kept", got)
	}
}
