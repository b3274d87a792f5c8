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

	"herald/i18n"
	"herald/models"
	"herald/simulator"
)

// ProbeResult is what a connection test found. Its texts are Notes, shown in the
// reader's language; String gives them in English for logs and the audit log.
type ProbeResult struct {
	OK      bool        // the platform answered and (where it can be checked) accepted the credentials
	Summary Note        // one line for an operator, e.g. "WeCom issued an access token (valid 7200 s)"
	Steps   []ProbeStep // what was done and answered, in order
	Took    time.Duration
}

// ProbeStep is one step of a connection test: what was done and what came back, e.g.
// "GET https://qyapi…/gettoken?… → HTTP 200 OK, errcode 0 (ok)", or a remark alone
// ("error: …", "note: …") with no Answer.
type ProbeStep struct {
	Action Note
	Answer Note
}

// In is the step on one line in lang.
func (s ProbeStep) In(lang string) string {
	if s.Answer.IsZero() {
		return s.Action.In(lang)
	}
	return s.Action.In(lang) + " → " + s.Answer.In(lang)
}

// String is the step in English.
func (s ProbeStep) String() string { return s.In(i18n.English) }

// Lines are the steps in lang, one a line.
func (r ProbeResult) Lines(lang string) []string {
	out := make([]string, len(r.Steps))
	for i, s := range r.Steps {
		out[i] = s.In(lang)
	}
	return out
}

// exchange is a step that was done and answered.
func exchange(action, answer Note) ProbeStep { return ProbeStep{Action: action, Answer: answer} }

// remark is a step that is only said.
func remark(n Note) ProbeStep { return ProbeStep{Action: n} }

// failedWith is the step that reports the error a test ended with; the error's own
// text is log text, shown as it is.
func failedWith(err error) ProbeStep {
	return remark(note("channels.probe.error", "Error", err.Error()))
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
	fe, badSetting := errors.AsType[*models.FieldError](err)
	pe, isProblem := errors.AsType[*problemError](err)
	p, canProbe := s.(prober)
	switch {
	case badSetting:
		problem := note("channels.probe.field_problem", "Field", fe.Field, "Problem", Note{Key: fe.Key, Args: fe.Args, Text: fe.Message})
		res = ProbeResult{Summary: note("channels.probe.invalid_settings", "Problem", problem),
			Steps: []ProbeStep{exchange(note("channels.probe.check_settings"), problem)}}
	case isProblem:
		res = ProbeResult{Summary: note("channels.probe.cannot_test", "Problem", pe.note),
			Steps: []ProbeStep{exchange(note("channels.probe.check_settings"), pe.note)}}
	case err != nil:
		res = ProbeResult{Summary: note("channels.probe.cannot_test", "Problem", verbatim(err.Error())),
			Steps: []ProbeStep{exchange(note("channels.probe.check_settings"), verbatim(err.Error()))}}
	case canProbe:
		res = p.probe(ctx)
	default:
		res = ProbeResult{Summary: note("channels.probe.no_test", "Platform", a.Platform)}
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
		res.Summary = res.Summary.redact(secret)
		for i, s := range res.Steps {
			res.Steps[i] = ProbeStep{Action: s.Action.redact(secret), Answer: s.Answer.redact(secret)}
		}
	}
}

// probe asks WeCom for an access token, through the same call a send makes when it
// needs one, and reports what WeCom said. agent_id is not part of that call.
func (w *WeCom) probe(ctx context.Context) ProbeResult {
	r, reply, err := w.requestToken(ctx)
	answer := answerNote(r)
	if r.status != 0 {
		line := answer.Text
		if reply.ErrCode != nil {
			line += fmt.Sprintf(", errcode %d (%s)", *reply.ErrCode, excerpt([]byte(reply.ErrMsg)))
		}
		if err == nil {
			line += fmt.Sprintf(", expires_in %d", reply.ExpiresIn)
		}
		answer = verbatim(line)
	}
	step := exchange(verbatim("GET "+redactURL(w.tokenURL())), answer)
	if err == nil {
		return ProbeResult{OK: true,
			Summary: note("channels.probe.wecom_ok", "Seconds", reply.ExpiresIn, "AgentID", w.agentID),
			Steps:   []ProbeStep{step}}
	}
	res := ProbeResult{Steps: []ProbeStep{step, failedWith(err)}}
	switch {
	case r.status == 0:
		res.Summary = note("channels.probe.wecom_unreachable", "Problem", noAnswer(err))
	case reply.ErrCode != nil && *reply.ErrCode != 0:
		key := "channels.probe.wecom_refused"
		if Classify(err).Class == Auth {
			key = "channels.probe.wecom_refused_credentials"
		}
		res.Summary = note(key, "Code", *reply.ErrCode, "Message", excerpt([]byte(reply.ErrMsg)))
	default:
		res.Summary = note("channels.probe.wecom_no_token", "Error", err.Error())
	}
	return res
}

// probe runs the SMTP conversation a send opens (greeting, EHLO, STARTTLS and AUTH as
// configured) and ends it with QUIT: no MAIL, RCPT or DATA.
func (e *Email) probe(ctx context.Context) ProbeResult {
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

// probe makes a HEAD request to the messages endpoint with the send's bearer token: the
// contract has no call that checks the token without sending.
func (g *Generic) probe(ctx context.Context) ProbeResult {
	// Platform is the platform's value (English), PlatformName its name in the reader's
	// language; each catalog uses the one it reads best with.
	name := note("channels.probe.endpoint", "Platform", g.platform, "PlatformName", note("platform."+g.platform))
	res, _ := probeHead(ctx, g.client, g.prefix, name, g.url, http.Header{"Authorization": {g.authorization()}},
		note("channels.probe.generic_unchecked", "Platform", g.platform, "PlatformName", note("platform."+g.platform)))
	return res
}

// probe makes a HEAD request to the receiver's URL, unsigned: there is no body to sign.
func (w *Webhook) probe(ctx context.Context) ProbeResult {
	res, status := probeHead(ctx, w.client, "channels: webhook", note("channels.probe.webhook_receiver"), w.url, nil,
		note("channels.probe.webhook_unchecked"))
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		res.Steps = append(res.Steps, remark(note("channels.probe.webhook_unsigned")))
	}
	return res
}

// probe reports the simulator ready: it runs in this process, so there is nothing to reach.
func (s *Sandbox) probe(context.Context) ProbeResult {
	res := ProbeResult{OK: true, Summary: note("channels.probe.sandbox_ok"),
		Steps: []ProbeStep{remark(note("channels.probe.sandbox_local"))}}
	if f := s.Sim.Faults(); f != (simulator.Faults{}) {
		res.Steps = append(res.Steps, remark(note("channels.probe.sandbox_faults", "Faults", fmt.Sprintf("%+v", f))))
	}
	return res
}

// probeHead tests an endpoint whose contract has no harmless call. Any answer below 500
// shows that the host, TLS and path answer (a 405 included); 401 and 403 show that the
// credentials were refused. name says what was asked ("the tianyuan endpoint");
// unchecked says what only a real send can tell. The HTTP status is returned too, 0
// when none came.
func probeHead(ctx context.Context, client *http.Client, prefix string, name Note, target string, header http.Header, unchecked Note) (ProbeResult, int) {
	action := verbatim("HEAD " + redactURL(target))
	if header.Get("Authorization") != "" {
		action = note("channels.probe.head_with_token", "URL", redactURL(target))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, target, nil)
	if err != nil {
		return ProbeResult{Summary: note("channels.probe.cannot_test", "Problem", verbatim(err.Error())),
			Steps: []ProbeStep{exchange(action, note("channels.probe.not_sent"))}}, 0
	}
	for k, v := range header {
		req.Header[k] = v
	}
	r, err := call(client, req, prefix)
	res := ProbeResult{Steps: []ProbeStep{exchange(action, answerNote(r))}}
	if err != nil {
		res.Steps = append(res.Steps, failedWith(err))
		res.Summary = note("channels.probe.unreachable", "Name", name, "Problem", noAnswer(err))
		return res, 0
	}
	status := answerNote(r).Text
	switch {
	case r.status == http.StatusUnauthorized, r.status == http.StatusForbidden:
		res.Summary = note("channels.probe.refused_credentials", "Name", name, "Status", status)
	case r.status >= 500:
		res.Summary = note("channels.probe.server_error", "Name", name, "Status", status, "Unchecked", unchecked)
	case r.status >= 300 && r.status < 400:
		res.OK = true
		res.Summary = note("channels.probe.reachable_redirect", "Name", name, "Status", status, "Unchecked", unchecked,
			"Location", redactURL(r.header.Get("Location")))
	default:
		res.OK = true
		res.Summary = note("channels.probe.reachable", "Name", name, "Status", status, "Unchecked", unchecked)
	}
	return res, r.status
}

// answerNote describes an HTTP answer ("HTTP 200 OK", as it is), or its absence.
func answerNote(r httpReply) Note {
	if r.status == 0 {
		return note("channels.probe.no_answer")
	}
	return verbatim(strings.TrimSpace("HTTP " + strconv.Itoa(r.status) + " " + http.StatusText(r.status)))
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
// or completed: the address guard, DNS, a refusal, TLS, a timeout. It returns a zero
// Note when err is something else, such as a server's answer.
func connectionProblem(err error) Note {
	if ar, ok := errors.AsType[*addressRefusal](err); ok {
		return note("channels.probe.guard", "Problem", ar.problem)
	}
	if de, ok := errors.AsType[*net.DNSError](err); ok {
		return note("channels.probe.dns", "Name", de.Name, "Error", de.Err)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Addr != nil {
			return note("channels.probe.refused_by", "Addr", oe.Addr.String())
		}
		return note("channels.probe.refused")
	}
	if problem := tlsProblem(err); problem != "" {
		return note("channels.probe.tls", "Error", problem)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return note("channels.probe.timeout")
	}
	if errors.Is(err, context.Canceled) {
		return note("channels.probe.cancelled")
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return note("channels.probe.timeout")
	}
	if oe, ok := errors.AsType[*net.OpError](err); ok {
		return note("channels.probe.connection_failed", "Error", oe.Err.Error())
	}
	return Note{}
}

// noAnswer names why an HTTP call got no answer at all; a failure connectionProblem
// cannot name is shown as it is.
func noAnswer(err error) Note {
	if problem := connectionProblem(err); !problem.IsZero() {
		return problem
	}
	return verbatim(err.Error())
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
