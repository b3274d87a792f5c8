package channels

import (
	"bytes"
	"context"
	"io"
	"mime"
	"net/mail"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"herald/simulator"
)

func emailConfig(rig *simRig) map[string]string {
	return map[string]string{"host": rig.smtpHost, "port": rig.smtpPort, "from": "Herald <herald@example.com>",
		"username": "herald", "password": "pw"}
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
