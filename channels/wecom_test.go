package channels

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"herald/simulator"
)

const (
	wecomTokenPath = "/wecom/cgi-bin/gettoken"
	wecomSendPath  = "/wecom/cgi-bin/message/send"
)

func wecomConfig(rig *simRig) map[string]string {
	return map[string]string{"corp_id": "ww0123", "secret": "s3cret", "agent_id": "1000002", "base_url": rig.url + "/wecom"}
}

func TestWeComFaults(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	w, err := NewWeCom(wecomConfig(rig), true)
	if err != nil {
		t.Fatal(err)
	}
	runFaultTable(t, rig, adapterCase{platform: "wecom", sender: w, to: "zhangsan", providerID: true})
}

// Fifty concurrent sends through the registry share one adapter and one token.
func TestWeComTokenFetchedOnce(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	rig.sim.SetFaults(simulator.Faults{Latency: simulator.Duration(20 * time.Millisecond)})
	reg := NewRegistry(nil)
	acct := Account{ID: 7, Name: "wecom-main", Platform: "wecom", AllowPrivateNetwork: true,
		Config: wecomConfig(rig), UpdatedAt: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}

	const sends = 50
	var wg sync.WaitGroup
	for i := range sends {
		wg.Go(func() {
			s, err := reg.Sender(acct)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := s.Send(context.Background(), newMessage("user"+strconv.Itoa(i))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := rig.hitCount(wecomTokenPath); n != 1 {
		t.Errorf("gettoken calls = %d, want 1", n)
	}
	if n := len(rig.sim.Deliveries()); n != sends {
		t.Errorf("deliveries = %d, want %d", n, sends)
	}
}

// A token the platform has expired (its clock ran ahead of ours) is replaced and the
// send retried within the same call.
func TestWeComExpiredTokenRefreshed(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	rig := startSim(t, simulator.Options{Now: clock.Now})
	w, err := NewWeCom(wecomConfig(rig), true)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := w.Send(ctx, newMessage("zhangsan")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * time.Hour) // past the simulator's 7200 s, not past our cache
	m := newMessage("lisi")
	if _, err := w.Send(ctx, m); err != nil {
		t.Fatalf("Send after expiry: %v", err)
	}
	if got := rig.hitCount(wecomTokenPath); got != 2 {
		t.Errorf("gettoken calls = %d, want 2", got)
	}
	if got := rig.hitCount(wecomSendPath); got != 3 {
		t.Errorf("message/send calls = %d, want 3 (one refused as expired, retried once)", got)
	}
	if d := rig.sim.Deliveries(); len(d) != 2 || d[1].RequestID != m.ID {
		t.Errorf("deliveries = %+v, want two, the second %s", d, m.ID)
	}
}

// The adapter retires a token before its stated expiry without waiting to be told.
func TestWeComTokenRetiredBeforeExpiry(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	rig := startSim(t, simulator.Options{Now: clock.Now, WeComTokenTTL: 100 * time.Second})
	w := newWeCom(wecomConfig(rig), true)
	w.now = clock.Now
	ctx := context.Background()
	send := func() {
		t.Helper()
		if _, err := w.Send(ctx, newMessage("zhangsan")); err != nil {
			t.Fatal(err)
		}
	}
	send()
	clock.Advance(89 * time.Second) // within 100 s less a 10 s margin
	send()
	if got := rig.hitCount(wecomTokenPath); got != 1 {
		t.Errorf("gettoken calls within the token's life = %d, want 1", got)
	}
	clock.Advance(2 * time.Second) // inside the margin: fetch a new one first
	send()
	if got := rig.hitCount(wecomTokenPath); got != 2 {
		t.Errorf("gettoken calls = %d, want 2", got)
	}
	if got := rig.hitCount(wecomSendPath); got != 3 {
		t.Errorf("message/send calls = %d, want 3 (none refused)", got)
	}
}

func TestWeComBody(t *testing.T) {
	rig := startSim(t, simulator.Options{})
	w := newWeCom(wecomConfig(rig), true)
	for _, tc := range []struct {
		msg  Message
		want string
	}{
		{Message{ID: "m1", To: "u1", MsgType: "text", Title: "Overdue", Content: "Reconcile ledger 42"}, "Overdue\n\nReconcile ledger 42"},
		{Message{ID: "m2", To: "u2", MsgType: "markdown", Title: "Overdue", Content: "**ledger** 42"}, "# Overdue\n\n**ledger** 42"},
		{Message{ID: "m3", To: "u3", MsgType: "markdown", Content: "**ledger** 42"}, "**ledger** 42"},
	} {
		if _, err := w.Send(context.Background(), tc.msg); err != nil {
			t.Fatalf("%s: %v", tc.msg.ID, err)
		}
		d := rig.sim.Deliveries()
		if last := d[len(d)-1]; last.Content != tc.want || last.To != tc.msg.To || last.RequestID != tc.msg.ID {
			t.Errorf("%s: delivery %+v, want content %q", tc.msg.ID, last, tc.want)
		}
	}
}

// stubWeCom answers gettoken with fresh tokens and every send with reply; it covers
// answers the simulator never gives.
func stubWeCom(t *testing.T, reply map[string]any) (url string, tokens, sends *atomic.Int64) {
	tokens, sends = new(atomic.Int64), new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/cgi-bin/gettoken":
			n := tokens.Add(1)
			json.NewEncoder(w).Encode(map[string]any{"errcode": 0, "access_token": "tok" + strconv.FormatInt(n, 10), "expires_in": 7200})
		case "/cgi-bin/message/send":
			sends.Add(1)
			json.NewEncoder(w).Encode(reply)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, tokens, sends
}

// A fresh token that is refused again is an auth failure after exactly one retry.
func TestWeComTokenRetriedOnce(t *testing.T) {
	t.Parallel()
	url, tokens, sends := stubWeCom(t, map[string]any{"errcode": 40014, "errmsg": "invalid access_token"})
	w := newWeCom(map[string]string{"corp_id": "c", "secret": "s", "agent_id": "1", "base_url": url}, true)
	_, err := w.Send(context.Background(), newMessage("u"))
	if c := classOf(t, err); c != Auth {
		t.Errorf("class = %s, want auth (%v)", c, err)
	}
	if tokens.Load() != 2 || sends.Load() != 2 {
		t.Errorf("gettoken %d, send %d; want 2 and 2", tokens.Load(), sends.Load())
	}
}

func TestWeComInvalidUser(t *testing.T) {
	t.Parallel()
	url, _, _ := stubWeCom(t, map[string]any{"errcode": 0, "errmsg": "ok", "invaliduser": "ghost", "msgid": "x"})
	w := newWeCom(map[string]string{"corp_id": "c", "secret": "s", "agent_id": "1", "base_url": url}, true)
	_, err := w.Send(context.Background(), newMessage("ghost"))
	if c := classOf(t, err); c != Permanent {
		t.Errorf("class = %s, want permanent (%v)", c, err)
	}
}

func TestWeComErrorTable(t *testing.T) {
	for code, want := range map[int]codeAction{
		-1:    {class: Transient},
		42001: {class: Auth, refreshToken: true},
		40014: {class: Auth, refreshToken: true},
		41001: {class: Auth, refreshToken: true},
		40001: {class: Auth}, 40013: {class: Auth}, 60020: {class: Auth}, 48002: {class: Auth},
		45009: {class: RateLimited}, 45033: {class: RateLimited}, 45011: {class: RateLimited},
		81013: {class: Permanent}, 60111: {class: Permanent}, 40035: {class: Permanent},
		40008: {class: Permanent}, 44004: {class: Permanent}, 40056: {class: Permanent},
		82001: {class: Permanent},
		40999: {class: Permanent}, 60999: {class: Permanent}, 86001: {class: Permanent}, // unlisted, by range
		50001: {class: Transient}, 301002: {class: Transient},
	} {
		got := wecomErrorAction(code)
		if got.class != want.class || got.refreshToken != want.refreshToken {
			t.Errorf("errcode %d: class %s refresh %v, want %s %v", code, got.class, got.refreshToken, want.class, want.refreshToken)
		}
	}
}

// testClock is a settable clock safe for concurrent reads.
type testClock struct{ nanos atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.nanos.Store(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *testClock) Now() time.Time          { return time.Unix(0, c.nanos.Load()) }
func (c *testClock) Advance(d time.Duration) { c.nanos.Add(int64(d)) }
