package message

import (
	"context"
	"errors"
	"strconv"
	"time"

	"herald/audit"
	"herald/kernel"
	"herald/models"
	"herald/sending"
)

// Message returns a message with its recipient, as by may see it: another key's message
// is kernel.ErrNotFound to a send or read key, but for a digest that carried one of the
// key's notices.
func (d *Operator) Message(ctx context.Context, by audit.Actor, id string) (*models.BatchMessage, error) {
	m, err := d.store.MessageWithRecipient(ctx, id)
	if err != nil {
		return nil, err
	}
	err = d.store.CheckOwn(ctx, by.OwnKey(), m.BatchID)
	if errors.Is(err, kernel.ErrNotFound) && by.OwnKey() != 0 {
		carries, cerr := d.store.Intake().DigestCarriesKey(ctx, m.ID, by.OwnKey())
		if cerr != nil {
			return nil, cerr
		}
		if carries {
			err = nil
		}
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Batch returns a batch as by may see it: another key's batch is kernel.ErrNotFound to a
// send or read key.
func (d *Operator) Batch(ctx context.Context, by audit.Actor, id string) (*models.Batch, error) {
	if err := d.store.CheckOwn(ctx, by.OwnKey(), id); err != nil {
		return nil, err
	}
	return d.store.BatchByID(ctx, id)
}

// Messages lists the messages a filter selects that by may see, newest first, at most
// limit of them after the cursor (nil: from the newest). The console's list and the
// API's read it alike.
func (d *Operator) Messages(ctx context.Context, by audit.Actor, f models.MessageFilter, after *models.MessageCursor, limit int) ([]models.BatchMessage, error) {
	f.OwnKey = by.OwnKey()
	return d.store.ListMessages(ctx, f, after, limit)
}

// OwnMessage reads a message that by may change.
func (d *Operator) OwnMessage(ctx context.Context, by audit.Actor, id string) (*models.Message, error) {
	m, err := d.store.MessageByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := d.store.CheckOwn(ctx, by.OwnKey(), m.BatchID); err != nil {
		return nil, err
	}
	return m, nil
}

// CancelMessage cancels a pending or failed message, so it is never sent, audited as done
// by by, and counts it for the dashboard. It returns the message as it was read: a
// message in any other state is left as it is (kernel.ErrStateChanged), one that by may
// not see is kernel.ErrNotFound. The console and the API both cancel through it.
func (d *Operator) CancelMessage(ctx context.Context, by audit.Actor, id string) (*models.Message, error) {
	m, err := d.OwnMessage(ctx, by, id)
	if err != nil {
		return nil, err
	}
	return m, d.cancel(ctx, by, m)
}

// cancel cancels a message read already (CancelMessage; a recall of a message not sent
// yet).
func (d *Operator) cancel(ctx context.Context, by audit.Actor, m *models.Message) error {
	return d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := d.CancelIn(ctx, tx, ch, m); err != nil {
			return err
		}
		ch.Audit("message.cancel", "message", m.ID, m.AuditParams())
		return nil
	})
}

// CancelIn cancels one message within a change, compare-and-set on its state
// (kernel.ErrStateChanged when it is no longer pending or failed); its callback key
// hears of it and the dashboard counts it once the change commits. The change's audit
// entry is the caller's: one for the message, or one for a whole batch.
func (d *Operator) CancelIn(ctx context.Context, tx *models.Store, ch *audit.Change, m *models.Message) error {
	if err := tx.CancelMessage(ctx, m.ID); err != nil {
		return err
	}
	ch.After(func() {
		if m.CallbackKeyID != nil && d.kicker != nil {
			d.kicker.Kick(*m.CallbackKeyID)
		}
		d.stats.Count(m.AccountID, "cancelled", 1)
	})
	return nil
}

// RetryMessage makes a stopped message due again with a fresh allowance of attempts,
// audited, and enqueues it after the commit. Like CancelMessage, it returns the message
// as it was read; kernel.ErrStateChanged when it is not stopped.
func (d *Operator) RetryMessage(ctx context.Context, by audit.Actor, id string) (*models.Message, error) {
	m, err := d.OwnMessage(ctx, by, id)
	if err != nil {
		return nil, err
	}
	return m, d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := d.retry(ctx, tx, m, nil); err != nil {
			return err
		}
		ch.Audit("message.retry", "message", m.ID, m.AuditParams())
		ch.After(func() {
			d.queue.Retried(ctx, []models.Message{*m})
			d.stats.Unstop([]models.Message{*m})
		})
		return nil
	})
}

// retry makes a stopped message pending again in tx with its account's allowance of
// attempts (accounts caches the accounts read, for a bulk re-send; nil reads each).
func (d *Operator) retry(ctx context.Context, tx *models.Store, m *models.Message, accounts map[int64]*sending.Account) error {
	acct, ok := accounts[m.AccountID]
	if !ok {
		var err error
		if acct, err = tx.Sending().AccountByID(ctx, m.AccountID); err != nil {
			return err
		}
		if accounts != nil {
			accounts[m.AccountID] = acct
		}
	}
	return tx.RetryMessage(ctx, m.ID, acct.MaxAttempts)
}

// resendChunk is how many stopped messages a bulk re-send reads at a time.
const resendChunk = 500

// Resent is what one bulk re-send did.
type Resent struct {
	// Retried were made due again.
	Retried int
	// Skipped were retried or removed by someone else meanwhile.
	Skipped int
	// Remaining are stopped still: beyond the limit, or stopped meanwhile.
	Remaining int64
}

// ResendStopped retries the stopped messages a filter selects that by may see, oldest
// first, looking at no more than limit of them: the caller bounds the run so that it
// ends in time, and a further run picks up the rest. The run is one change, audited once
// with how many it re-sent and the filter; the messages are enqueued after the commit.
func (d *Operator) ResendStopped(ctx context.Context, by audit.Actor, f models.MessageFilter, limit int) (Resent, error) {
	f.OwnKey = by.OwnKey()
	var out Resent
	err := d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		out = Resent{}
		var (
			after    *models.MessageCursor
			retried  []models.Message
			accounts = map[int64]*sending.Account{}
		)
		for out.Retried+out.Skipped < limit {
			chunk, err := tx.StoppedMessages(ctx, f, after, min(resendChunk, limit-out.Retried-out.Skipped))
			if err != nil {
				return err
			}
			for i := range chunk {
				err := d.retry(ctx, tx, &chunk[i], accounts)
				switch {
				case err == nil:
					out.Retried++
					retried = append(retried, chunk[i])
				case errors.Is(err, kernel.ErrStateChanged), errors.Is(err, kernel.ErrNotFound):
					out.Skipped++
				default:
					return err
				}
			}
			if len(chunk) < resendChunk {
				break
			}
			last := chunk[len(chunk)-1]
			after = &models.MessageCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		}
		var err error
		if out.Remaining, err = tx.CountStopped(ctx, f); err != nil {
			return err
		}
		p := filterParams(f)
		p["resent"] = strconv.Itoa(out.Retried)
		if out.Skipped > 0 {
			p["skipped"] = strconv.Itoa(out.Skipped)
		}
		if out.Remaining > 0 {
			p["remaining"] = strconv.FormatInt(out.Remaining, 10)
		}
		ch.Audit("messages.resend", "message", "", p)
		ch.After(func() {
			if len(retried) > 0 {
				d.queue.Retried(ctx, retried)
				d.stats.Unstop(retried)
			}
		})
		return nil
	})
	return out, err
}

// filterParams names a message filter's values for an audit entry.
func filterParams(f models.MessageFilter) audit.Params {
	p := audit.Params{"status": string(f.Status), "platform": f.Platform, "batch": f.BatchID,
		"error_class": f.ErrorClass, "name": f.RecipientName}
	if f.AccountID != 0 {
		p["account_id"] = strconv.FormatInt(f.AccountID, 10)
	}
	if f.RecipientID > 0 {
		p["recipient_id"] = strconv.FormatInt(f.RecipientID, 10)
	}
	if f.CreatedFrom != nil {
		p["from"] = f.CreatedFrom.UTC().Format(time.RFC3339)
	}
	if f.CreatedBefore != nil {
		p["until"] = f.CreatedBefore.UTC().Format(time.RFC3339)
	}
	return p
}
