package channels

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/smtp"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"herald/models"
	"herald/simulator"
)

// ProbeResult is what a connection test found.
type ProbeResult struct {
	OK      bool     // the platform answered and (where it can be checked) accepted the credentials
	Summary string   // one line for an operator, e.g. "WeCom issued an access token (valid 7200 s)"
	Steps   []string // what was done and answered, in order, e.g. "GET https://qyapi…/gettoken?… → HTTP 200 OK, errcode 0 (ok)"
	Took    time.Duration
}

// probeTimeout bounds a connection test: an operator is waiting for the answer.
const probeTimeout = 10 * time.Second

// prober is an adapter that can test its connection without sending a message.
type prober interface {
	probe(ctx context.Context) ProbeResult
}

// Probe checks an account's connection and credentials without sending a message. The
// adapter is built afresh, not taken from the cache, so the test sees the account's
// current settings and, for WeCom, asks for a new token rather than reusing one.
func (r *Registry) Probe(ctx context.Context, a *models.Account) ProbeResult {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var res ProbeResult
	s, err := r.build(a)
	ce, badSetting := errors.AsType[*ConfigError](err)
	p, canProbe := s.(prober)
	switch {
	case badSetting:
		res = ProbeResult{Summary: "Invalid settings: " + ce.Error(), Steps: []string{"check settings → " + ce.Error()}}
	case err != nil:
		res = ProbeResult{Summary: "Cannot test: " + err.Error(), Steps: []string{"check settings → " + err.Error()}}
	case canProbe:
		res = p.probe(ctx)
	default:
		res = ProbeResult{Summary: fmt.Sprintf("Platform %s has no connection test", a.Platform)}
	}
	res.Took = time.Since(start)
	hideSecrets(&res, a)
	return res
}

// minHiddenSecret is the shortest secret hideSecrets replaces: shorter strings turn up
// in ordinary words by chance, so replacing them would garble the report and hide
// nothing a guess would not find.
const minHiddenSecret = 4

// hideSecrets replaces the account's secrets wherever they appear in the report. The
// steps already leave them out; this catches a platform echoing one back.
func hideSecrets(res *ProbeResult, a *models.Account) {
	for _, key := range SecretKeys[a.Platform] {
		secret := a.Config[key]
		if len(secret) < minHiddenSecret {
			continue
		}
		res.Summary = strings.ReplaceAll(res.Summary, secret, "***")
		for i := range res.Steps {
			res.Steps[i] = strings.ReplaceAll(res.Steps[i], secret, "***")
		}
	}
}

// probe asks WeCom for an access token, through the same call a send makes when it
// needs one, and reports what WeCom said. agent_id is not part of that call.
func (w *WeCom) probe(ctx context.Context) ProbeResult {
	r, reply, err := w.requestToken(ctx)
	step := "GET " + redactURL(w.tokenURL()) + " → " + answerLine(r)
	if reply.ErrCode != nil {
		step += fmt.Sprintf(", errcode %d (%s)", *reply.ErrCode, excerpt([]byte(reply.ErrMsg)))
	}
	if err == nil {
		step += fmt.Sprintf(", expires_in %d", reply.ExpiresIn)
		return ProbeResult{OK: true,
			Summary: fmt.Sprintf("WeCom issued an access token (valid %d s); agent_id %d is checked on the first real send", reply.ExpiresIn, w.agentID),
			Steps:   []string{step}}
	}
	res := ProbeResult{Steps: []string{step, "error: " + err.Error()}}
	switch {
	case r.status == 0:
		res.Summary = "Could not reach WeCom: " + noAnswer(err)
	case reply.ErrCode != nil && *reply.ErrCode != 0:
		what := "WeCom refused the request"
		if Classify(err).Class == Auth {
			what = "WeCom refused the credentials"
		}
		res.Summary = fmt.Sprintf("%s: errcode %d: %s", what, *reply.ErrCode, excerpt([]byte(reply.ErrMsg)))
	default:
		res.Summary = "WeCom did not issue a token: " + err.Error()
	}
	return res
}

// probe runs the SMTP conversation a send opens (greeting, EHLO, STARTTLS and AUTH as
// configured) and ends it with QUIT: no MAIL, RCPT or DATA.
func (e *Email) probe(ctx context.Context) ProbeResult {
	var res ProbeResult
	note := func(step, answer string) { res.Steps = append(res.Steps, step+" → "+answer) }
	err := e.converse(ctx, note, func(c *smtp.Client) error {
		if err := c.Quit(); err != nil {
			return fmt.Errorf("QUIT: %w", err)
		}
		note("QUIT", "221")
		return nil
	})
	if err != nil {
		ce := classifySMTP(err)
		res.Steps = append(res.Steps, "error: "+ce.Error())
		res.Summary = e.probeFailure(err, ce)
		return res
	}
	res.OK = true
	if e.password != "" {
		res.Summary = fmt.Sprintf("SMTP server %s accepted the login of %s; no mail was sent", e.addr, e.username)
	} else {
		res.Summary = fmt.Sprintf("SMTP server %s is ready; no credentials are configured, so none were checked; no mail was sent", e.addr)
	}
	return res
}

// probeFailure says in one line why an SMTP connection test failed.
func (e *Email) probeFailure(err error, ce *Error) string {
	if problem := connectionProblem(err); problem != "" {
		return fmt.Sprintf("Could not reach the SMTP server %s: %s", e.addr, problem)
	}
	te, isReply := errors.AsType[*textproto.Error](err)
	switch {
	case ce.Class == Auth && isReply:
		return fmt.Sprintf("SMTP server %s refused the credentials: %d %s", e.addr, te.Code, te.Msg)
	case isReply:
		return fmt.Sprintf("SMTP server %s answered an error at %v", e.addr, err)
	}
	if errors.Is(err, errNoStartTLS) {
		return fmt.Sprintf("SMTP server %s does not offer STARTTLS, which the account requires; nothing was sent in clear", e.addr)
	}
	if ae, ok := errors.AsType[*smtpAuthError](err); ok {
		// No server reply: net/smtp would not send the password, e.g. unencrypted.
		return fmt.Sprintf("SMTP login to %s not attempted: %v", e.addr, ae.err)
	}
	return fmt.Sprintf("SMTP conversation with %s failed: %v", e.addr, err)
}

// probe makes a HEAD request to the messages endpoint with the send's bearer token: the
// contract has no call that checks the token without sending.
func (g *Generic) probe(ctx context.Context) ProbeResult {
	res, _ := probeHead(ctx, g.client, g.prefix, g.platform+" endpoint", g.url, http.Header{"Authorization": {g.authorization()}},
		"the token is checked on the first real send, as "+g.platform+" has no call that checks it alone")
	return res
}

// probe makes a HEAD request to the receiver's URL, unsigned: there is no body to sign.
func (w *Webhook) probe(ctx context.Context) ProbeResult {
	res, status := probeHead(ctx, w.client, "channels: webhook", "webhook receiver", w.url, nil,
		"whether it accepts Herald's messages (and signatures) is checked on the first real send")
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		res.Steps = append(res.Steps, "note: the test request was unsigned; a receiver that wants every request signed refuses it, while real sends are signed")
	}
	return res
}

// probe reports the simulator ready: it runs in this process, so there is nothing to reach.
func (s *Sandbox) probe(context.Context) ProbeResult {
	res := ProbeResult{OK: true, Summary: "In-process simulator, always ready",
		Steps: []string{"no network call: the sandbox is simulated in this process"}}
	if f := s.Sim.Faults(); f != (simulator.Faults{}) {
		res.Steps = append(res.Steps, fmt.Sprintf("note: faults are being injected (%+v), so sends may fail on purpose", f))
	}
	return res
}

// probeHead tests an endpoint whose contract has no harmless call. Any answer below 500
// shows that the host, TLS and path answer (a 405 included); 401 and 403 show that the
// credentials were refused. unchecked says what only a real send can tell. The HTTP
// status is returned too, 0 when none came.
func probeHead(ctx context.Context, client *http.Client, prefix, name, target string, header http.Header, unchecked string) (ProbeResult, int) {
	step := "HEAD " + redactURL(target)
	if header.Get("Authorization") != "" {
		step += " with Authorization: Bearer ***"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, target, nil)
	if err != nil {
		return ProbeResult{Summary: "Cannot test: " + err.Error(), Steps: []string{step + " → not sent"}}, 0
	}
	for k, v := range header {
		req.Header[k] = v
	}
	r, err := call(client, req, prefix)
	res := ProbeResult{Steps: []string{step + " → " + answerLine(r)}}
	if err != nil {
		res.Steps = append(res.Steps, "error: "+err.Error())
		res.Summary = fmt.Sprintf("Could not reach the %s: %s", name, noAnswer(err))
		return res, 0
	}
	status := answerLine(r)
	switch {
	case r.status == http.StatusUnauthorized, r.status == http.StatusForbidden:
		res.Summary = fmt.Sprintf("The %s answered %s: credentials refused", name, status)
	case r.status >= 500:
		res.Summary = fmt.Sprintf("The %s answered %s, a server error; %s", name, status, unchecked)
	default:
		res.OK = true
		res.Summary = fmt.Sprintf("The %s answered %s (host, TLS and path reachable); %s", name, status, unchecked)
		if r.status >= 300 && r.status < 400 {
			res.Summary += fmt.Sprintf("; note that sends do not follow its redirect (Location: %s)",
				redactURL(r.header.Get("Location")))
		}
	}
	return res, r.status
}

// answerLine describes an HTTP answer, or its absence.
func answerLine(r httpReply) string {
	if r.status == 0 {
		return "no answer"
	}
	return strings.TrimSpace("HTTP " + strconv.Itoa(r.status) + " " + http.StatusText(r.status))
}

// redactURL hides the values of query parameters whose names suggest a credential
// (WeCom's corpsecret, a webhook's key or token) so a URL can be shown.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unreadable URL)"
	}
	if u.RawQuery == "" {
		return u.String()
	}
	params := strings.Split(u.RawQuery, "&")
	for i, p := range params {
		name, _, _ := strings.Cut(p, "=")
		if decoded, err := url.QueryUnescape(name); err != nil || secretParam(decoded) {
			params[i] = name + "=***"
		}
	}
	u.RawQuery = strings.Join(params, "&")
	return u.String()
}

// secretParam says whether a query parameter's name suggests it carries a credential.
func secretParam(name string) bool {
	name = strings.ToLower(name)
	for _, hint := range []string{"secret", "token", "key", "pass", "sig", "auth", "credential"} {
		if strings.Contains(name, hint) {
			return true
		}
	}
	return false
}

// connectionProblem names, for an operator, what kept a connection from being made
// or completed: the address guard, DNS, a refusal, TLS, a timeout. It returns "" when
// err is something else, such as a server's answer.
func connectionProblem(err error) string {
	if ar, ok := errors.AsType[*addressRefusal](err); ok {
		return "blocked by Herald's network guard: " + ar.Error()
	}
	if de, ok := errors.AsType[*net.DNSError](err); ok {
		return fmt.Sprintf("DNS lookup of %s failed: %s", de.Name, de.Err)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Addr != nil {
			return "connection refused by " + oe.Addr.String()
		}
		return "connection refused"
	}
	if problem := tlsProblem(err); problem != "" {
		return "TLS failed: " + problem
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer in time"
	}
	if errors.Is(err, context.Canceled) {
		return "the test was cancelled"
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return "no answer in time"
	}
	if oe, ok := errors.AsType[*net.OpError](err); ok {
		return "connection failed: " + oe.Err.Error()
	}
	return ""
}

// noAnswer names why an HTTP call got no answer at all; a failure connectionProblem
// cannot name is shown as it is.
func noAnswer(err error) string {
	if problem := connectionProblem(err); problem != "" {
		return problem
	}
	return err.Error()
}

// tlsProblem returns the message of the TLS failure in err's chain, or "".
func tlsProblem(err error) string {
	if ve, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return ve.Error()
	}
	if ue, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return ue.Error()
	}
	if he, ok := errors.AsType[x509.HostnameError](err); ok {
		return he.Error()
	}
	if ie, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return ie.Error()
	}
	if re, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return re.Error()
	}
	if ae, ok := errors.AsType[tls.AlertError](err); ok {
		return ae.Error()
	}
	// The peer's alerts arrive as an OpError with this Op.
	if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Op == "remote error" {
		return oe.Error()
	}
	return ""
}
