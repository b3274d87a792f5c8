package alert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"herald/audit"
	"herald/channels"
	"herald/kernel"
	"herald/sending"
)

// WeComCallbackWindow is how far a callback's timestamp may be from Herald's clock,
// either way: WeCom posts at once, so anything older is a replay.
const WeComCallbackWindow = 5 * time.Minute

// ErrWeComCallbackRefused is every refusal of a WeCom callback alike: no such WeCom
// account, no callback settings, a bad signature, a timestamp outside the window, a
// request seen before. The caller answers all of them the same way, so that a caller
// without the token learns nothing (not even which accounts exist); the reason goes
// only to the log.
var ErrWeComCallbackRefused = kernel.Declare(kernel.DomainError{Kind: kernel.KindForbidden, Code: "forbidden", Key: "api.callback_refused",
	Text: "alert: wecom callback refused"})

// WeComCallbackRequest is what WeCom sends to /callbacks/wecom/<account>: the query's
// msg_signature, timestamp and nonce, and either echostr (a GET: WeCom checking the URL)
// or the encrypted event (a POST's body).
type WeComCallbackRequest struct {
	Account                     string
	Signature, Timestamp, Nonce string
	// Echostr is a URL check's; Body a POST's.
	Echostr string
	Body    []byte
	// Check says the request is WeCom's check of the URL (a GET).
	Check bool
}

// WeComCallback checks a request that claims to come from WeCom and acts on it: a URL
// check answers the decrypted echostr; a click on an alert card's button acknowledges or
// resolves the alert (ActOnWeComCard); any other event is ignored. A request must carry
// a valid signature of the account's token, a timestamp within WeComCallbackWindow,
// and a signature not seen before in that window: each signature is claimed once in
// the database (MySQL is the source of truth and every web process shares it; Redis may
// be emptied at any time, which would let a replay through). Every refusal is
// ErrWeComCallbackRefused, logged at most once a minute per process. A click that
// could not be acted on for a reason of Herald's (the database) gives its signature
// back, so that WeCom's retry of it is accepted.
func (d *Service) WeComCallback(ctx context.Context, by audit.Actor, req WeComCallbackRequest) (echo string, err error) {
	cb, acct, reason, err := d.weComCallbackOf(ctx, req.Account)
	if err != nil {
		return "", err
	}
	if reason == "" {
		reason = checkWeComTimestamp(req.Timestamp, d.now())
	}
	var msg []byte
	if reason == "" {
		if req.Check {
			var s string
			s, err = cb.VerifyURL(req.Signature, req.Timestamp, req.Nonce, req.Echostr)
			msg = []byte(s)
		} else {
			msg, err = cb.Open(req.Signature, req.Timestamp, req.Nonce, req.Body)
		}
		if err != nil {
			reason = err.Error()
		}
	}
	ts, _ := strconv.ParseInt(req.Timestamp, 10, 64)
	at, replayKey := time.Unix(ts, 0), ""
	if reason == "" {
		replayKey = fmt.Sprintf("wecom callback %d %s", acct.ID, req.Signature)
		first, err := d.store.DB().ClaimOnce(ctx, replayKey, at)
		if err != nil {
			return "", err
		}
		if !first {
			reason = "a signature seen before (a replay)"
		}
	}
	if reason != "" {
		d.weComRefusals.log(d.log, req.Account, reason)
		return "", ErrWeComCallbackRefused
	}
	if req.Check {
		return string(msg), nil
	}
	click, ok, err := channels.ParseWeComCardEvent(msg)
	if err != nil || !ok {
		return "", nil
	}
	_, _, err = d.ActOnWeComCard(ctx, by, acct.ID, click)
	var fe *kernel.FieldError
	switch {
	case err == nil, errors.Is(err, ErrAlertEnded):
		return "", nil
	case errors.Is(err, ErrAckLinkInvalid), errors.Is(err, ErrAckLinkExpired),
		errors.Is(err, ErrAckNoticeWithdrawn), errors.Is(err, ErrAckNotCalled), errors.As(err, &fe):
		d.log.Warn("wecom card click ignored", "account", acct.Name, "task_id", click.TaskID, "key", click.Key, "error", err)
		return "", nil
	}
	// WeCom retries an event not answered 200: the click is acted on then.
	if gerr := d.store.DB().ReleaseClaim(context.WithoutCancel(ctx), replayKey, at); gerr != nil {
		d.log.Error("wecom callback: give back a signature", "account", acct.Name, "error", gerr)
	}
	return "", fmt.Errorf("alert: wecom card click on %s: %w", acct.Name, err)
}

// weComCallbackOf returns the callback checker of the WeCom account named, or the
// reason there is none (to be refused as any other refusal is).
func (d *Service) weComCallbackOf(ctx context.Context, name string) (*channels.WeComCallback, *sending.Account, string, error) {
	acct, err := d.store.Sending().AccountByName(ctx, name)
	if errors.Is(err, kernel.ErrNotFound) {
		return nil, nil, "no such account", nil
	}
	if err != nil {
		return nil, nil, "", err
	}
	if acct.Platform != "wecom" || acct.Unreadable {
		return nil, acct, "not a readable WeCom account", nil
	}
	cb, err := channels.NewWeComCallback(acct.Config)
	if err != nil {
		return nil, acct, err.Error(), nil
	}
	return cb, acct, "", nil
}

// checkWeComTimestamp is the reason to refuse a callback's timestamp (Unix seconds) at
// now, or "".
func checkWeComTimestamp(timestamp string, now time.Time) string {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return "a timestamp that is not a number"
	}
	if d := now.Sub(time.Unix(ts, 0)); d > WeComCallbackWindow || d < -WeComCallbackWindow {
		return "a timestamp outside ±5 minutes of Herald's clock"
	}
	return ""
}

// refusalLog logs refusals at most once a minute: anyone can send them as fast as they
// like. The zero value is ready.
type refusalLog struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// log writes one refusal's line, with how many were left out since the last one,
// unless a line was written in the last minute.
func (r *refusalLog) log(log *slog.Logger, account, reason string) {
	r.mu.Lock()
	if time.Since(r.last) < time.Minute {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	left := r.suppressed
	r.last, r.suppressed = time.Now(), 0
	r.mu.Unlock()
	log.Warn("wecom callback refused", "account", account, "reason", reason, "refusals_not_logged", left)
}
