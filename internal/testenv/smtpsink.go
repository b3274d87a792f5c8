package testenv

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"herald/channels"
)

// SMTPSink is a real SMTP server (github.com/emersion/go-smtp, which offers PIPELINING)
// on loopback that takes every message and counts what clients do: connections opened,
// messages taken, the session commands RSET, NOOP and QUIT, and transactions begun in
// one write. Tests and the email benchmark send to it.
type SMTPSink struct {
	Addr string
	rtt  time.Duration

	srv       *smtp.Server
	conns     atomic.Int64
	messages  atomic.Int64
	loseAfter atomic.Bool
	// maxConns, when above 0, is how many connections the sink takes at once; refused
	// counts the ones it turned away, and most is the most it had open at once.
	maxConns atomic.Int64
	refused  atomic.Int64
	most     atomic.Int64
	// pipelined counts reads that brought MAIL, RCPT and DATA (upper case) together.
	pipelined atomic.Int64

	mu       sync.Mutex
	commands map[string]int
	kept     [][]byte
	live     map[net.Conn]bool
	refuse   map[string]bool
}

// keptMessages is how many messages the sink keeps whole, for tests to read back.
const keptMessages = 1000

// StartSMTPSink starts a sink that stops when the test ends.
func StartSMTPSink(t testing.TB) *SMTPSink { return StartSMTPSinkAfter(t, 0) }

// StartSMTPSinkAfter starts a sink whose every answer reaches the client rtt after the
// server wrote it, as if the relay were a round trip of rtt away; answers in flight
// overlap, as they would on a network, so a client that pipelines its commands waits
// one rtt for a group of answers.
func StartSMTPSinkAfter(t testing.TB, rtt time.Duration) *SMTPSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &SMTPSink{Addr: ln.Addr().String(), rtt: rtt, commands: map[string]int{}, live: map[net.Conn]bool{}, refuse: map[string]bool{}}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &sinkSession{sink: s, conn: c.Conn()}, nil
	}))
	s.srv.Domain = "sink.test"
	s.srv.AllowInsecureAuth = true
	s.srv.ErrorLog = discardLogger{}
	go s.srv.Serve(&sinkListener{Listener: ln, sink: s})
	t.Cleanup(func() { s.srv.Close() })
	return s
}

// Connections counts the connections clients opened.
func (s *SMTPSink) Connections() int { return int(s.conns.Load()) }

// Messages counts the messages taken.
func (s *SMTPSink) Messages() int { return int(s.messages.Load()) }

// Commands counts how often clients sent a session command (RSET, NOOP, QUIT).
func (s *SMTPSink) Commands(verb string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commands[verb]
}

// Pipelined counts the transactions whose MAIL, RCPT and DATA commands reached the
// server in one read: sent together, without waiting for each answer (RFC 2920).
func (s *SMTPSink) Pipelined() int { return int(s.pipelined.Load()) }

// LimitConnections makes the sink take at most n connections at once (0: any number),
// answering one more with 421 and closing it, as Postfix and Exchange answer a client
// over their connection limit.
func (s *SMTPSink) LimitConnections(n int) { s.maxConns.Store(int64(n)) }

// Refused counts the connections turned away by LimitConnections.
func (s *SMTPSink) Refused() int { return int(s.refused.Load()) }

// MostConnections is the most connections the sink had open at once.
func (s *SMTPSink) MostConnections() int { return int(s.most.Load()) }

// RefuseRecipient makes the sink answer RCPT TO:<addr> with 550.
func (s *SMTPSink) RefuseRecipient(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse[addr] = true
}

// Message returns the i-th message taken (of the first thousand), as it arrived.
func (s *SMTPSink) Message(i int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.kept) {
		return nil
	}
	return s.kept[i]
}

// DropAll closes every open connection from the server's side, without a word.
func (s *SMTPSink) DropAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.live {
		c.Close()
	}
}

// LoseAfterData makes the sink read a message to its final dot and then close the
// connection instead of answering: the client cannot know whether it was taken.
func (s *SMTPSink) LoseAfterData(on bool) { s.loseAfter.Store(on) }

type sinkSession struct {
	sink *SMTPSink
	conn net.Conn
}

func (*sinkSession) Reset()                               {}
func (*sinkSession) Logout() error                        { return nil }
func (*sinkSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.sink.mu.Lock()
	defer s.sink.mu.Unlock()
	if s.sink.refuse[to] {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}
	}
	return nil
}
func (*sinkSession) AuthMechanisms() []string { return nil }
func (s *sinkSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if s.sink.loseAfter.Load() {
		s.conn.Close()
		return nil
	}
	s.sink.messages.Add(1)
	s.sink.mu.Lock()
	if len(s.sink.kept) < keptMessages {
		s.sink.kept = append(s.sink.kept, b)
	}
	s.sink.mu.Unlock()
	return nil
}

// sinkListener counts connections and watches what clients send on them.
type sinkListener struct {
	net.Listener
	sink *SMTPSink
}

func (l *sinkListener) Accept() (net.Conn, error) {
	var c net.Conn
	for {
		var err error
		if c, err = l.Listener.Accept(); err != nil {
			return nil, err
		}
		l.sink.conns.Add(1)
		l.sink.mu.Lock()
		full := l.sink.maxConns.Load() > 0 && int64(len(l.sink.live)) >= l.sink.maxConns.Load()
		if !full {
			l.sink.live[c] = true
			l.sink.most.Store(max(l.sink.most.Load(), int64(len(l.sink.live))))
		}
		l.sink.mu.Unlock()
		if !full {
			break
		}
		l.sink.refused.Add(1)
		c.Write([]byte("421 4.7.0 sink.test Error: too many connections from " + c.RemoteAddr().String() + "\r\n"))
		c.Close()
	}
	pr, pw := io.Pipe()
	go l.sink.watch(pr)
	sc := &sinkConn{Conn: c, sink: l.sink, seen: pw}
	if l.sink.rtt > 0 {
		sc.late = make(chan lateWrite, 64)
		go sc.deliver()
	}
	return sc, nil
}

// watch counts the session commands in a client's stream, one line at a time.
func (s *SMTPSink) watch(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		verb := strings.ToUpper(strings.TrimSpace(string(bytes.TrimRight(sc.Bytes(), "\r"))))
		switch verb {
		case "RSET", "NOOP", "QUIT":
			s.mu.Lock()
			s.commands[verb]++
			s.mu.Unlock()
		}
	}
	io.Copy(io.Discard, r)
}

type sinkConn struct {
	net.Conn
	sink *SMTPSink
	seen *io.PipeWriter
	// late carries the server's writes to deliver, each at its time, when the sink
	// has a round trip; closing is set once it is closed.
	late    chan lateWrite
	mu      sync.Mutex
	closing bool
}

type lateWrite struct {
	at time.Time
	b  []byte
}

func (c *sinkConn) Write(p []byte) (int, error) {
	if c.late == nil {
		return c.Conn.Write(p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return 0, net.ErrClosed
	}
	c.late <- lateWrite{at: time.Now().Add(c.sink.rtt), b: bytes.Clone(p)}
	return len(p), nil
}

// deliver writes each delayed write at its time, in order.
func (c *sinkConn) deliver() {
	for w := range c.late {
		time.Sleep(time.Until(w.at))
		c.Conn.Write(w.b)
	}
	c.Conn.Close()
}

func (c *sinkConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.seen.Write(p[:n])
		// Verbs as Herald and the benchmark's client send them (upper case); no copy of
		// each read, which would cost the benchmark's process on every message body.
		if chunk := p[:n]; bytes.Contains(chunk, []byte("MAIL FROM:")) && bytes.Contains(chunk, []byte("RCPT TO:")) && bytes.Contains(chunk, []byte("\r\nDATA\r\n")) {
			c.sink.pipelined.Add(1)
		}
	}
	return n, err
}

func (c *sinkConn) Close() error {
	c.seen.Close()
	c.sink.mu.Lock()
	delete(c.sink.live, c.Conn)
	c.sink.mu.Unlock()
	if c.late != nil {
		// The writes in flight still arrive (a QUIT's answer); deliver closes after them.
		c.mu.Lock()
		if !c.closing {
			c.closing = true
			close(c.late)
		}
		c.mu.Unlock()
		return nil
	}
	return c.Conn.Close()
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}
func (discardLogger) Println(...any)        {}

// SendMail sends the i-th test message through s, to p<i>@example.com.
func SendMail(s channels.Sender, i int) error {
	_, err := s.Send(context.Background(), channels.Message{ID: fmt.Sprintf("m%d", i), To: fmt.Sprintf("p%d@example.com", i),
		Title: "Ledger", Content: "Ledger 42 closes at five"})
	return err
}

// SendConcurrently sends test messages 0 to n-1 through s from 8 goroutines, and fails
// the test on an error.
func SendConcurrently(t testing.TB, s channels.Sender, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				errs <- SendMail(s, i)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
