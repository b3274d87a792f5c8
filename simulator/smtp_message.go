package simulator

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime/quotedprintable"
	"net/mail"
	"strings"
)

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
