package channels

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"herald/i18n"
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

// Prober is an adapter that can test its connection without sending a message. Each
// adapter's test is beside its Send.
type Prober interface {
	Probe(ctx context.Context) ProbeResult
}

// Probe checks an account's connection and credentials without sending a message. The
// adapter is built afresh, not taken from the cache, so the test sees the account's
// current settings and, for WeCom, asks for a new token rather than reusing one.
func (r *Registry) Probe(ctx context.Context, a Account) ProbeResult {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var res ProbeResult
	s, err := r.build(a)
	se, badSetting := errors.AsType[*SettingError](err)
	pe, isProblem := errors.AsType[*problemError](err)
	p, canProbe := s.(Prober)
	switch {
	case badSetting:
		problem := note("channels.probe.field_problem", "Field", se.Field, "Problem", se.Problem)
		res = ProbeResult{Summary: note("channels.probe.invalid_settings", "Problem", problem),
			Steps: []ProbeStep{exchange(note("channels.probe.check_settings"), problem)}}
	case isProblem:
		res = ProbeResult{Summary: note("channels.probe.cannot_test", "Problem", pe.note),
			Steps: []ProbeStep{exchange(note("channels.probe.check_settings"), pe.note)}}
	case err != nil:
		res = ProbeResult{Summary: note("channels.probe.cannot_test", "Problem", verbatim(err.Error())),
			Steps: []ProbeStep{exchange(note("channels.probe.check_settings"), verbatim(err.Error()))}}
	case canProbe:
		res = p.Probe(ctx)
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
func hideSecrets(res *ProbeResult, a Account) {
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
