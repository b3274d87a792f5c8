package simulator

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// ServeSMTP accepts SMTP connections on ln until ln is closed, then closes the sessions
// still open, waits for them to end and returns nil. Any other accept error is returned.
//
// The sink speaks plain SMTP (no STARTTLS) with AUTH PLAIN and LOGIN, and records one
// Delivery per recipient. Each mail transaction is one fault draw, taken at MAIL FROM:
// an auth fault refuses MAIL (530 without AUTH, 535 after it; AUTH itself answers 535
// while AuthFail is set), a reject fault refuses every RCPT with 550, and the others
// act on the final dot of DATA: fail answers 451 and keeps the session, throttle answers
// 421 and closes the connection as RFC 5321 prescribes for that code, and the timeouts
// never answer until the client leaves.
func (s *Simulator) ServeSMTP(ln net.Listener) error {
	var (
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
		wg    sync.WaitGroup
	)
	defer func() {
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()

	var backoff time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Running out of file descriptors under load is temporary: back off as
			// net/http does instead of stopping the sink.
			if temp, ok := err.(interface{ Temporary() bool }); ok && temp.Temporary() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("simulator: smtp accept: %w", err)
		}
		backoff = 0
		mu.Lock()
		conns[conn] = struct{}{}
		mu.Unlock()
		wg.Go(func() {
			defer func() {
				mu.Lock()
				delete(conns, conn)
				mu.Unlock()
				conn.Close()
			}()
			s.serveSMTPConn(conn)
		})
	}
}
