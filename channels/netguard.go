package channels

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Account settings hold URLs and SMTP hosts typed in by people, so every outbound
// connection is checked against the address it actually reaches. The check runs on the
// resolved IP at dial time, after DNS, so a name that resolves (or re-resolves) to an
// internal address is caught as well as a literal one.

// Dial limits. The per-call deadline comes from the caller's context; these only bound
// the steps a healthy peer finishes quickly.
const (
	dialTimeout         = 5 * time.Second
	tlsHandshakeTimeout = 10 * time.Second
	// backstopTimeout ends a call whose context has no deadline. It is well above the
	// worker's per-call deadline, so it never cuts a call the worker would have allowed.
	backstopTimeout = time.Minute
)

// addressRule is one range of addresses outbound connections treat specially.
type addressRule struct {
	prefix netip.Prefix
	kind   string // how refusals describe the address
	// privateOnly marks ranges an account may open up with allow_private_network;
	// the others (metadata services, broadcast, multicast) stay closed to every account.
	privateOnly bool
}

// addressRules lists the refused ranges. Addresses outside them are public and allowed.
var addressRules = []addressRule{
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback address", true},
	{netip.MustParsePrefix("::1/128"), "loopback address", true},
	{netip.MustParsePrefix("10.0.0.0/8"), "private address", true},
	{netip.MustParsePrefix("172.16.0.0/12"), "private address", true},
	{netip.MustParsePrefix("192.168.0.0/16"), "private address", true},
	{netip.MustParsePrefix("fc00::/7"), "private address", true},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT) address", true},
	// Link-local holds cloud metadata services (169.254.169.254), which hand out
	// credentials: no account setting opens it.
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local address", false},
	{netip.MustParsePrefix("fe80::/10"), "link-local address", false},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified address", false},
	{netip.MustParsePrefix("::/128"), "unspecified address", false},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast address", false},
	{netip.MustParsePrefix("ff00::/8"), "multicast address", false},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast address", false},
}

// addressProblem says why ip may not be connected to, or "" if it may.
func addressProblem(ip netip.Addr, allowPrivate bool) string {
	// ::ffff:10.0.0.5 reaches 10.0.0.5, so it is judged as that address.
	ip = ip.Unmap().WithZone("")
	for _, r := range addressRules {
		if !r.prefix.Contains(ip) {
			continue
		}
		if !r.privateOnly {
			return r.kind + ", which is never allowed"
		}
		if allowPrivate {
			return ""
		}
		return r.kind + "; enable allow_private_network on the account"
	}
	return ""
}

// addressRefusal is the guard turning a connection down; its own type lets a
// connection test tell it from other dial failures.
type addressRefusal struct {
	addr    string
	problem string
}

func (e *addressRefusal) Error() string { return "refused to connect to " + e.addr + ": " + e.problem }

// checkDialAddress checks the resolved "ip:port" a dialer is about to connect to.
func checkDialAddress(address string, allowPrivate bool) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		// Control only ever sees numeric addresses; anything else is not trusted.
		return &Error{Class: Permanent, Err: &addressRefusal{addr: address, problem: "not an IP address"}}
	}
	if problem := addressProblem(ap.Addr(), allowPrivate); problem != "" {
		return &Error{Class: Permanent, Err: &addressRefusal{addr: ap.Addr().Unmap().WithZone("").String(), problem: problem}}
	}
	return nil
}

// DialContext returns a dial function whose connections reach only addresses the
// account may use (see allowPrivate). A refused address comes back as a *Error of
// class Permanent naming it; other failures are the dialer's own errors.
func DialContext(allowPrivate bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{
		Timeout:   dialTimeout,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			return checkDialAddress(address, allowPrivate)
		},
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if ce, refused := errors.AsType[*Error](err); refused {
			// The *net.OpError around it only repeats the address.
			return nil, ce
		}
		return conn, err
	}
}

// transports holds one connection pool per address policy, shared by every adapter in
// the process: accounts on the same host share connections, and an account rebuilt
// after an edit does not strand a pool of idle ones.
var transports = sync.OnceValue(func() [2]*http.Transport {
	return [2]*http.Transport{newTransport(false), newTransport(true)}
})

// newTransport returns a transport dialing through the address guard.
func newTransport(allowPrivate bool) *http.Transport {
	return &http.Transport{
		// No proxy: the guard must see the provider's address, not a proxy's.
		Proxy:       nil,
		DialContext: DialContext(allowPrivate),
		// A custom DialContext turns HTTP/2 off unless asked for.
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: tlsHandshakeTimeout,
		// A worker runs about 50 sends at once, mostly to one host per platform; the
		// default of 2 idle connections per host would redial for nearly every send.
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        90 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// NewHTTPClient returns a client whose connections pass the address guard and which
// does not follow redirects: a redirect could lead past the guard's intent to a URL
// nobody configured, so the 3xx answer itself is returned. timeout bounds a whole call
// (0 means none); callers normally leave that to their context.
func NewHTTPClient(allowPrivate bool, timeout time.Duration) *http.Client {
	t := transports()[0]
	if allowPrivate {
		t = transports()[1]
	}
	return &http.Client{
		Transport: t,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// CheckURL validates a URL an account is configured with: http or https, with a host,
// and, when the host is a literal IP, one the account may connect to. Host names are
// checked when dialing, as they may resolve differently later. The error is a message
// for the person editing the account.
func CheckURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return errors.New("is not a valid URL")
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return errors.New("must start with http:// or https://")
	}
	if u.Hostname() == "" {
		return errors.New("must name a host, e.g. https://im.example.com")
	}
	if u.User != nil {
		// Credentials in a URL end up in logs and error messages.
		return errors.New("must not carry credentials; use the token or secret setting")
	}
	return checkHost(u.Hostname(), allowPrivate)
}

// checkHost applies the address rule to a configured host when it is a literal IP.
func checkHost(host string, allowPrivate bool) error {
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return nil // a name: checked at dial time
	}
	if problem := addressProblem(ip, allowPrivate); problem != "" {
		return fmt.Errorf("points to %s, a %s", ip.Unmap().WithZone(""), problem)
	}
	return nil
}
