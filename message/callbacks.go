package message

import (
	"context"
	"herald/access"
	"herald/audit"
	"herald/models"
)

// ResendCallbackEvent makes a delivered or failed event of a key's pending again, due
// now, and wakes the key's deliveries. kernel.ErrStateChanged: it is pending already;
// kernel.ErrNotFound: the key has no such event.
func (d *Operator) ResendCallbackEvent(ctx context.Context, by audit.Actor, k *access.APIKey, eventID string) error {
	return d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := tx.Outbox().ResendCallbackEvent(ctx, k.ID, eventID); err != nil {
			return err
		}
		p := access.KeyParams(k)
		p["event"] = eventID
		ch.AuditDetail("apikey.callback.resend", "api_key", k.Name, "event "+eventID, p)
		if d.kicker != nil {
			ch.After(func() { d.kicker.Kick(k.ID) })
		}
		return nil
	})
}
