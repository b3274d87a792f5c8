package channels

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"herald/simulator"
)

func TestAddressRules(t *testing.T) {
	for _, tc := range []struct {
		ip string
		// refused without and with allow_private_network
		refused, refusedWhenAllowed bool
	}{
		{"127.0.0.1", true, false},
		{"10.1.2.3", true, false},
		{"192.168.1.1", true, false},
		{"172.16.0.1", true, false},
		{"172.32.0.1", false, false}, // just outside 172.16.0.0/12
		{"100.64.0.1", true, false},
		{"::1", true, false},
		{"fd12:3456::1", true, false},
		{"::ffff:10.1.2.3", true, false}, // IPv4-mapped is judged as the IPv4 address
		{"169.254.169.254", true, true},  // cloud metadata
		{"fe80::1", true, true},
		{"0.0.0.0", true, true},
		{"::", true, true},
		{"224.0.0.1", true, true},
		{"ff02::1", true, true},
		{"8.8.8.8", false, false},
		{"2001:4860:4860::8888", false, false},
	} {
		for _, allow := range []bool{false, true} {
			want := tc.refused
			if allow {
				want = tc.refusedWhenAllowed
			}
			host := tc.ip
			if strings.Contains(host, ":") {
				host = "[" + host + "]"
			}
			err := CheckURL("https://"+host+"/hook", allow)
			if (err != nil) != want {
				t.Errorf("CheckURL(%s, allowPrivate=%v) = %v, want refused=%v", tc.ip, allow, err, want)
			}
			if tc.ip == "8.8.8.8" || tc.ip == "2001:4860:4860::8888" {
				continue // public addresses are only ever checked as URLs here
			}
			// The dial-time check, as the dialer's Control calls it (no connection is made).
			err = checkDialAddress(net.JoinHostPort(tc.ip, "443"), allow)
			if (err != nil) != want {
				t.Errorf("dial check %s, allowPrivate=%v: %v, want refused=%v", tc.ip, allow, err, want)
			}
			if err != nil {
				ce, ok := errors.AsType[*Error](err)
				if !ok || ce.Class != Permanent {
					t.Errorf("dial check %s: %v, want a permanent *Error", tc.ip, err)
				}
				if !tc.refusedWhenAllowed && !strings.Contains(err.Error(), "enable allow_private_network") {
					t.Errorf("dial check %s: %q does not say how to allow it", tc.ip, err)
				}
				if tc.refusedWhenAllowed && strings.Contains(err.Error(), "allow_private_network") {
					t.Errorf("dial check %s: %q suggests a setting that would not help", tc.ip, err)
				}
			}
		}
	}
	err := checkDialAddress("10.0.0.5:80", false)
	const want = "refused to connect to 10.0.0.5: private address; enable allow_private_network on the account"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("message %q, want it to contain %q", err, want)
	}
}

func TestCheckURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://im.example.com":       true,
		"http://im.example.com:8080/x": true,
		"ftp://im.example.com":         false,
		"im.example.com/messages":      false,
		"https://":                     false,
		"https://user:pw@example.com/": false,
		"http://%zz":                   false,
		"http://localhost:8080":        true, // a name: checked when dialing
	} {
		if err := CheckURL(raw, false); (err == nil) != ok {
			t.Errorf("CheckURL(%q) = %v, want ok=%v", raw, err, ok)
		}
	}
}

func TestDialLoopback(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	addr := strings.TrimPrefix(rig.url, "http://")
	ctx := context.Background()

	_, err := DialContext(false)(ctx, "tcp", addr)
	ce, ok := errors.AsType[*Error](err)
	if !ok || ce.Class != Permanent || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("dial %s without allow_private_network: %v, want a permanent refusal naming the address", addr, err)
	}
	conn, err := DialContext(true)(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("dial %s with allow_private_network: %v", addr, err)
	}
	conn.Close()
}

// A host name is resolved and judged at dial time: "localhost" passes the save-time
// check but never reaches the loopback simulator.
func TestHostNameCheckedAtDial(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(rig.url, "http://"))
	cfg := map[string]string{"url": "http://localhost:" + port + "/webhook/x"}
	if err := ValidateConfig("webhook", cfg, false); err != nil {
		t.Fatalf("ValidateConfig: %v, want a host name to pass", err)
	}
	w, err := NewWebhook(cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Send(context.Background(), newMessage("ops"))
	if c := classOf(t, err); c != Permanent || !strings.Contains(err.Error(), "refused to connect") {
		t.Errorf("Send to localhost: %v, want a permanent refusal", err)
	}

	e, err := NewEmail(map[string]string{"host": "localhost", "port": rig.smtpPort, "from": "h@example.com"}, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Send(context.Background(), newMessage("a@example.com"))
	if c := classOf(t, err); c != Permanent || !strings.Contains(err.Error(), "refused to connect") {
		t.Errorf("email to localhost: %v, want a permanent refusal", err)
	}
	if s := rig.sim.Stats(); s.Requests != 0 || rig.hitCount("/webhook/x") != 0 {
		t.Errorf("the simulator was reached: %+v", s)
	}
}

// A redirect is answered as a permanent failure and its target never requested.
func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	var targetHits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		targetHits.Add(1)
	}))
	t.Cleanup(target.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusFound)
	}))
	t.Cleanup(redirector.Close)

	w, err := NewWebhook(map[string]string{"url": redirector.URL + "/hook"}, true)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGeneric("tianyuan", map[string]string{"base_url": redirector.URL, "token": "t"}, true)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]Sender{"webhook": w, "tianyuan": g} {
		_, err := s.Send(context.Background(), newMessage("x"))
		ce, ok := errors.AsType[*Error](err)
		if !ok || ce.Class != Permanent || ce.Code != "http 302" || !strings.Contains(err.Error(), "redirects are not followed") {
			t.Errorf("%s: %v, want a permanent http 302 saying redirects are not followed", name, err)
		}
	}
	if n := targetHits.Load(); n != 0 {
		t.Errorf("redirect target requested %d times", n)
	}
}

func TestHTTPClientReusesConnections(t *testing.T) {
	t.Parallel()
	c := NewHTTPClient(true, 0)
	tr, ok := c.Transport.(*http.Transport)
	if !ok || tr.MaxIdleConnsPerHost < 50 || tr.Proxy != nil {
		t.Errorf("transport %+v: want MaxIdleConnsPerHost ≥ 50 and no proxy", tr)
	}
	if c.CheckRedirect == nil {
		t.Error("client follows redirects")
	}
}

// listenLoopback listens on a free loopback port for one test.
func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// silentServer listens on loopback for one test, accepts connections and never says a
// word; it returns the port.
func silentServer(t *testing.T) string {
	t.Helper()
	ln := listenLoopback(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	_, port := splitPort(t, ln.Addr().String())
	return port
}

// splitPort splits "host:port".
func splitPort(t *testing.T, addr string) (host, port string) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return host, port
}
