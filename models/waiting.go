package models

import (
	"context"
	"fmt"
	"time"

	"herald/channels"
	"herald/delivery"
	"herald/sending"
)

// Why a message that is not sent yet waits: the dashboard counts each, and the message
// list filters by it (MessageFilter.Waiting).
const (
	// WaitScheduled: pending, due at a send_at still to come.
	WaitScheduled = "scheduled"
	// WaitThrottled: its account's rate limits hold it until capacity frees.
	WaitThrottled = "throttled"
	// WaitQuietHours: its account's quiet hours hold it until they end.
	WaitQuietHours = "quiet_hours"
	// WaitApproval: its batch awaits approval (no due time until then).
	WaitApproval = "approval"
	// WaitHeld: an active silence holds it until the silence ends.
	WaitHeld = "held"
	// WaitDigest: it waits to be folded into a digest when its group's window closes.
	WaitDigest = "digest"
)

// WaitReasons are the reasons a message waits, in the order the console lists them.
var WaitReasons = []string{WaitScheduled, WaitThrottled, WaitQuietHours, WaitApproval, WaitHeld, WaitDigest}

// waitingStatuses are the states of a message that waits: due (pending, failed) or
// held by a silence.
var waitingStatuses = append([]Status{StatusHeld}, delivery.Waiting...)

// waitingCondition is the rule of one reason on messages aliased m, at now. The rules
// exclude each other, so a waiting message has one reason; an unknown reason matches
// nothing.
func waitingCondition(reason string, now time.Time) (string, []any) {
	switch reason {
	case WaitApproval:
		return "m.status = ? AND m.next_attempt_at IS NULL AND m.digest_slot = ''", []any{StatusPending}
	case WaitDigest:
		return "m.status = ? AND m.digest_slot <> ''", []any{StatusPending}
	case WaitHeld:
		return "m.status = ?", []any{StatusHeld}
	case WaitQuietHours:
		return "m.status = ? AND m.error_class = ?", []any{StatusPending, sending.ErrorClassQuietHours}
	case WaitThrottled:
		return "m.status IN ? AND m.error_class = ?", []any{delivery.Waiting, string(channels.Throttled)}
	case WaitScheduled:
		// SQLite compares times as text: every stored time is UTC.
		return "m.status = ? AND m.error_class = '' AND m.next_attempt_at IS NOT NULL AND m.send_at > ?", []any{StatusPending, now.UTC()}
	}
	return "1 = 0", nil
}

// WaitingCount is how many messages of an account wait for one reason.
type WaitingCount struct {
	AccountID int64
	Reason    string
	N         int
}

// CountWaiting counts the messages waiting, by account and reason (WaitReasons), at now.
// It looks at no more than scan of the pending, failed and held messages (an index
// range), so
// that it stays quick under any backlog: capped reports that it stopped there and the
// counts are a lower bound.
func (s *Store) CountWaiting(ctx context.Context, now time.Time, scan int) (counts []WaitingCount, capped bool, err error) {
	var cases string
	var args []any
	for _, reason := range []string{WaitHeld, WaitDigest, WaitApproval, WaitQuietHours, WaitThrottled, WaitScheduled} {
		cond, a := waitingCondition(reason, now)
		cases += " WHEN " + cond + " THEN '" + reason + "'"
		args = append(args, a...)
	}
	args = append(args, waitingStatuses, scan)
	var rows []WaitingCount
	err = s.reader(ctx).Raw("SELECT account_id, reason, COUNT(*) AS n FROM (SELECT m.account_id, CASE"+cases+" ELSE '' END AS reason"+
		" FROM messages m WHERE m.status IN ? LIMIT ?) w GROUP BY account_id, reason", args...).Scan(&rows).Error
	if err != nil {
		return nil, false, fmt.Errorf("models: count waiting messages: %w", err)
	}
	seen := 0
	for _, r := range rows {
		seen += r.N
		if r.Reason != "" {
			counts = append(counts, r)
		}
	}
	return counts, seen >= scan, nil
}

// QuietWaiting counts a batch's messages that wait for their account's quiet hours to end.
func (s *Store) QuietWaiting(ctx context.Context, batchID string) (int, error) {
	var n int64
	err := s.reader(ctx).Model(&Message{}).Where("batch_id = ? AND status = ? AND error_class = ?", batchID, StatusPending, sending.ErrorClassQuietHours).
		Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("models: quiet-hours waits of batch %s: %w", batchID, err)
	}
	return int(n), nil
}
