package channels

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptrace"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Registry builds and caches one Sender per account. An account edited since its sender
// was built gets a new one.
type Registry struct {
	sandbox Sender

	mu      sync.Mutex
	senders map[int64]cachedSender
}

type cachedSender struct {
	name      string // the account's
	updatedAt time.Time
	sender    Sender
}

// NewRegistry returns a registry; sandbox is the sender behind the sandbox platform, the
// in-process simulator (nil disables that platform). A sandbox that is also a Prober
// answers the connection test.
func NewRegistry(sandbox Sender) *Registry {
	return &Registry{sandbox: sandbox, senders: map[int64]cachedSender{}}
}

// Sender returns the sender for an account.
func (r *Registry) Sender(a Account) (Sender, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.senders[a.ID]
	if ok && old.updatedAt.Equal(a.UpdatedAt) {
		return old.sender, nil
	}
	s, err := r.build(a)
	if err != nil {
		return nil, err
	}
	r.senders[a.ID] = cachedSender{name: a.Name, updatedAt: a.UpdatedAt, sender: s}
	if ok {
		// The account was edited: the old sender's open sessions (email) go, so nothing
		// is sent any more with settings that changed.
		go closeSender(old.sender)
	}
	return s, nil
}

// Close ends what every sender holds open (email sessions, with QUIT). Senders asked
// for later open again.
func (r *Registry) Close() {
	r.mu.Lock()
	senders := r.senders
	r.senders = map[int64]cachedSender{}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range senders {
		wg.Go(func() { closeSender(c.sender) })
	}
	wg.Wait()
}

// SMTPPools reports the session pool of every email account this registry has a sender
// for, by account name.
func (r *Registry) SMTPPools() []SMTPPoolStats {
	r.mu.Lock()
	var out []SMTPPoolStats
	for _, c := range r.senders {
		if e, ok := c.sender.(*Email); ok {
			st := e.pool.stats()
			st.Account = c.name
			out = append(out, st)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b SMTPPoolStats) int { return cmp.Compare(a.Account, b.Account) })
	return out
}

// closeSender closes a sender that holds something open.
func closeSender(s Sender) {
	if c, ok := s.(io.Closer); ok {
		c.Close()
	}
}

// build constructs the adapter for an account, after checking its config as it is
// checked at save time: a sender is never built from settings that could not be saved.
func (r *Registry) build(a Account) (Sender, error) {
	p, ok := platforms[a.Platform]
	if !ok {
		return nil, &problemError{prefix: "channels: account " + a.Name + ": ", note: note("channels.probe.no_adapter", "Platform", a.Platform)}
	}
	if err := ValidateConfig(a.Platform, a.Config, a.AllowPrivateNetwork); err != nil {
		return nil, fmt.Errorf("channels: account %s: %w", a.Name, err)
	}
	return p.build(r, a)
}

// ErrLateStart is what a call fails with when its start check refused it at the last
// moment: nothing of the request was written, so the platform saw nothing.
var ErrLateStart = errors.New("the call was stopped before its first byte: its admission had gone stale")

// StartCheck decides, at the moment a request's first byte is about to be written,
// whether the call may still start. The limiter's admission is the example: it holds
// only for a short time after it was granted, and a worker starved of CPU between the
// admission and the write would otherwise send into a later window.
type StartCheck func() error

type startCheckKey struct{}

// WithStartCheck returns ctx carrying check. Every HTTP request an adapter makes with
// that context runs it just before its first byte leaves (the connection's first Write
// of the request); when it returns an error, nothing is written and the call fails
// with ErrLateStart, which the caller may treat as "never made". Adapters that do not
// speak HTTP (email over SMTP) do not run it: the caller's own check at admission is
// all they get.
func WithStartCheck(ctx context.Context, check StartCheck) context.Context {
	return context.WithValue(ctx, startCheckKey{}, check)
}

// startCheckOf is the check ctx carries, or nil.
func startCheckOf(ctx context.Context) StartCheck {
	c, _ := ctx.Value(startCheckKey{}).(StartCheck)
	return c
}

// gatedConn is a connection of the adapters' transports. A request that carries a
// start check binds it to the connection it got (httptrace's GotConn); the
// connection's next Write, the request's first byte, runs it. The transports speak
// HTTP/1.1 only (see newTransport), so a connection carries one request at a time and
// the next Write after GotConn is that request's.
type gatedConn struct {
	net.Conn
	check atomic.Pointer[StartCheck]
}

// Write runs the check bound to the connection, once, before the bytes go.
func (c *gatedConn) Write(b []byte) (int, error) {
	if check := c.check.Swap(nil); check != nil {
		if err := (*check)(); err != nil {
			return 0, errors.Join(ErrLateStart, err)
		}
	}
	return c.Conn.Write(b)
}

// gateOf finds the gated connection under what the transport reports (the TLS
// connection around it for https).
func gateOf(c net.Conn) *gatedConn {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	g, _ := c.(*gatedConn)
	return g
}

// withStartCheck arranges for ctx's start check, if any, to run at the request's first
// byte. The returned release, called once the request was written or failed, unbinds a
// check that never ran so that it cannot stop a later request on the same connection,
// and returns the check's refusal, if it refused: net/http may report the connection's
// closing (its reader's "use of closed network connection") rather than the write's
// error, so the refusal is kept here rather than read from the transport's error.
func withStartCheck(ctx context.Context) (context.Context, func() error) {
	check := startCheckOf(ctx)
	if check == nil {
		return ctx, func() error { return nil }
	}
	var refused atomic.Pointer[error]
	recording := StartCheck(func() error {
		err := check()
		if err != nil {
			refused.Store(&err)
		}
		return err
	})
	bound := &recording
	var conns []*gatedConn
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		// Called once per try: the transport may retry a request nothing of which was
		// written on another connection, and the check runs again there.
		if g := gateOf(info.Conn); g != nil {
			g.check.Store(bound)
			conns = append(conns, g)
		}
	}}
	return httptrace.WithClientTrace(ctx, trace), func() error {
		for _, g := range conns {
			g.check.CompareAndSwap(bound, nil)
		}
		if err := refused.Load(); err != nil {
			return errors.Join(ErrLateStart, *err)
		}
		return nil
	}
}
