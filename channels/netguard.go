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
	// the others (metadata services, translation prefixes, reserved space) stay
	// closed to every account.
	privateOnly bool
	// ipv4At is where in the address an embedded IPv4 address starts (a byte offset),
	// for the translation and tunnelling ranges whose refusals name it; 0 for none.
	ipv4At int
}

// rule builds one addressRule.
func rule(prefix, kind string, privateOnly bool) addressRule {
	return addressRule{prefix: netip.MustParsePrefix(prefix), kind: kind, privateOnly: privateOnly}
}

// embedding builds the rule of a range whose addresses carry an IPv4 address at byte at.
func embedding(prefix, kind string, at int) addressRule {
	return addressRule{prefix: netip.MustParsePrefix(prefix), kind: kind, ipv4At: at}
}

// addressRules lists the refused ranges: the private networks an account may open up,
// then IANA's IPv4 and IPv6 special-purpose address registries, multicast, and the
// deprecated IPv6 forms. The first rule containing an address decides, so a narrower
// range comes before a wider one holding it. An address outside them all is allowed
// only if it is global unicast (IPv6 outside 2000::/3 is not; see addressProblem).
var addressRules = []addressRule{
	// What allow_private_network opens: loopback, RFC 1918 and unique local addresses.
	rule("127.0.0.0/8", "loopback address", true),
	rule("::1/128", "loopback address", true),
	rule("10.0.0.0/8", "private address", true),
	rule("172.16.0.0/12", "private address", true),
	rule("192.168.0.0/16", "private address", true),
	rule("fc00::/7", "private address", true),

	// Link-local holds cloud metadata services (169.254.169.254) and the shared space
	// holds Alibaba Cloud's (100.100.100.200); they hand out credentials.
	rule("169.254.0.0/16", "link-local address", false),
	rule("fe80::/10", "link-local address", false),
	rule("100.64.0.0/10", "shared (CGNAT) address", false),

	// The rest of IANA's IPv4 special-purpose registry.
	rule("0.0.0.0/8", "unspecified address", false),
	rule("192.0.0.0/24", "IETF protocol address", false),
	rule("192.0.2.0/24", "documentation address", false),
	rule("198.51.100.0/24", "documentation address", false),
	rule("203.0.113.0/24", "documentation address", false),
	rule("192.31.196.0/24", "AS112 address", false),
	rule("192.175.48.0/24", "AS112 address", false),
	rule("192.52.193.0/24", "AMT relay address", false),
	rule("192.88.99.0/24", "6to4 relay address", false),
	rule("198.18.0.0/15", "benchmarking address", false),
	rule("224.0.0.0/4", "multicast address", false),
	rule("240.0.0.0/4", "reserved address", false), // with 255.255.255.255, broadcast

	// The rest of IANA's IPv6 special-purpose registry. The translation and tunnelling
	// prefixes lead to an IPv4 address past the IPv4 rules above, whatever it is; the
	// local-use NAT64 prefix may embed it at several places, so it is not named.
	rule("::/128", "unspecified address", false),
	embedding("::ffff:0:0/96", "IPv4-mapped address", 12),
	embedding("::/96", "IPv4-compatible address", 12),
	embedding("64:ff9b::/96", "NAT64 address", 12),
	rule("64:ff9b:1::/48", "NAT64 address", false),
	embedding("2002::/16", "6to4 address", 2),
	rule("2001::/32", "Teredo address", false),
	rule("2001::/23", "IETF protocol address", false),
	rule("2001:db8::/32", "documentation address", false),
	rule("3fff::/20", "documentation address", false),
	rule("2620:4f:8000::/48", "AS112 address", false),
	rule("100::/64", "discard-only address", false),
	rule("5f00::/16", "segment routing address", false),
	rule("fec0::/10", "site-local address", false),
	rule("ff00::/8", "multicast address", false),
}

// globalUnicast6 is the IPv6 space IANA allocates for global unicast; the rest is
// reserved.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// addressProblem says why ip may not be connected to, or "" if it may.
func addressProblem(ip netip.Addr, allowPrivate bool) string {
	ip = ip.WithZone("")
	for _, r := range addressRules {
		if !r.prefix.Contains(ip) {
			continue
		}
		kind := r.kind
		if r.ipv4At > 0 {
			b := ip.As16()
			kind += " (leading to " + netip.AddrFrom4([4]byte(b[r.ipv4At:r.ipv4At+4])).String() + ")"
		}
		if !r.privateOnly {
			return kind + ", which is never allowed"
		}
		if allowPrivate {
			return ""
		}
		return kind + "; enable allow_private_network on the account"
	}
	if ip.Is6() && !globalUnicast6.Contains(ip) {
		return "reserved address, which is never allowed"
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
		return &Error{Class: Permanent, Err: &addressRefusal{addr: ap.Addr().WithZone("").String(), problem: problem}}
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
		return fmt.Errorf("points to %s (%s)", ip.WithZone(""), problem)
	}
	return nil
}
