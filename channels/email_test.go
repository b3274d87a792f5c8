package channels

import (
	"bytes"
	"cmp"
	"context"
	"io"
	"mime"
	"net"
	"net/mail"
	"net/textproto"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"herald/simulator"
)

// emailConfig points at the simulator, which speaks plain SMTP: tls none is chosen
// explicitly, as an account must.
func emailConfig(rig *simRig) map[string]string {
	return map[string]string{"host": rig.smtpHost, "port": rig.smtpPort, "from": "Herald <herald@example.com>",
		"username": "herald", "password": "pw", "tls": "none"}
}

// With credentials: AUTH PLAIN to the loopback simulator, which net/smtp allows
// without TLS; an auth fault is the server refusing AUTH with 535.
func TestEmailFaults(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	e, err := NewEmail(emailConfig(rig), true)
	if err != nil {
		t.Fatal(err)
	}
	runFaultTable(t, rig, adapterCase{platform: "email", sender: e, to: "e1001@example.com", providerID: true})
}

// Without credentials the simulator refuses MAIL with 530 on an auth fault.
func TestEmailWithoutAuth(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	e, err := NewEmail(map[string]string{"host": rig.smtpHost, "port": rig.smtpPort, "from": "herald@example.com", "tls": "none"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Send(context.Background(), newMessage("a@example.com")); err != nil {
		t.Fatalf("Send: %v", err)
	}
	rig.sim.SetFaults(simulator.Faults{AuthFail: true})
	_, err = e.Send(context.Background(), newMessage("a@example.com"))
	if c := classOf(t, err); c != Auth {
		t.Errorf("class = %s, want auth (%v)", c, err)
	}
	_, err = e.Send(context.Background(), newMessage("not an address"))
	if c := classOf(t, err); c != Permanent {
		t.Errorf("bad recipient: class = %s, want permanent (%v)", c, err)
	}
}

// A Chinese subject and multi-line content arrive intact.
func TestEmailUnicode(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	e, err := NewEmail(emailConfig(rig), true)
	if err != nil {
		t.Fatal(err)
	}
	m := Message{ID: "msg-zh", To: "张三 <zhangsan@example.com>", MsgType: "text", Title: "任务逾期提醒：对账 42",
		Content: "您好，\n对账任务 42 已逾期。" + strings.Repeat("长", 100)}
	receipt, err := e.Send(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if receipt.ProviderMessageID != "msg-zh@herald" {
		t.Errorf("receipt = %+v", receipt)
	}
	d := rig.sim.Deliveries()
	// Text travels in canonical form, with CRLF line breaks (RFC 2045).
	want := strings.ReplaceAll(m.Content, "\n", "\r\n")
	if len(d) != 1 || d[0].To != "zhangsan@example.com" || d[0].RequestID != m.ID || d[0].Content != want {
		t.Errorf("deliveries = %+v, want one to zhangsan@example.com with content %q", d, want)
	}

	// The simulator does not record headers; read them from the composed message.
	raw := e.compose(&mail.Address{Name: "张三", Address: "zhangsan@example.com"}, m, "msg-zh@herald")
	parsed, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	h := parsed.Header
	subject, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
	if err != nil || subject != m.Title {
		t.Errorf("Subject %q decodes to %q (%v), want %q", h.Get("Subject"), subject, err, m.Title)
	}
	for key, want := range map[string]string{
		"Message-Id": "<msg-zh@herald>", "X-Request-Id": "msg-zh", "Mime-Version": "1.0",
		"Content-Type": "text/plain; charset=utf-8", "Content-Transfer-Encoding": "base64",
	} {
		if got := h.Get(key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if _, err := h.Date(); err != nil {
		t.Errorf("Date: %v", err)
	}
	if to, err := h.AddressList("To"); err != nil || to[0].Name != "张三" {
		t.Errorf("To = %q (%v)", h.Get("To"), err)
	}
	body, _ := io.ReadAll(parsed.Body)
	for line := range strings.SplitSeq(strings.TrimRight(string(body), "\n"), "\n") {
		if len(strings.TrimRight(line, "\r")) > 76 {
			t.Errorf("body line of %d characters, want at most 76", len(line))
		}
	}
}

// A line break in a title must not start a new header.
func TestEmailSubjectInjection(t *testing.T) {
	e := newEmail(map[string]string{"host": "mail.example.com", "from": "herald@example.com"}, false)
	raw := e.compose(&mail.Address{Address: "a@example.com"}, Message{ID: "m", Title: "hi\r\nBcc: victim@example.com"}, "m@herald")
	parsed, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if bcc := parsed.Header.Get("Bcc"); bcc != "" {
		t.Errorf("title injected a Bcc header: %q", bcc)
	}
}

func TestSMTPCodeClass(t *testing.T) {
	for _, tc := range []struct {
		code int
		msg  string
		want Class
	}{
		{421, "4.7.0 too many messages, closing connection", RateLimited},
		{421, "4.7.0 sending rate exceeded", RateLimited},
		{421, "4.3.2 service shutting down", Transient},
		{450, "mailbox busy", Transient},
		{451, "4.3.0 temporary failure", Transient},
		{452, "4.5.3 too many recipients", Transient},
		{530, "5.7.0 authentication required", Auth},
		{534, "5.7.9 mechanism too weak", Auth},
		{535, "5.7.8 authentication failed", Auth},
		{550, "5.1.1 user unknown", Permanent},
		{553, "mailbox name not allowed", Permanent},
		{554, "transaction failed", Permanent},
		{354, "unexpected", Transient},
	} {
		err := classifySMTP(&textproto.Error{Code: tc.code, Msg: tc.msg})
		if err.Class != tc.want {
			t.Errorf("%d %s: class %s, want %s", tc.code, tc.msg, err.Class, tc.want)
		}
	}
}

// The context's deadline bounds a server that accepts the connection and says nothing.
func TestEmailSilentServer(t *testing.T) {
	t.Parallel()
	port := silentServer(t)
	e := newEmail(map[string]string{"host": "127.0.0.1", "port": port, "from": "h@example.com"}, true)
	ctx, cancel := context.WithTimeout(context.Background(), shortDeadline)
	defer cancel()
	start := time.Now()
	_, err := e.Send(ctx, newMessage("a@example.com"))
	if c := classOf(t, err); c != Transient {
		t.Errorf("class = %s, want transient (%v)", c, err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Send took %s despite a %s deadline", took, shortDeadline)
	}
}

// plainSMTP is a mail server that offers AUTH but not STARTTLS, as a server does when
// someone on the way strips the offer. It accepts everything and notes every command.
type plainSMTP struct {
	addr string
	mu   sync.Mutex
	cmds []string
}

func startPlainSMTP(t *testing.T) *plainSMTP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &plainSMTP{addr: ln.Addr().String()}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(conn)
		}
	}()
	return s
}

func (s *plainSMTP) serve(conn net.Conn) {
	defer conn.Close()
	tc := textproto.NewConn(conn)
	tc.PrintfLine("220 plain ESMTP")
	for {
		line, err := tc.ReadLine()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.cmds = append(s.cmds, line)
		s.mu.Unlock()
		switch verb, _, _ := strings.Cut(strings.ToUpper(line), " "); verb {
		case "EHLO":
			tc.PrintfLine("250-plain")
			tc.PrintfLine("250 AUTH PLAIN")
		case "AUTH":
			tc.PrintfLine("235 2.7.0 accepted")
		case "DATA":
			tc.PrintfLine("354 go on")
			tc.ReadDotLines()
			tc.PrintfLine("250 queued")
		case "QUIT":
			tc.PrintfLine("221 bye")
			return
		default:
			tc.PrintfLine("250 ok")
		}
	}
}

func (s *plainSMTP) commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.cmds)
}

// STARTTLS is required unless tls is none: against a server that does not offer it, a
// send and a connection test stop after EHLO, sending neither the password nor mail.
func TestEmailRequiresStartTLS(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"", "starttls"} {
		t.Run("tls "+cmp.Or(mode, "left empty"), func(t *testing.T) {
			t.Parallel()
			srv := startPlainSMTP(t)
			host, port, _ := net.SplitHostPort(srv.addr)
			e, err := NewEmail(map[string]string{"host": host, "port": port, "from": "herald@example.com",
				"username": "herald", "password": "never-in-clear", "tls": mode}, true)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Send(context.Background(), newMessage("a@example.com"))
			if c := classOf(t, err); c != Auth || !strings.Contains(err.Error(), "does not offer STARTTLS") {
				t.Errorf("send: class %s (%v), want auth saying the server does not offer STARTTLS", c, err)
			}
			res := e.Probe(context.Background())
			if res.OK || !strings.Contains(res.Summary.String(), "does not offer STARTTLS") {
				t.Errorf("probe: OK %t, %q; want a failure saying the server does not offer STARTTLS", res.OK, res.Summary)
			}
			want := []string{"EHLO localhost", "QUIT", "EHLO localhost", "QUIT"}
			if diff := gocmp.Diff(want, srv.commands()); diff != "" {
				t.Errorf("commands the server heard (-want +got):\n%s", diff)
			}
		})
	}

	// Chosen explicitly, none goes on in clear (to localhost, where net/smtp allows AUTH):
	// the server above does take a login and a message.
	srv := startPlainSMTP(t)
	host, port, _ := net.SplitHostPort(srv.addr)
	e, err := NewEmail(map[string]string{"host": host, "port": port, "from": "herald@example.com",
		"username": "herald", "password": "pw", "tls": "none"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Send(context.Background(), newMessage("a@example.com")); err != nil {
		t.Fatalf("send with tls none: %v", err)
	}
	e.Close() // the session stays open for the next message until the account's sender closes
	var verbs []string
	for _, c := range srv.commands() {
		verb, _, _ := strings.Cut(c, " ")
		verbs = append(verbs, verb)
	}
	if diff := gocmp.Diff([]string{"EHLO", "AUTH", "MAIL", "RCPT", "DATA", "QUIT"}, verbs); diff != "" {
		t.Errorf("commands with tls none (-want +got):\n%s", diff)
	}
}
