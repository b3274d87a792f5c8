package dispatch

import (
	"context"
	"time"
)

// Wait is what a planned batch will wait for once it is sent, as the compose preview
// tells the operator before sending.
type Wait struct {
	// Approval is set when the batch reaches more people than the approval threshold
	// (Threshold) and waits for another person's approval.
	Approval  bool
	Threshold int
	// QuietUntil is when the quiet hours of the batch's account (Account) end, when
	// they hold its messages at their due time; zero when they do not.
	QuietUntil time.Time
	Account    string
}

// Waits says what a planned batch (Plan's result) will wait for once sent, by the
// rules the send applies: the approval threshold, as Submit holds a batch over it
// (overThreshold), and the account's quiet hours at the batch's due time, as the
// sender holds a message inside them (sending.QuietHours.Holds).
func (d *Dispatcher) Waits(ctx context.Context, res *Result) (Wait, error) {
	var w Wait
	var err error
	if w.Threshold, w.Approval, err = d.overThreshold(ctx, res.Batch.Accepted); err != nil {
		return w, err
	}
	if res.account == nil || res.Batch.Accepted == 0 {
		return w, nil
	}
	due := res.Batch.CreatedAt
	if res.Batch.SendAt != nil {
		due = *res.Batch.SendAt
	}
	if due.IsZero() {
		due = d.now()
	}
	if hold, until := res.account.QuietHours.Holds(res.Batch.Priority, due, d.loc); hold {
		w.QuietUntil, w.Account = until, res.account.Name
	}
	return w, nil
}
