package channels

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/smtp"
	"net/textproto"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// An email account keeps a few SMTP sessions open and sends message after message on
// them, as mail relays expect of a sender: a relay counts connections per client and
// throttles one that opens a connection, a TLS handshake and a login for every message.
// The client is Go's net/smtp, which already knows every command a session needs (RSET,
// NOOP, QUIT) and whose conversation the connection test shows step by step; a mail
// library would add its own session handling over ours and a second way to classify
// failures, for no command Herald lacks.
//
// A session is reused until it has carried SessionMessages messages (relays cap
// messages per connection), or has been idle for smtpIdleTimeout; one idle for more
// than smtpNoopAfter is checked with NOOP before it is used again. A relay that refuses
// another connection with 421 while the pool has sessions open (Postfix's and
// Exchange's answer to a client over its connection limit, which several worker
// processes of one host reach together) sets the pool's ceiling to the sessions it has
// for smtpLimitHold: the message waits for one of them instead of failing. A session that
// breaks before the end of DATA is dropped and the message tried once more on a fresh
// one; a break after the final dot is ambiguous (the server may have taken the message)
// and is never retried here.

// Pool settings of an email account (its config keys pool_size and session_messages).
// With a relay a round trip away, sessions are what limit an account's rate (a fan-out
// measured at 2 ms: 4 sessions 0.35, 8 sessions 0.6 of a ten-session client's); eight
// keep two worker processes of one host, and the console's connection test, under
// Exchange's default of 20 connections per client (Postfix allows 50), and a relay that
// allows fewer is learnt from its 421.
const (
	DefaultSMTPPoolSize        = 8
	MaxSMTPPoolSize            = 20
	DefaultSMTPSessionMessages = 500
	MaxSMTPSessionMessages     = 10000

	smtpIdleTimeout = 30 * time.Second
	smtpNoopAfter   = 2 * time.Second
	smtpQuitTimeout = 5 * time.Second
)

// smtpLimitHold is how long a ceiling learnt from a relay's refusal holds before the
// pool tries one more session. A variable for the tests.
var smtpLimitHold = time.Minute

// smtpSession is one open, authenticated SMTP conversation.
type smtpSession struct {
	conn      net.Conn // the TCP connection, which carries the deadlines
	c         *smtp.Client
	sent      int  // messages the server took
	used      bool // a transaction was begun, so the next one starts with RSET
	idleSince time.Time
	// pipelining: the server takes RSET, MAIL, RCPT and DATA in one go (RFC 2920).
	pipelining bool
	// mailParams is what MAIL FROM carries after the address for this server, as
	// net/smtp would send it (BODY=8BITMIME, SMTPUTF8).
	mailParams string
}

// learn notes what the server offered in its (last) EHLO answer.
func (s *smtpSession) learn() {
	s.pipelining, _ = s.c.Extension("PIPELINING")
	s.mailParams = ""
	if ok, _ := s.c.Extension("8BITMIME"); ok {
		s.mailParams += " BODY=8BITMIME"
	}
	if ok, _ := s.c.Extension("SMTPUTF8"); ok {
		s.mailParams += " SMTPUTF8"
	}
}

// bind puts ctx's deadline on the connection and moves it to now if ctx is cancelled
// (net/smtp knows nothing of contexts); the function it returns lifts both.
func (s *smtpSession) bind(ctx context.Context) func() {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(backstopTimeout)
	}
	s.conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { s.conn.SetDeadline(time.Now()) })
	return func() {
		stop()
		s.conn.SetDeadline(time.Time{})
	}
}

// close drops the connection without a word.
func (s *smtpSession) close() {
	if s.c != nil {
		s.c.Close()
		return
	}
	s.conn.Close()
}

// quit ends the session politely, within smtpQuitTimeout.
func (s *smtpSession) quit() {
	s.conn.SetDeadline(time.Now().Add(smtpQuitTimeout))
	s.c.Quit()
	s.close()
}

// smtpPool holds an account's sessions: at most size open at once.
type smtpPool struct {
	e           *Email
	maxMessages int
	slots       chan struct{} // a token for each session that may be open

	mu      sync.Mutex
	idle    []*smtpSession // the most recently used last
	reaping bool
	// generation moves on at closeAll: a session taken before comes back to be closed.
	generation int
	// open counts the sessions open or being opened, idle or in use.
	open int
	// limit is the ceiling the relay set by refusing a session, until limitUntil.
	limit      int
	limitUntil time.Time
	// waiters are the sends waiting, under a learnt ceiling, for a session to be handed
	// over (or for nil: a session closed, so one may be opened).
	waiters []chan handover

	// opened counts the connections opened; waits the sends that waited under a learnt
	// ceiling. Both for /metrics, the tests and the benchmark.
	opened, waits atomic.Int64
}

// SMTPPoolStats is what an email account's session pool in this process holds and has
// done since its sender was built (an edit of the account builds a new one).
type SMTPPoolStats struct {
	Account string // the account's name
	Open    int    // sessions open or being opened, idle or in use
	Limit   int    // the ceiling a relay's 421 set, while it holds; 0 when none
	Opened  int64  // connections opened
	Waits   int64  // sends that waited for a session under the ceiling
}

// stats reads the pool's figures; the caller names the account.
func (p *smtpPool) stats() SMTPPoolStats {
	p.mu.Lock()
	st := SMTPPoolStats{Open: p.open}
	if time.Now().Before(p.limitUntil) {
		st.Limit = p.limit
	}
	p.mu.Unlock()
	st.Opened, st.Waits = p.opened.Load(), p.waits.Load()
	return st
}

// handover is a session passed from a send that finished to one that waits.
type handover struct {
	s          *smtpSession
	generation int
}

func newSMTPPool(e *Email, size, maxMessages int) *smtpPool {
	return &smtpPool{e: e, maxMessages: maxMessages, slots: make(chan struct{}, size)}
}

// send delivers one message on a pooled session. Its errors are for classifySMTP.
func (p *smtpPool) send(ctx context.Context, to string, msg []byte) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, backstopTimeout)
		defer cancel()
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting for an SMTP session: %w", ctx.Err())
	}
	defer func() { <-p.slots }()
	s, generation, reused, err := p.take(ctx)
	if err != nil {
		return err
	}
	reusable, beforeEnd, err := transfer(ctx, s, p.e.from.Address, to, msg)
	if err != nil && !reusable && beforeEnd && reused && ctx.Err() == nil {
		// The session had gone stale while it waited: the message never reached the
		// server, so it goes once more, on a fresh session.
		s.close()
		if s, err = p.e.open(ctx, nil); err != nil {
			p.closed()
			return err
		}
		reusable, _, err = transfer(ctx, s, p.e.from.Address, to, msg)
	}
	p.put(s, generation, reusable)
	return err
}

// take returns an idle session that still answers, a new one, or, while the relay's
// ceiling is reached, the next session another send hands back.
func (p *smtpPool) take(ctx context.Context) (s *smtpSession, generation int, reused bool, err error) {
	waited := false
	for {
		p.mu.Lock()
		generation = p.generation
		if n := len(p.idle); n > 0 {
			s = p.idle[n-1]
			p.idle = p.idle[:n-1]
			p.mu.Unlock()
			if p.answers(ctx, s) {
				return s, generation, true, nil
			}
			continue
		}
		if p.open >= p.limit && p.open > 0 && time.Now().Before(p.limitUntil) {
			w := make(chan handover, 1)
			p.waiters = append(p.waiters, w)
			p.mu.Unlock()
			if !waited {
				waited = true
				p.waits.Add(1)
			}
			h, err := p.wait(ctx, w)
			if err != nil {
				return nil, 0, false, err
			}
			if h.s != nil {
				return h.s, h.generation, true, nil
			}
			continue
		}
		p.open++
		p.mu.Unlock()
		s, err = p.e.open(ctx, nil)
		if err == nil {
			return s, generation, false, nil
		}
		p.mu.Lock()
		p.open--
		refused := refusedSession(err) && p.open > 0
		if refused {
			p.limit, p.limitUntil = p.open, time.Now().Add(smtpLimitHold)
		}
		p.mu.Unlock()
		if !refused {
			p.wake()
			return nil, 0, false, err
		}
	}
}

// answers reports whether an idle session can carry a message: not idle too long, and
// answering NOOP after a pause. One that cannot is ended.
func (p *smtpPool) answers(ctx context.Context, s *smtpSession) bool {
	idle := time.Since(s.idleSince)
	if idle >= smtpIdleTimeout {
		p.closed()
		go s.quit()
		return false
	}
	if idle >= smtpNoopAfter {
		release := s.bind(ctx)
		err := s.c.Noop()
		release()
		if err != nil {
			p.closed()
			s.close()
			return false
		}
	}
	return true
}

// wait waits for a handover on w, or for ctx to end; then w is no longer listed.
func (p *smtpPool) wait(ctx context.Context, w chan handover) (handover, error) {
	select {
	case h := <-w:
		return h, nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	listed := slices.Contains(p.waiters, w)
	p.waiters = slices.DeleteFunc(p.waiters, func(c chan handover) bool { return c == w })
	p.mu.Unlock()
	if !listed {
		// Handed over as ctx ended: pass it on.
		if h := <-w; h.s != nil {
			p.put(h.s, h.generation, true)
		} else {
			p.wake()
		}
	}
	return handover{}, fmt.Errorf("waiting for an SMTP session: %w", ctx.Err())
}

// refusedSession reports whether opening a session failed on the relay's 421: it takes
// no more connections from this client for now.
func refusedSession(err error) bool {
	te, ok := errors.AsType[*textproto.Error](err)
	return ok && te.Code == 421
}

// closed counts a session gone and lets a waiting send open one in its place.
func (p *smtpPool) closed() {
	p.mu.Lock()
	p.open--
	p.handOff(handover{})
	p.mu.Unlock()
}

// wake tells the first waiting send, if any, that it may open a session.
func (p *smtpPool) wake() {
	p.mu.Lock()
	p.handOff(handover{})
	p.mu.Unlock()
}

// handOff gives h to the first waiting send, if any, and reports whether one took it: a
// session to carry its message, or with none, leave to open one. Call it with mu held.
func (p *smtpPool) handOff(h handover) bool {
	if len(p.waiters) == 0 {
		return false
	}
	w := p.waiters[0]
	p.waiters = p.waiters[1:]
	w <- h // buffered: the waiter reads it even if its wait has just ended
	return true
}

// put gives a session back after a send: kept for the next one while it is usable, has
// room for more messages and belongs to the current generation; else ended.
func (p *smtpPool) put(s *smtpSession, generation int, reusable bool) {
	if !reusable {
		p.closed()
		s.close()
		return
	}
	p.mu.Lock()
	if s.sent >= p.maxMessages || generation != p.generation {
		p.mu.Unlock()
		p.closed()
		go s.quit()
		return
	}
	if p.handOff(handover{s, generation}) {
		p.mu.Unlock()
		return
	}
	s.idleSince = time.Now()
	p.idle = append(p.idle, s)
	if !p.reaping {
		p.reaping = true
		time.AfterFunc(smtpIdleTimeout, p.reap)
	}
	p.mu.Unlock()
}

// reap ends the sessions idle for smtpIdleTimeout, and looks again later while any
// session is idle.
func (p *smtpPool) reap() {
	p.mu.Lock()
	var keep, stale []*smtpSession
	for _, s := range p.idle {
		if time.Since(s.idleSince) >= smtpIdleTimeout {
			stale = append(stale, s)
		} else {
			keep = append(keep, s)
		}
	}
	p.idle = keep
	p.reaping = len(keep) > 0
	if p.reaping {
		time.AfterFunc(smtpIdleTimeout, p.reap)
	}
	p.open -= len(stale)
	p.mu.Unlock()
	for _, s := range stale {
		s.quit()
	}
}

// closeAll ends every idle session with QUIT and has the ones in use ended when they
// come back.
func (p *smtpPool) closeAll() {
	p.mu.Lock()
	p.generation++
	idle := p.idle
	p.idle = nil
	p.open -= len(idle)
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range idle {
		wg.Go(s.quit)
	}
	wg.Wait()
}

// transfer sends one message on a session: RSET after an earlier transaction, MAIL, RCPT,
// DATA and the message. It reports whether the session may carry another message and
// whether a failure came before the end of DATA, when the server had not yet taken the
// message (a session that failed that way is worth one more try on a fresh one).
func transfer(ctx context.Context, s *smtpSession, from, to string, msg []byte) (reusable, beforeEnd bool, err error) {
	release := s.bind(ctx)
	defer release()
	var w io.WriteCloser
	if s.pipelining {
		w, reusable, beforeEnd, err = s.beginPipelined(from, to)
	} else {
		w, reusable, beforeEnd, err = s.begin(from, to)
	}
	if err != nil {
		return reusable, beforeEnd, err
	}
	if _, err := w.Write(msg); err != nil {
		return false, true, fmt.Errorf("sending the message: %w", err)
	}
	// Close sends the final dot; the server's verdict on the message follows.
	w.Close()
	if _, _, err := s.c.Text.ReadResponse(250); err != nil {
		if usableAfter(err) {
			return true, false, fmt.Errorf("end of DATA: %w", err)
		}
		return false, false, &smtpAmbiguousError{err}
	}
	s.sent++
	return true, false, nil
}

// begin opens a transaction one command at a time, each answer awaited: what a server
// without PIPELINING needs. It returns the writer of the message's data.
func (s *smtpSession) begin(from, to string) (w io.WriteCloser, reusable, beforeEnd bool, err error) {
	step := func(what string, err error) (io.WriteCloser, bool, bool, error) {
		return nil, usableAfter(err), true, fmt.Errorf("%s: %w", what, err)
	}
	if s.used {
		if err := s.c.Reset(); err != nil {
			return step("RSET", err)
		}
	}
	s.used = true
	if err := s.c.Mail(from); err != nil {
		return step("MAIL FROM", err)
	}
	if err := s.c.Rcpt(to); err != nil {
		return step("RCPT TO", err)
	}
	if err := s.c.Text.PrintfLine("DATA"); err != nil {
		return step("DATA", err)
	}
	if _, _, err := s.c.Text.ReadResponse(354); err != nil {
		return step("DATA", err)
	}
	return s.c.Text.DotWriter(), true, true, nil
}

// beginPipelined opens a transaction with RSET (after an earlier one), MAIL, RCPT and
// DATA in one write, then reads their answers in order (RFC 2920): one round trip where
// begin takes four, which is what a relay a few milliseconds away makes of a session's
// speed. A refusal is reported for the command that was refused; the server answers
// the commands after it too (DATA with a refusal when no recipient was taken).
func (s *smtpSession) beginPipelined(from, to string) (w io.WriteCloser, reusable, beforeEnd bool, err error) {
	if strings.ContainsAny(from+to, "\r\n") {
		return nil, true, true, errors.New("smtp: an address must not contain CR or LF")
	}
	type command struct {
		name string
		want int // the answer's code, or its first digits
	}
	cmds := make([]command, 0, 4)
	t := s.c.Text
	if s.used {
		t.W.WriteString("RSET\r\n")
		cmds = append(cmds, command{"RSET", 250})
	}
	s.used = true
	fmt.Fprintf(t.W, "MAIL FROM:<%s>%s\r\nRCPT TO:<%s>\r\nDATA\r\n", from, s.mailParams, to)
	cmds = append(cmds, command{"MAIL FROM", 250}, command{"RCPT TO", 25}, command{"DATA", 354})
	if err := t.W.Flush(); err != nil {
		return nil, false, true, fmt.Errorf("%s: %w", cmds[0].name, err)
	}
	var refused error
	dataTaken := false
	for _, c := range cmds {
		_, _, err := t.ReadResponse(c.want)
		if err == nil {
			dataTaken = c.name == "DATA"
			continue
		}
		if !usableAfter(err) {
			// The connection failed, or the server is closing it (421).
			return nil, false, true, fmt.Errorf("%s: %w", c.name, err)
		}
		if refused == nil {
			refused = fmt.Errorf("%s: %w", c.name, err)
		}
	}
	switch {
	case refused != nil && dataTaken:
		// A server that refused the sender or every recipient yet took DATA waits for
		// a message: end the session rather than send one.
		return nil, false, true, refused
	case refused != nil:
		return nil, true, true, refused
	}
	return t.DotWriter(), true, true, nil
}

// usableAfter reports whether a session can go on after err: a server's refusal leaves
// it open (RSET starts over), except 421, with which the server closes it.
func usableAfter(err error) bool {
	te, ok := errors.AsType[*textproto.Error](err)
	return ok && te.Code != 421
}

// smtpAmbiguousError is a connection lost after the final dot of DATA, before the
// server's answer: the server may have taken the message.
type smtpAmbiguousError struct{ err error }

func (e *smtpAmbiguousError) Error() string {
	return "the connection was lost after the end of DATA, before the server answered: the message may have been delivered, so it is not sent again on its own: " + e.err.Error()
}
func (e *smtpAmbiguousError) Unwrap() error { return e.err }
