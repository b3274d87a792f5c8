package simulator

import (
	"errors"
	"net"
	"net/smtp"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// startSMTP serves sim's SMTP sink on a free local port until the test ends.
func startSMTP(t *testing.T, sim *Simulator) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sim.ServeSMTP(ln) }()
	t.Cleanup(func() {
		ln.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeSMTP returned %v after its listener closed, want nil", err)
		}
	})
	return ln.Addr().String()
}

// mailResult says how far a send got and what stopped it.
type mailResult struct {
	Stage string // the step that failed, or "done"
	Code  int    // the SMTP reply code of the failure; 0 for success or a non-SMTP error
	// Usable reports whether the session still answered NOOP after a refusal.
	Usable bool
}

// sendMail sends one message with net/smtp, giving up after deadline.
func sendMail(t *testing.T, addr string, auth smtp.Auth, to []string, message string, deadline time.Duration) (mailResult, error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(deadline))
	// PlainAuth sends credentials without TLS only to a host named like localhost.
	c, err := smtp.NewClient(conn, "127.0.0.1")
	if err != nil {
		return result("greeting", err), err
	}
	result := func(stage string, err error) mailResult {
		var perr *textproto.Error
		if !errors.As(err, &perr) {
			return mailResult{Stage: stage}
		}
		return mailResult{Stage: stage, Code: perr.Code, Usable: c.Noop() == nil}
	}
	if auth != nil {
		if err := c.Auth(auth); err != nil {
			return result("auth", err), err
		}
	}
	if err := c.Mail("herald@example.com"); err != nil {
		return result("mail", err), err
	}
	for _, rcpt := range to {
		if err := c.Rcpt(rcpt); err != nil {
			return result("rcpt", err), err
		}
	}
	w, err := c.Data()
	if err != nil {
		return result("data", err), err
	}
	if _, err := w.Write([]byte(message)); err != nil {
		return result("body", err), err
	}
	if err := w.Close(); err != nil {
		return result("end of data", err), err
	}
	if err := c.Quit(); err != nil {
		return result("quit", err), err
	}
	return mailResult{Stage: "done"}, nil
}

// result describes a failure before a client exists.
func result(stage string, err error) mailResult {
	var perr *textproto.Error
	if errors.As(err, &perr) {
		return mailResult{Stage: stage, Code: perr.Code}
	}
	return mailResult{Stage: stage}
}

func TestSMTPSend(t *testing.T) {
	t.Parallel()
	plain := smtp.PlainAuth("", "herald", "pw", "127.0.0.1")
	withRequestID := "From: herald@example.com\r\nTo: a@example.com\r\nX-Request-Id: m-42\r\n" +
		"Message-ID: <ignored@herald>\r\nSubject: Overdue\r\n\r\nLine one\r\n.starts with a dot\r\n..two dots\r\n"
	at := testStart.UnixMilli()
	body := "Line one\n.starts with a dot\n..two dots"

	tests := []struct {
		name    string
		auth    smtp.Auth
		to      []string
		message string
		want    []Delivery
	}{
		{
			name: "auth plain, two recipients, dot-stuffed lines",
			auth: plain, to: []string{"a@example.com", "b@example.com"}, message: withRequestID,
			want: []Delivery{
				{Platform: "email", To: "a@example.com", RequestID: "m-42", Content: body, ReceivedAtMs: at},
				{Platform: "email", To: "b@example.com", RequestID: "m-42", Content: body, ReceivedAtMs: at},
			},
		},
		{
			name: "without auth, request id from Message-ID",
			to:   []string{"c@example.com"}, message: "Message-ID: <m-43@herald>\r\nSubject: x\r\n\r\nhello",
			want: []Delivery{{Platform: "email", To: "c@example.com", RequestID: "m-43@herald", Content: "hello", ReceivedAtMs: at}},
		},
		{
			name: "base64 body is decoded",
			to:   []string{"d@example.com"},
			message: "X-Request-Id: m-44\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
				"5Lu75Yqh6YC+5pyfOiBS\r\nZWNvbmNpbGUgbGVkZ2VyIDQy\r\n",
			want: []Delivery{{Platform: "email", To: "d@example.com", RequestID: "m-44", Content: "任务逾期: Reconcile ledger 42", ReceivedAtMs: at}},
		},
		{
			name: "quoted-printable body is decoded",
			to:   []string{"e@example.com"},
			message: "X-Request-Id: m-45\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
				"caf=C3=A9 soft=\r\nbreak\r\n",
			want: []Delivery{{Platform: "email", To: "e@example.com", RequestID: "m-45", Content: "café softbreak", ReceivedAtMs: at}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim := NewWithOptions(Faults{}, Options{Now: newFakeClock().Now})
			addr := startSMTP(t, sim)
			got, err := sendMail(t, addr, tt.auth, tt.to, tt.message, 5*time.Second)
			if err != nil {
				t.Fatalf("send stopped at %+v: %v", got, err)
			}
			if diff := cmp.Diff(tt.want, sim.Deliveries()); diff != "" {
				t.Errorf("deliveries (-want +got):\n%s", diff)
			}
			if s := sim.Stats(); s.Requests != 1 || s.Accepted != int64(len(tt.want)) {
				t.Errorf("stats = %+v, want 1 request and %d accepted", s, len(tt.want))
			}
		})
	}
}

func TestSMTPFaults(t *testing.T) {
	t.Parallel()
	plain := smtp.PlainAuth("", "herald", "pw", "127.0.0.1")
	message := "X-Request-Id: m-1\r\n\r\nhello\r\n"
	delivered := []Delivery{
		{Platform: "email", To: "a@example.com", RequestID: "m-1", Content: "hello", ReceivedAtMs: testStart.UnixMilli()},
		{Platform: "email", To: "b@example.com", RequestID: "m-1", Content: "hello", ReceivedAtMs: testStart.UnixMilli()},
	}
	tests := []struct {
		name           string
		faults         Faults
		auth           smtp.Auth
		deadline       time.Duration
		want           mailResult
		wantTimeout    bool
		wantDeliveries []Delivery
		wantFaults     FaultCounts
	}{
		{name: "fail", faults: Faults{FailRate: 1}, auth: plain, want: mailResult{"end of data", 451, true}, wantFaults: FaultCounts{Fail: 1}},
		{name: "throttle", faults: Faults{ThrottleRate: 1}, auth: plain, want: mailResult{"end of data", 421, false}, wantFaults: FaultCounts{Throttle: 1}},
		{name: "reject at RCPT", faults: Faults{RejectRate: 1}, auth: plain, want: mailResult{"rcpt", 550, true}, wantFaults: FaultCounts{Reject: 1}},
		{name: "auth fails at AUTH", faults: Faults{AuthFail: true}, auth: plain, want: mailResult{"auth", 535, false}, wantFaults: FaultCounts{Auth: 1}}, // net/smtp quits after a refused AUTH
		{name: "auth fail without AUTH: MAIL refused", faults: Faults{AuthFail: true}, want: mailResult{"mail", 530, true}, wantFaults: FaultCounts{Auth: 1}},
		{name: "timeout", faults: Faults{TimeoutRate: 1}, auth: plain, deadline: shortTimeout,
			want: mailResult{"end of data", 0, false}, wantTimeout: true, wantFaults: FaultCounts{Timeout: 1}},
		{name: "accept then timeout", faults: Faults{AcceptThenTimeoutRate: 1}, auth: plain, deadline: shortTimeout,
			want: mailResult{"end of data", 0, false}, wantTimeout: true, wantDeliveries: delivered, wantFaults: FaultCounts{AcceptThenTimeout: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim := NewWithOptions(tt.faults, Options{Now: newFakeClock().Now})
			addr := startSMTP(t, sim)
			deadline := tt.deadline
			if deadline == 0 {
				deadline = 5 * time.Second
			}
			got, err := sendMail(t, addr, tt.auth, []string{"a@example.com", "b@example.com"}, message, deadline)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("send result (-want +got):\n%s\nerror: %v", diff, err)
			}
			if tt.wantTimeout != isTimeout(err) {
				t.Errorf("error %v: timeout = %v, want %v", err, isTimeout(err), tt.wantTimeout)
			}
			if diff := cmp.Diff(tt.wantDeliveries, sim.Deliveries(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("deliveries (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantFaults, sim.Stats().Faults); diff != "" {
				t.Errorf("fault counts (-want +got):\n%s", diff)
			}
		})
	}
}

// smtpConversation drives a session line by line: each step sends a line (none if
// empty) and expects a reply that starts with want.
func smtpConversation(t *testing.T, addr string, steps [][2]string) {
	t.Helper()
	conn, err := textproto.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, step := range steps {
		send, want := step[0], step[1]
		if send != "" {
			if err := conn.PrintfLine("%s", send); err != nil {
				t.Fatalf("sending %q: %v", send, err)
			}
		}
		if want == "" {
			continue
		}
		var lines []string
		for {
			line, err := conn.ReadLine()
			if err != nil {
				t.Fatalf("after %q: reading reply: %v", send, err)
			}
			lines = append(lines, line)
			if len(line) < 4 || line[3] != '-' {
				break
			}
		}
		got := strings.Join(lines, "\n")
		if !strings.HasPrefix(got, want) {
			t.Errorf("after %q: reply %q, want it to start with %q", send, got, want)
		}
	}
}

func TestSMTPProtocol(t *testing.T) {
	t.Parallel()
	sim := NewWithOptions(Faults{}, Options{Now: newFakeClock().Now})
	addr := startSMTP(t, sim)
	smtpConversation(t, addr, [][2]string{
		{"", "220 "},
		{"MAIL FROM:<x@example.com>", "503 "},
		{"AUTH PLAIN", "503 "},
		{"EHLO", "501 "},
		{"EHLO client.example", "250-herald-sim greets client.example\n250-8BITMIME\n250-SIZE 10485760\n250 AUTH PLAIN LOGIN"},
		{"STARTTLS", "502 "},
		{"VRFY a@example.com", "502 "},
		{"NOOP", "250 "},
		{"AUTH CRAM-MD5", "504 "},
		{"AUTH LOGIN", "334 VXNlcm5hbWU6"},
		{"aGVyYWxk", "334 UGFzc3dvcmQ6"}, // "herald"
		{"cHc=", "235 "},                 // "pw"
		{"AUTH PLAIN", "503 "},           // already authenticated
		{"RCPT TO:<a@example.com>", "503 "},
		{"DATA", "503 "},
		{"MAIL FROM:<x@example.com> SIZE=99999999999", "552 "},
		{"MAIL FROM:<x@example.com> SIZE=100 BODY=8BITMIME", "250 "},
		{"MAIL FROM:<x@example.com>", "503 "},
		{"DATA", "554 "},
		{"RCPT TO:", "501 "},
		{"rcpt to: <a@example.com>", "250 "},
		{"RSET", "250 "},
		{"RCPT TO:<a@example.com>", "503 "},
		{"HELO client.example", "250 herald-sim"},
		{"MAIL FROM:<>", "250 "},
		{"RCPT TO:<b@example.com>", "250 "},
		{"DATA", "354 "},
		{"X-Request-Id: m-5\r\n\r\n..hidden", ""}, // header, blank line, dot-stuffed body
		{".", "250 2.0.0 OK queued as sim-"},
		{strings.Repeat("x", 5000), "500 "},
		{"NOOP", "250 "},
		{"QUIT", "221 "},
	})
	want := []Delivery{{Platform: "email", To: "b@example.com", RequestID: "m-5", Content: ".hidden", ReceivedAtMs: testStart.UnixMilli()}}
	if diff := cmp.Diff(want, sim.Deliveries()); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
}

func TestSMTPAuthPlainVariants(t *testing.T) {
	t.Parallel()
	addr := startSMTP(t, New(Faults{}))
	smtpConversation(t, addr, [][2]string{
		{"", "220 "},
		{"EHLO c", "250"},
		{"AUTH PLAIN", "334"},
		{"*", "501 "}, // cancelled
		{"AUTH PLAIN not-base64!", "501 "},
		{"AUTH PLAIN aGVyYWxk", "501 "}, // "herald": no NUL separators
		{"AUTH PLAIN", "334"},
		{"AGhlcmFsZABwdw==", "235 "}, // "\x00herald\x00pw"
	})
}

// Closing the listener ends open sessions too, so ServeSMTP leaves nothing behind.
func TestServeSMTPClosesSessions(t *testing.T) {
	t.Parallel()
	sim := New(Faults{TimeoutRate: 1})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sim.ServeSMTP(ln) }()

	conn, err := textproto.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, _, err := conn.ReadResponse(220); err != nil {
		t.Fatal(err)
	}
	ln.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeSMTP = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeSMTP still running 5s after its listener closed")
	}
	if _, err := conn.ReadLine(); err == nil {
		t.Error("session still open after ServeSMTP returned")
	}
}
