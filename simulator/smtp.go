package simulator

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
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

var (
	errAuthCancelled = errors.New("authentication cancelled")
	errAuthSyntax    = errors.New("malformed authentication response")
)

// auth runs AUTH PLAIN or AUTH LOGIN. Any well-formed credentials pass unless the
// simulator is set to fail authentication.
func (ss *smtpSession) auth(arg string) bool {
	switch {
	case !ss.greeted:
		return ss.reply("503 5.5.1 send EHLO first") == nil
	case ss.authenticated:
		return ss.reply("503 5.5.1 already authenticated") == nil
	case ss.inMail:
		return ss.reply("503 5.5.1 AUTH not allowed during a mail transaction") == nil
	}
	mechanism, initial, _ := strings.Cut(arg, " ")
	var err error
	switch strings.ToUpper(mechanism) {
	case "PLAIN":
		var resp []byte
		if resp, err = ss.authStep(initial, ""); err == nil {
			// authzid NUL authcid NUL password
			if parts := strings.Split(string(resp), "\x00"); len(parts) != 3 {
				err = errAuthSyntax
			}
		}
	case "LOGIN":
		if _, err = ss.authStep(initial, "VXNlcm5hbWU6"); err == nil { // "Username:"
			_, err = ss.authStep("", "UGFzc3dvcmQ6") // "Password:"
		}
	default:
		return ss.reply("504 5.5.4 unrecognized authentication mechanism") == nil
	}
	switch {
	case errors.Is(err, errAuthCancelled):
		return ss.reply("501 5.7.0 authentication cancelled") == nil
	case errors.Is(err, errAuthSyntax):
		return ss.reply("501 5.5.2 malformed authentication response") == nil
	case errors.Is(err, errLineTooLong):
		return ss.reply("500 5.5.2 line too long") == nil
	case err != nil:
		return false
	}
	if ss.sim.Faults().AuthFail {
		ss.sim.countAuthFailure()
		return ss.reply("535 5.7.8 authentication failed") == nil
	}
	ss.authenticated = true
	return ss.reply("235 2.7.0 authentication successful") == nil
}

// authStep returns the client's decoded answer to one challenge. An initial response
// sent with the AUTH command answers the first challenge without a round trip.
func (ss *smtpSession) authStep(initial, prompt string) ([]byte, error) {
	if initial == "" {
		if err := ss.reply("334 " + prompt); err != nil {
			return nil, err
		}
		line, err := ss.readLine()
		if err != nil {
			return nil, err
		}
		if line == "*" {
			return nil, errAuthCancelled
		}
		initial = line
	}
	if initial == "=" { // RFC 4954: an empty initial response
		return nil, nil
	}
	decoded, err := base64.StdEncoding.DecodeString(initial)
	if err != nil {
		return nil, errAuthSyntax
	}
	return decoded, nil
}

// parseEmail returns a received message's request id (X-Request-Id, else Message-ID
// without its angle brackets) and its body text.
//
// A single-part body sent as base64 or quoted-printable is decoded, so the recorded
// content can be compared with what the sender meant to send. The final line break,
// which SMTP framing forces onto every message, is dropped for the same reason.
// A message without a parseable header is recorded whole.
func parseEmail(message []byte) (requestID, content string) {
	msg, err := mail.ReadMessage(bytes.NewReader(message))
	if err != nil {
		return "", trimFinalNewline(string(message))
	}
	requestID = strings.TrimSpace(msg.Header.Get("X-Request-Id"))
	if requestID == "" {
		requestID = strings.Trim(strings.TrimSpace(msg.Header.Get("Message-Id")), "<>")
	}
	raw, err := io.ReadAll(msg.Body)
	if err != nil {
		return requestID, ""
	}
	switch strings.ToLower(strings.TrimSpace(msg.Header.Get("Content-Transfer-Encoding"))) {
	case "base64":
		// The decoder skips the line breaks base64 bodies are wrapped with.
		if decoded, err := io.ReadAll(base64.NewDecoder(base64.StdEncoding, bytes.NewReader(raw))); err == nil {
			return requestID, string(decoded)
		}
	case "quoted-printable":
		if decoded, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(raw))); err == nil {
			return requestID, trimFinalNewline(string(decoded))
		}
	}
	return requestID, trimFinalNewline(string(raw))
}

// trimFinalNewline drops one trailing line break.
func trimFinalNewline(s string) string {
	if t, ok := strings.CutSuffix(s, "\r\n"); ok {
		return t
	}
	return strings.TrimSuffix(s, "\n")
}
