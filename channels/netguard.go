package channels

import (
	"context"
	"errors"
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
	// kind names the range in refusals: the catalog key channels.address.<kind>, which
	// says what the address is and whether any setting allows it.
	kind string
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
	rule("127.0.0.0/8", "loopback", true),
	rule("::1/128", "loopback", true),
	rule("10.0.0.0/8", "private", true),
	rule("172.16.0.0/12", "private", true),
	rule("192.168.0.0/16", "private", true),
	rule("fc00::/7", "private", true),

	// Link-local holds cloud metadata services (169.254.169.254) and the shared space
	// holds Alibaba Cloud's (100.100.100.200); they hand out credentials.
	rule("169.254.0.0/16", "link_local", false),
	rule("fe80::/10", "link_local", false),
	rule("100.64.0.0/10", "shared", false),

	// The rest of IANA's IPv4 special-purpose registry.
	rule("0.0.0.0/8", "unspecified", false),
	rule("192.0.0.0/24", "ietf", false),
	rule("192.0.2.0/24", "documentation", false),
	rule("198.51.100.0/24", "documentation", false),
	rule("203.0.113.0/24", "documentation", false),
	rule("192.31.196.0/24", "as112", false),
	rule("192.175.48.0/24", "as112", false),
	rule("192.52.193.0/24", "amt_relay", false),
	rule("192.88.99.0/24", "relay_6to4", false),
	rule("198.18.0.0/15", "benchmarking", false),
	rule("224.0.0.0/4", "multicast", false),
	rule("240.0.0.0/4", "reserved", false), // with 255.255.255.255, broadcast

	// The rest of IANA's IPv6 special-purpose registry. The translation and tunnelling
	// prefixes lead to an IPv4 address past the IPv4 rules above, whatever it is; the
	// local-use NAT64 prefix may embed it at several places, so it is not named.
	rule("::/128", "unspecified", false),
	embedding("::ffff:0:0/96", "ipv4_mapped", 12),
	embedding("::/96", "ipv4_compatible", 12),
	embedding("64:ff9b::/96", "nat64_to", 12),
	rule("64:ff9b:1::/48", "nat64", false),
	embedding("2002::/16", "to_6to4", 2),
	rule("2001::/32", "teredo", false),
	rule("2001::/23", "ietf", false),
	rule("2001:db8::/32", "documentation", false),
	rule("3fff::/20", "documentation", false),
	rule("2620:4f:8000::/48", "as112", false),
	rule("100::/64", "discard_only", false),
	rule("5f00::/16", "segment_routing", false),
	rule("fec0::/10", "site_local", false),
	rule("ff00::/8", "multicast", false),
}

// globalUnicast6 is the IPv6 space IANA allocates for global unicast; the rest is
// reserved.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// addressProblem says why ip may not be connected to (e.g. "10.0.0.5 is a private
// address; enable allow_private_network on the account"), or a zero Note if it may.
func addressProblem(ip netip.Addr, allowPrivate bool) Note {
	ip = ip.WithZone("")
	for _, r := range addressRules {
		if !r.prefix.Contains(ip) {
			continue
		}
		if r.privateOnly && allowPrivate {
			return Note{}
		}
		if r.ipv4At > 0 {
			b := ip.As16()
			return note("channels.address."+r.kind, "IP", ip.String(), "IPv4", netip.AddrFrom4([4]byte(b[r.ipv4At:r.ipv4At+4])).String())
		}
		return note("channels.address."+r.kind, "IP", ip.String())
	}
	if ip.Is6() && !globalUnicast6.Contains(ip) {
		return note("channels.address.reserved", "IP", ip.String())
	}
	return Note{}
}

// addressRefusal is the guard turning a connection down; its own type lets a
// connection test tell it from other dial failures.
type addressRefusal struct {
	problem Note // says what the address is and why it is refused
}

func (e *addressRefusal) Error() string { return "refused to connect: " + e.problem.String() }

// checkDialAddress checks the resolved "ip:port" a dialer is about to connect to.
func checkDialAddress(address string, allowPrivate bool) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		// Control only ever sees numeric addresses; anything else is not trusted.
		return &Error{Class: Permanent, Err: &addressRefusal{problem: note("channels.address.not_ip", "IP", address)}}
	}
	if problem := addressProblem(ap.Addr(), allowPrivate); !problem.IsZero() {
		return &Error{Class: Permanent, Err: &addressRefusal{problem: problem}}
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

// gatedDial makes every connection dial returns run the start check of the request
// that uses it (startgate.go).
func gatedDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &gatedConn{Conn: conn}, nil
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
		DialContext: gatedDial(DialContext(allowPrivate)),
		// HTTP/1.1 only (a custom DialContext turns HTTP/2 off unless asked for): a
		// connection carries one request at a time, so a request's start check runs at
		// its own first byte (startgate.go). HTTP/2 would interleave several requests'
		// frames on one connection, and a check could not tell whose byte goes first.
		ForceAttemptHTTP2:   false,
		TLSHandshakeTimeout: tlsHandshakeTimeout,
		// A worker runs up to its concurrency times eight sends at once (a chunk task
		// delivers eight of its messages at a time), mostly to one host per platform: an
		// idle pool smaller than that closes connections after use and dials new ones for
		// the next sends (a tenth of a worker's CPU in a fan-out at 50 × 8, measured).
		MaxIdleConns:           2048,
		MaxIdleConnsPerHost:    1024,
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
// checked when dialing, as they may resolve differently later. The error's text is a
// message for the person editing the account, in English (ValidateConfig gives it in
// their language).
func CheckURL(raw string, allowPrivate bool) error {
	if problem := urlProblem(raw, allowPrivate); !problem.IsZero() {
		return &problemError{note: problem}
	}
	return nil
}

// urlProblem says what is wrong with a configured URL (see CheckURL), or a zero Note.
func urlProblem(raw string, allowPrivate bool) Note {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return note("channels.config.url_invalid")
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return note("channels.config.url_scheme")
	}
	if u.Hostname() == "" {
		return note("channels.config.url_host")
	}
	if u.User != nil {
		// Credentials in a URL end up in logs and error messages.
		return note("channels.config.url_credentials")
	}
	return hostProblem(u.Hostname(), allowPrivate)
}

// hostProblem applies the address rule to a configured host when it is a literal IP;
// a zero Note when it passes or is a name (checked at dial time).
func hostProblem(host string, allowPrivate bool) Note {
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return Note{}
	}
	return addressProblem(ip, allowPrivate)
}
