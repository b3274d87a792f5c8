package simulator

import (
	"encoding/base64"
	"errors"
	"strings"
)

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
