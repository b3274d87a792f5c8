package channels

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"herald/simulator"
)

const (
	feishuSimTokenPath    = "/feishu" + feishuTokenPath
	feishuSimMessagesPath = "/feishu" + feishuMessagesPath
)

func feishuConfig(rig *simRig) map[string]string {
	return map[string]string{"app_id": "cli_a1b2", "app_secret": "s3cret", "base_url": rig.url + "/feishu"}
}

func TestFeishuFaults(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	f, err := NewFeishu(feishuConfig(rig), true)
	if err != nil {
		t.Fatal(err)
	}
	runFaultTable(t, rig, adapterCase{platform: "feishu", sender: f, to: "zhangsan", retryAfter: true, providerID: true})
}

// Text carries the title before the content; markdown goes as a post with the title
// its own.
func TestFeishuBody(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	f := newFeishu(feishuConfig(rig), true)
	for _, tc := range []struct {
		msg  Message
		want string
	}{
		{Message{ID: "m1", To: "u1", MsgType: "text", Title: "Overdue", Content: `Reconcile "ledger" <42> & co`}, "Overdue\n\nReconcile \"ledger\" <42> & co"},
		{Message{ID: "m2", To: "u2", MsgType: "text", Content: "请处理"}, "请处理"},
		{Message{ID: "m3", To: "u3", MsgType: "markdown", Title: "Overdue", Content: "**ledger** 42"}, "Overdue\n**ledger** 42"},
		{Message{ID: "m4", To: "u4", MsgType: "markdown", Content: "- a\n- b"}, "- a\n- b"},
	} {
		receipt, err := f.Send(context.Background(), tc.msg)
		if err != nil {
			t.Fatalf("%s: %v", tc.msg.ID, err)
		}
		d := rig.sim.Deliveries()
		if last := d[len(d)-1]; last.Content != tc.want || last.To != tc.msg.To || last.RequestID != tc.msg.ID || receipt.ProviderMessageID == "" {
			t.Errorf("%s: delivery %+v receipt %+v, want content %q", tc.msg.ID, last, receipt, tc.want)
		}
	}
	// Feishu reads <, > and & as they are; escaping them would grow the body.
	body, err := feishuBody(Message{ID: "m", To: "u", MsgType: "text", Content: "<&>"})
	if err != nil || !strings.Contains(string(body), `<&>`) {
		t.Errorf("body %s (%v) escapes HTML characters", body, err)
	}
}

// Content past the cap (queued before intake checked it) is cut on a character
// boundary, and the body stays within Feishu's 150 KB even when every character
// doubles twice in the encoding.
func TestFeishuBodyWithinRequestLimit(t *testing.T) {
	for _, content := range []string{strings.Repeat(`"`, 40<<10), strings.Repeat("错", 20<<10)} {
		for _, typ := range []string{"text", "markdown"} {
			body, err := feishuBody(Message{ID: "m", To: "u", MsgType: typ, Title: "t", Content: content})
			if err != nil || len(body) > 150<<10 {
				t.Errorf("%s of %d bytes: body %d bytes (%v), want at most 150 KB", typ, len(content), len(body), err)
			}
		}
	}
}

// Twenty concurrent sends share one token.
func TestFeishuTokenFetchedOnce(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	rig.sim.SetFaults(simulator.Faults{Latency: simulator.Duration(20 * time.Millisecond)})
	f := newFeishu(feishuConfig(rig), true)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, err := f.Send(context.Background(), newMessage("user"+strconv.Itoa(i))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := rig.hitCount(feishuSimTokenPath); n != 1 {
		t.Errorf("token calls = %d, want 1", n)
	}
	if n := len(rig.sim.Deliveries()); n != 20 {
		t.Errorf("deliveries = %d, want 20", n)
	}
}

// A run longer than the token's life: the adapter retires the token before it expires
// by its own clock, and a token Feishu expired early (its clock ahead of ours) is
// replaced and the send made again within the same call.
func TestFeishuTokenExpiresMidRun(t *testing.T) {
	t.Parallel()
	simClock, ourClock := newTestClock(), newTestClock()
	rig := startSim(t, simulator.Options{Now: simClock.Now, FeishuTokenTTL: 100 * time.Second})
	f := newFeishu(feishuConfig(rig), true)
	f.now = ourClock.Now
	send := func() {
		t.Helper()
		if _, err := f.Send(context.Background(), newMessage("zhangsan")); err != nil {
			t.Fatal(err)
		}
	}
	for range 9 { // 0 … 80 s, within 100 s less a 10 s margin
		send()
		simClock.Advance(10 * time.Second)
		ourClock.Advance(10 * time.Second)
	}
	if got := rig.hitCount(feishuSimTokenPath); got != 1 {
		t.Fatalf("token calls within the token's life = %d, want 1", got)
	}
	send() // at 90 s by both clocks: retired by ours before Feishu expires it
	if got, sends := rig.hitCount(feishuSimTokenPath), rig.hitCount(feishuSimMessagesPath); got != 2 || sends != 10 {
		t.Errorf("token calls %d, sends %d; want 2 and 10 (none refused)", got, sends)
	}
	simClock.Advance(150 * time.Second) // Feishu's token expired, ours not yet
	send()
	if got, sends := rig.hitCount(feishuSimTokenPath), rig.hitCount(feishuSimMessagesPath); got != 3 || sends != 12 {
		t.Errorf("token calls %d, sends %d; want 3 and 12 (one refused as expired, made again)", got, sends)
	}
	if n := len(rig.sim.Deliveries()); n != 11 {
		t.Errorf("deliveries = %d, want 11", n)
	}
}

// stubFeishu answers token requests with fresh tokens and every send with status and
// reply; it covers answers the simulator never gives.
func stubFeishu(t *testing.T, status int, header http.Header, reply map[string]any) (url string, tokens, sends *atomic.Int64) {
	tokens, sends = new(atomic.Int64), new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case feishuTokenPath:
			n := tokens.Add(1)
			json.NewEncoder(w).Encode(map[string]any{"code": 0, "tenant_access_token": "t-" + strconv.FormatInt(n, 10), "expire": 7200})
		case feishuMessagesPath:
			sends.Add(1)
			for k, v := range header {
				w.Header()[k] = v
			}
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(reply)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, tokens, sends
}

func TestFeishuErrorClasses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		status         int
		header         http.Header
		reply          map[string]any
		want           Class
		tokens, sends  int64
		wantRetryAfter time.Duration
	}{
		{"token refused twice", 400, nil, map[string]any{"code": 99991663, "msg": "invalid token"}, Auth, 2, 2, 0},
		{"token missing twice", 400, nil, map[string]any{"code": 99991661, "msg": "missing"}, Auth, 2, 2, 0},
		{"no permission", 400, nil, map[string]any{"code": 99991672, "msg": "scope"}, Auth, 1, 1, 0},
		{"app rate limit", 429, http.Header{"X-Ogw-Ratelimit-Reset": {"7"}}, map[string]any{"code": 99991400, "msg": "limit"}, RateLimited, 1, 1, 7 * time.Second},
		{"rate code in 400", 400, http.Header{"X-Ogw-Ratelimit-Reset": {"3"}}, map[string]any{"code": 99991400}, RateLimited, 1, 1, 3 * time.Second},
		{"user rate limit", 400, nil, map[string]any{"code": 230020, "msg": "frequency"}, RateLimited, 1, 1, 0},
		{"user unknown", 400, nil, map[string]any{"code": 230013, "msg": "availability"}, Permanent, 1, 1, 0},
		{"unlisted 4xx code", 400, nil, map[string]any{"code": 234567, "msg": "?"}, Permanent, 1, 1, 0},
		{"server error", 500, nil, map[string]any{"code": 1500, "msg": "internal"}, Transient, 1, 1, 0},
		{"bare 502", 502, nil, nil, Transient, 1, 1, 0},
		{"success without code", 200, nil, map[string]any{"data": map[string]any{}}, Transient, 1, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, tokens, sends := stubFeishu(t, tc.status, tc.header, tc.reply)
			f := newFeishu(map[string]string{"app_id": "a", "app_secret": "s", "base_url": url}, true)
			_, err := f.Send(context.Background(), newMessage("u"))
			ce, ok := err.(*Error)
			if !ok || ce.Class != tc.want || ce.RetryAfter != tc.wantRetryAfter {
				t.Fatalf("error %v, want class %s with RetryAfter %s", err, tc.want, tc.wantRetryAfter)
			}
			if !strings.Contains(ce.Error(), "channels: feishu") {
				t.Errorf("error %q does not name the adapter", ce)
			}
			if tokens.Load() != tc.tokens || sends.Load() != tc.sends {
				t.Errorf("token calls %d, sends %d; want %d and %d", tokens.Load(), sends.Load(), tc.tokens, tc.sends)
			}
		})
	}
}

func TestFeishuRecall(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	rig := startSim(t, simulator.Options{Now: clock.Now})
	var s Sender = newFeishu(feishuConfig(rig), true)
	r, ok := s.(Recaller)
	if !ok {
		t.Fatal("the Feishu adapter is no Recaller")
	}
	ctx := context.Background()
	send := func() (Message, Receipt) {
		m := newMessage("zhangsan")
		receipt, err := s.Send(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		return m, receipt
	}
	m1, r1 := send()
	m2, r2 := send()
	if err := r.Recall(ctx, m1, r1); err != nil || !rig.sim.FeishuRecalled(r1.ProviderMessageID) {
		t.Fatalf("Recall: %v, recalled %v", err, rig.sim.FeishuRecalled(r1.ProviderMessageID))
	}
	if err := r.Recall(ctx, m1, r1); err != nil {
		t.Errorf("recalling a recalled message: %v, want success", err)
	}
	if err := r.Recall(ctx, m1, Receipt{}); classOf(t, err) != Permanent {
		t.Errorf("recall without a message_id: %v, want permanent", err)
	}
	// A day later Feishu has expired the token too: refreshed, then refused for the window.
	clock.Advance(RecallWindow("feishu") + time.Minute)
	err := r.Recall(ctx, m2, r2)
	if ce, ok := err.(*Error); !ok || ce.Class != Permanent || ce.Code != "230009" {
		t.Errorf("recall past the window: %v, want permanent 230009", err)
	}
	if rig.sim.FeishuRecalled(r2.ProviderMessageID) {
		t.Error("a message past the window was recalled")
	}
}

func TestFeishuProbe(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	f := newFeishu(feishuConfig(rig), true)
	if res := f.Probe(context.Background()); !res.OK || res.Summary.Key != "channels.probe.feishu_ok" {
		t.Errorf("probe = %+v, want ok", res)
	}
	rig.sim.SetFaults(simulator.Faults{AuthFail: true})
	if res := f.Probe(context.Background()); res.OK || res.Summary.Key != "channels.probe.feishu_refused_credentials" {
		t.Errorf("probe with bad credentials = %+v", res)
	}
	if n := len(rig.sim.Deliveries()); n != 0 {
		t.Errorf("the probe sent %d messages", n)
	}
}
