package channels

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// Email sends mail over SMTP through a pool of open sessions (smtppool.go). Connections
// pass the address guard like every HTTP call, and the caller's context deadline bounds
// each message's part of the conversation. It is safe for concurrent use; Close ends its
// sessions.
type Email struct {
	host     string
	addr     string // host:port
	username string
	password string
	from     *mail.Address
	tlsMode  string // "starttls", "none" or "implicit"
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	roots    *x509.CertPool // trusted CAs; nil means the system's
	now      func() time.Time
	pool     *smtpPool
}

// The tls config values.
const (
	tlsStartTLS = "starttls" // upgrade with STARTTLS, refusing a server that does not offer it (the default)
	tlsNone     = "none"     // never encrypt: chosen explicitly, for a relay on a trusted network
	tlsImplicit = "implicit" // TLS from the first byte (usually port 465)
)

// NewEmail returns the adapter for an email account's config (keys host, port,
// username, password, from, tls).
func NewEmail(cfg map[string]string, allowPrivate bool) (*Email, error) {
	if err := ValidateConfig("email", cfg, allowPrivate); err != nil {
		return nil, fmt.Errorf("channels: email: %w", err)
	}
	return newEmail(cfg, allowPrivate), nil
}

// newEmail is NewEmail for a config already validated.
func newEmail(cfg map[string]string, allowPrivate bool) *Email {
	from, _ := mail.ParseAddress(cfg["from"]) // checked by ValidateConfig
	mode := cfg["tls"]
	if mode == "" {
		mode = tlsStartTLS
	}
	port := cfg["port"]
	if port == "" {
		port = "587"
		if mode == tlsImplicit {
			port = "465"
		}
	}
	host := strings.TrimSpace(cfg["host"])
	e := &Email{
		host:     host,
		addr:     net.JoinHostPort(host, port),
		username: cfg["username"],
		password: cfg["password"],
		from:     from,
		tlsMode:  mode,
		dial:     DialContext(allowPrivate),
		now:      time.Now,
	}
	e.pool = newSMTPPool(e, poolSetting(cfg, "pool_size", DefaultSMTPPoolSize), poolSetting(cfg, "session_messages", DefaultSMTPSessionMessages))
	return e
}

// poolSetting reads a whole-number pool setting, already validated; empty is the default.
func poolSetting(cfg map[string]string, key string, def int) int {
	if n, err := strconv.Atoi(strings.TrimSpace(cfg[key])); err == nil && n > 0 {
		return n
	}
	return def
}

// Close ends the account's SMTP sessions with QUIT; sends after it open new ones.
func (e *Email) Close() error {
	e.pool.closeAll()
	return nil
}

// Send implements Sender. It takes a session from the account's pool (smtppool.go): an
// open, authenticated conversation reused message after message.
func (e *Email) Send(ctx context.Context, m Message) (Receipt, error) {
	to, err := mail.ParseAddress(m.To)
	if err != nil {
		return Receipt{}, Errorf(Permanent, "", "channels: email: recipient %q is not an email address", m.To)
	}
	messageID := m.ID + "@herald"
	msg := e.compose(to, m, messageID)
	if err := e.pool.send(ctx, to.Address, msg); err != nil {
		return Receipt{}, classifySMTP(err)
	}
	return Receipt{ProviderMessageID: messageID}, nil
}

// converse opens a session the way every send does, hands it to do, and closes it. The
// connection test uses it, so a test checks exactly what a send will meet; step, if not
// nil, hears each step that succeeded and the server's answer. ctx bounds the whole
// conversation; errors are for classifySMTP.
func (e *Email) converse(ctx context.Context, step func(action, answer Note), do func(*smtp.Client) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, backstopTimeout)
		defer cancel()
	}
	s, err := e.open(ctx, step)
	if err != nil {
		return err
	}
	defer s.close()
	release := s.bind(ctx)
	defer release()
	return do(s.c)
}

// open connects through the address guard, reads the greeting, says EHLO, encrypts as
// the tls setting says and logs in when a password is set. step, if not nil, hears each
// step that succeeded. The session's connection has no deadline once open returns.
func (e *Email) open(ctx context.Context, step func(action, answer Note)) (*smtpSession, error) {
	if step == nil {
		step = func(Note, Note) {}
	}
	conn, err := e.dial(ctx, "tcp", e.addr)
	if ce, refused := errors.AsType[*Error](err); refused {
		return nil, &Error{Class: ce.Class, Code: ce.Code, Err: fmt.Errorf("channels: email: connecting to %s: %w", e.addr, ce.Err)}
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", e.addr, err)
	}
	e.pool.opened.Add(1)
	step(note("channels.probe.connect", "Addr", e.addr), note("channels.probe.connected", "Addr", conn.RemoteAddr().String()))
	s := &smtpSession{conn: conn}
	release := s.bind(ctx)
	defer release()
	fail := func(err error) (*smtpSession, error) {
		if s.c != nil {
			s.c.Close()
		} else {
			s.conn.Close()
		}
		return nil, err
	}

	if e.tlsMode == tlsImplicit {
		tc := tls.Client(conn, e.tlsConfig())
		if err := tc.HandshakeContext(ctx); err != nil {
			return fail(fmt.Errorf("TLS handshake with %s: %w", e.addr, err))
		}
		conn = tc
		step(note("channels.probe.tls_handshake"), verbatim(tls.VersionName(tc.ConnectionState().Version)))
	}
	greeting := &greetingConn{Conn: conn}
	c, err := smtp.NewClient(greeting, e.host)
	if err != nil {
		return fail(fmt.Errorf("greeting: %w", err))
	}
	s.c = c
	step(note("channels.probe.greeting"), verbatim(greeting.text()))
	// "localhost" is what net/smtp would say on its own.
	if err := c.Hello("localhost"); err != nil {
		return fail(fmt.Errorf("EHLO: %w", err))
	}
	step(verbatim("EHLO localhost"), offers(c))
	if e.tlsMode == tlsStartTLS {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(e.tlsConfig()); err != nil {
				return fail(fmt.Errorf("STARTTLS: %w", err))
			}
			state, _ := c.TLSConnectionState()
			step(verbatim("STARTTLS"), verbatim("220, "+tls.VersionName(state.Version)))
		} else {
			// Going on in clear would show the mail and the login to anyone on the way,
			// and someone on the way is who would strip the offer.
			step(verbatim("STARTTLS"), note("channels.probe.starttls_not_offered"))
			c.Quit()
			return fail(errNoStartTLS)
		}
	}
	if e.password != "" {
		// PlainAuth also refuses to send the password unencrypted except to localhost,
		// which guards tls: none.
		var auth smtp.Auth = smtp.PlainAuth("", e.username, e.password, e.host)
		if e.tlsMode == tlsImplicit {
			auth = implicitTLSAuth{auth}
		}
		if err := c.Auth(auth); err != nil {
			return fail(&smtpAuthError{err})
		}
		step(note("channels.probe.auth_as", "User", e.username), verbatim("235"))
	}
	s.learn()
	return s, nil
}

// offers is the EHLO answer with what it offered that matters to Herald.
func offers(c *smtp.Client) Note {
	var out []string
	if ok, _ := c.Extension("STARTTLS"); ok {
		out = append(out, "STARTTLS")
	}
	if ok, mechanisms := c.Extension("AUTH"); ok {
		out = append(out, "AUTH "+mechanisms)
	}
	if len(out) == 0 {
		return verbatim("250")
	}
	return note("channels.probe.offers", "Code", "250", "Offers", strings.Join(out, ", "))
}

// maxGreetingBytes bounds the greeting kept for a connection test.
const maxGreetingBytes = 512

// greetingConn keeps what the server sends before the client first writes: the
// greeting, which net/smtp reads and drops.
type greetingConn struct {
	net.Conn
	greeting []byte
	wrote    bool
}

func (g *greetingConn) Read(p []byte) (int, error) {
	n, err := g.Conn.Read(p)
	if room := maxGreetingBytes - len(g.greeting); !g.wrote && room > 0 {
		g.greeting = append(g.greeting, p[:min(n, room)]...)
	}
	return n, err
}

func (g *greetingConn) Write(p []byte) (int, error) {
	g.wrote = true
	return g.Conn.Write(p)
}

// text is the greeting on one printable line.
func (g *greetingConn) text() string { return excerpt(g.greeting) }

// implicitTLSAuth tells an Auth the connection is encrypted. With implicit TLS it is,
// but net/smtp sees only the greetingConn around the *tls.Conn and would otherwise
// refuse to send the password.
type implicitTLSAuth struct{ smtp.Auth }

func (a implicitTLSAuth) Start(server *smtp.ServerInfo) (string, []byte, error) {
	s := *server
	s.TLS = true
	return a.Auth.Start(&s)
}

// tlsConfig verifies the server against the configured host name.
func (e *Email) tlsConfig() *tls.Config {
	return &tls.Config{ServerName: e.host, MinVersion: tls.VersionTLS12, RootCAs: e.roots}
}

// compose builds the RFC 5322 message: the text alone as text/plain, or with an HTML
// alternative as multipart/alternative (text first, as RFC 2046 orders the parts from
// plainest to richest). Every part is UTF-8 in base64, so any content survives 7-bit
// servers and long lines.
func (e *Email) compose(to *mail.Address, m Message, messageID string) []byte {
	var b bytes.Buffer
	header := func(name, value string) {
		b.WriteString(name + ": " + value + "\r\n")
	}
	header("From", e.from.String())
	header("To", to.String())
	// QEncoding also encodes control characters, so a title cannot inject headers.
	header("Subject", mime.QEncoding.Encode("utf-8", m.Title))
	header("Date", e.now().Format(time.RFC1123Z))
	header("Message-ID", "<"+messageID+">")
	header("X-Request-Id", m.ID)
	header("MIME-Version", "1.0")
	if m.HTML == "" {
		header("Content-Type", "text/plain; charset=utf-8")
		header("Content-Transfer-Encoding", "base64")
		b.WriteString("\r\n")
		writeBase64(&b, m.Content)
		return b.Bytes()
	}
	w := multipart.NewWriter(&b)
	header("Content-Type", mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": w.Boundary()}))
	b.WriteString("\r\n")
	for _, part := range []struct{ mediaType, content string }{{"text/plain", m.Content}, {"text/html", m.HTML}} {
		pw, _ := w.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {part.mediaType + "; charset=utf-8"},
			"Content-Transfer-Encoding": {"base64"},
		})
		var body bytes.Buffer
		writeBase64(&body, part.content)
		pw.Write(body.Bytes())
	}
	w.Close()
	return b.Bytes()
}

// writeBase64 writes text in its canonical form (CRLF line breaks, RFC 2045) as base64
// in lines of 76 characters.
func writeBase64(b *bytes.Buffer, s string) {
	text := strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
	encoded := base64.StdEncoding.EncodeToString([]byte(text))
	const lineLen = 76
	for len(encoded) > lineLen {
		b.WriteString(encoded[:lineLen] + "\r\n")
		encoded = encoded[lineLen:]
	}
	b.WriteString(encoded + "\r\n")
}

// errNoStartTLS is an account with tls: starttls meeting a server that offers no STARTTLS.
var errNoStartTLS = errors.New("the server does not offer STARTTLS, which the account requires (tls: starttls); nothing was sent")

// smtpAuthError marks a failure of the AUTH step, including net/smtp refusing to send
// the password over an unencrypted connection.
type smtpAuthError struct{ err error }

func (e *smtpAuthError) Error() string { return "AUTH: " + e.err.Error() }
func (e *smtpAuthError) Unwrap() error { return e.err }

// classifySMTP maps an SMTP conversation's failure to an error class, by the server's
// reply code when there is one.
func classifySMTP(err error) *Error {
	if ce, ok := err.(*Error); ok {
		return ce // refused by the address guard, already classified
	}
	wrapped := fmt.Errorf("channels: email: %w", err)
	if te, ok := errors.AsType[*textproto.Error](err); ok {
		return &Error{Class: smtpCodeClass(te.Code, te.Msg), Code: fmt.Sprintf("smtp %d", te.Code), Err: wrapped}
	}
	if _, ok := errors.AsType[*smtpAmbiguousError](err); ok {
		return &Error{Class: Transient, Ambiguous: true, Err: wrapped}
	}
	if _, ok := errors.AsType[*smtpAuthError](err); ok || errors.Is(err, errNoStartTLS) {
		// Not a server reply: net/smtp refused to send the password unencrypted, the
		// server offers no AUTH, or no STARTTLS. Either way the account's settings (or
		// the server) need a person, which the auth class flags.
		return &Error{Class: Auth, Err: wrapped}
	}
	// Connection errors, timeouts, TLS failures, a server hanging up.
	return &Error{Class: Transient, Err: wrapped}
}

// smtpCodeClass maps an SMTP reply code (RFC 5321 section 4.2) to an error class.
func smtpCodeClass(code int, text string) Class {
	switch {
	case code == 421:
		// "Service not available, closing channel": often a sending-rate limit.
		lower := strings.ToLower(text)
		if strings.Contains(lower, "rate") || strings.Contains(lower, "too many") {
			return RateLimited
		}
		return Transient
	case code == 530, code == 534, code == 535, code == 538:
		// Authentication required, mechanism too weak, credentials invalid,
		// encryption required for the mechanism.
		return Auth
	case code >= 400 && code < 500:
		return Transient // 450, 451, 452 and the other temporary failures
	case code >= 500 && code < 600:
		return Permanent // 550 mailbox unavailable, 553, 554, …
	}
	// A reply that makes no sense at this point of the conversation.
	return Transient
}

// Probe runs the SMTP conversation a send opens (greeting, EHLO, STARTTLS and AUTH as
// configured) and ends it with QUIT: no MAIL, RCPT or DATA.
func (e *Email) Probe(ctx context.Context) ProbeResult {
	var res ProbeResult
	step := func(action, answer Note) { res.Steps = append(res.Steps, exchange(action, answer)) }
	err := e.converse(ctx, step, func(c *smtp.Client) error {
		if err := c.Quit(); err != nil {
			return fmt.Errorf("QUIT: %w", err)
		}
		step(verbatim("QUIT"), verbatim("221"))
		return nil
	})
	if err != nil {
		ce := classifySMTP(err)
		res.Steps = append(res.Steps, failedWith(ce))
		res.Summary = e.probeFailure(err, ce)
		return res
	}
	res.OK = true
	if e.password != "" {
		res.Summary = note("channels.probe.smtp_login_ok", "Addr", e.addr, "User", e.username)
	} else {
		res.Summary = note("channels.probe.smtp_ready", "Addr", e.addr)
	}
	return res
}

// probeFailure says in one line why an SMTP connection test failed.
func (e *Email) probeFailure(err error, ce *Error) Note {
	if problem := connectionProblem(err); !problem.IsZero() {
		return note("channels.probe.smtp_unreachable", "Addr", e.addr, "Problem", problem)
	}
	te, isReply := errors.AsType[*textproto.Error](err)
	switch {
	case ce.Class == Auth && isReply:
		return note("channels.probe.smtp_refused_credentials", "Addr", e.addr, "Code", te.Code, "Message", te.Msg)
	case isReply:
		return note("channels.probe.smtp_error_at", "Addr", e.addr, "Error", err.Error())
	}
	if errors.Is(err, errNoStartTLS) {
		return note("channels.probe.smtp_no_starttls", "Addr", e.addr)
	}
	if ae, ok := errors.AsType[*smtpAuthError](err); ok {
		// No server reply: net/smtp would not send the password, e.g. unencrypted.
		return note("channels.probe.smtp_login_not_attempted", "Addr", e.addr, "Error", ae.err.Error())
	}
	return note("channels.probe.smtp_failed", "Addr", e.addr, "Error", err.Error())
}
