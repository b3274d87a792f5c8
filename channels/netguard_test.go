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

// addressCases covers every range the guard knows: an address inside each, and where
// the neighbouring space is public, one just outside on either side.
var addressCases = []struct {
	ip string
	// refused without and with allow_private_network
	refused, refusedWhenAllowed bool
}{
	// allow_private_network opens loopback, RFC 1918 and unique local addresses.
	{"127.0.0.1", true, false},
	{"127.255.255.254", true, false},
	{"126.255.255.255", false, false},
	{"128.0.0.0", false, false},
	{"::1", true, false},
	{"10.0.0.1", true, false},
	{"10.255.255.255", true, false},
	{"9.255.255.255", false, false},
	{"11.0.0.0", false, false},
	{"172.16.0.1", true, false},
	{"172.31.255.255", true, false},
	{"172.15.255.255", false, false},
	{"172.32.0.1", false, false},
	{"192.168.1.1", true, false},
	{"192.168.255.255", true, false},
	{"192.167.255.255", false, false},
	{"192.169.0.0", false, false},
	{"fd12:3456::1", true, false},
	{"fc00::1", true, false},

	// Never: link-local (cloud metadata) and the shared space (Alibaba Cloud's metadata).
	{"169.254.169.254", true, true},
	{"169.254.0.1", true, true},
	{"169.253.255.255", false, false},
	{"169.255.0.0", false, false},
	{"fe80::1", true, true},
	{"febf::1", true, true},
	{"100.64.0.1", true, true},
	{"100.100.100.200", true, true},
	{"100.127.255.255", true, true},
	{"100.63.255.255", false, false},
	{"100.128.0.0", false, false},

	// Never: the rest of the IPv4 special-purpose registry, multicast and reserved.
	{"0.0.0.0", true, true},
	{"0.255.255.255", true, true},
	{"1.0.0.0", false, false},
	{"192.0.0.8", true, true},
	{"192.0.0.170", true, true},
	{"191.255.255.255", false, false},
	{"192.0.1.0", false, false},
	{"192.0.2.1", true, true},
	{"192.0.3.0", false, false},
	{"198.51.100.7", true, true},
	{"198.51.99.255", false, false},
	{"198.51.101.0", false, false},
	{"203.0.113.9", true, true},
	{"203.0.112.255", false, false},
	{"203.0.114.0", false, false},
	{"192.31.196.1", true, true},
	{"192.31.197.0", false, false},
	{"192.175.48.1", true, true},
	{"192.175.49.0", false, false},
	{"192.52.193.1", true, true},
	{"192.52.194.0", false, false},
	{"192.88.99.1", true, true},
	{"192.88.100.0", false, false},
	{"198.18.0.1", true, true},
	{"198.19.255.255", true, true},
	{"198.17.255.255", false, false},
	{"198.20.0.0", false, false},
	{"224.0.0.1", true, true},
	{"239.255.255.255", true, true},
	{"223.255.255.255", false, false},
	{"240.0.0.1", true, true},
	{"255.255.255.255", true, true},

	// Never: IPv6 forms that lead to an IPv4 address, whichever it is.
	{"::ffff:10.1.2.3", true, true},
	{"::ffff:8.8.8.8", true, true},
	{"::8.8.8.8", true, true},
	{"::", true, true},
	{"64:ff9b::8.8.8.8", true, true},
	{"64:ff9b::a9fe:a9fe", true, true},
	{"64:ff9b:1::808:808", true, true},
	{"64:ff9b:1:ffff::1", true, true},
	{"2002:a9fe:a9fe::1", true, true},
	{"2002:808:808::1", true, true},
	{"2001:ffff:ffff::1", false, false},
	{"2003::1", false, false},
	{"2001::1", true, true}, // Teredo

	// Never: the rest of the IPv6 special-purpose registry, multicast and reserved space.
	{"2001:1ff:ffff::1", true, true},
	{"2001:200::1", false, false},
	{"2001:db8::1", true, true},
	{"2001:db7:ffff::1", false, false},
	{"2001:db9::1", false, false},
	{"3fff::1", true, true},
	{"3fff:fff:ffff::1", true, true},
	{"3fff:1000::1", false, false},
	{"2620:4f:8000::1", true, true},
	{"2620:4f:7fff::1", false, false},
	{"2620:4f:8001::1", false, false},
	{"100::1", true, true},
	{"5f00::1", true, true},
	{"fec0::1", true, true},
	{"ff02::1", true, true},
	{"1fff:ffff::1", true, true}, // below 2000::/3: not global unicast
	{"4000::1", true, true},      // above it
	{"2000::1", false, false},
	{"3fff:ffff::1", false, false},

	// Public.
	{"8.8.8.8", false, false},
	{"2001:4860:4860::8888", false, false},
}

func TestAddressRules(t *testing.T) {
	for _, tc := range addressCases {
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
	for addr, want := range map[string]string{
		"10.0.0.5:80":                 "refused to connect: 10.0.0.5 is a private address; enable allow_private_network on the account",
		"[2002:a9fe:a9fe::1]:80":      "6to4 address (leading to 169.254.169.254), which is never allowed",
		"[64:ff9b::a00:5]:80":         "NAT64 address (leading to 10.0.0.5), which is never allowed",
		"[::ffff:169.254.169.254]:80": "IPv4-mapped address (leading to 169.254.169.254), which is never allowed",
	} {
		if err := checkDialAddress(addr, false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("dial check %s: %v, want it to contain %q", addr, err, want)
		}
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
