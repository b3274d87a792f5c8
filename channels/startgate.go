package channels

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http/httptrace"
	"sync/atomic"
)

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
// check that never ran so that it cannot stop a later request on the same connection.
func withStartCheck(ctx context.Context) (context.Context, func()) {
	check := startCheckOf(ctx)
	if check == nil {
		return ctx, func() {}
	}
	bound := &check
	var conns []*gatedConn
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		// Called once per try: the transport may retry a request nothing of which was
		// written on another connection, and the check runs again there.
		if g := gateOf(info.Conn); g != nil {
			g.check.Store(bound)
			conns = append(conns, g)
		}
	}}
	return httptrace.WithClientTrace(ctx, trace), func() {
		for _, g := range conns {
			g.check.CompareAndSwap(bound, nil)
		}
	}
}
