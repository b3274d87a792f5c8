package dispatch

import (
	"context"
	"errors"
	"slices"
	"time"

	"herald/channels"
	"herald/duty"
	"herald/kernel"
	"herald/models"
	"herald/sending"
)

// ReasonDuplicateContentToday skips a person who already has the same notice today on a
// platform that delivers one content to one person only once a calendar day (DingTalk
// answers success for the second copy and delivers nothing).
const ReasonDuplicateContentToday = "duplicate_content_today"

// contentRetries is how often Submit plans again when a concurrent intake took a
// person's content for the day between its look and its write; each round skips what
// the others took, so a second round normally goes through.
const contentRetries = 3

// skipSentToday takes out of res the messages whose person already has the same content
// on the delivery date (sendAt's date in Herald's time zone), recording them skipped,
// and keeps a daily-content row for each of the others, written with the batch. Two
// identical messages to one person in one request count as one.
func (d *Dispatcher) skipSentToday(ctx context.Context, res *Result, acct *sending.Account, sendAt time.Time) error {
	if !channels.OncePerDay(acct.Platform) || len(res.Messages) == 0 {
		return nil
	}
	day, _ := duty.DateOf(sendAt, kernel.Zone(d.loc))
	keys := make([]models.DailyContentKey, 0, len(res.Messages))
	for _, m := range res.Messages {
		keys = append(keys, dailyKey(&m))
	}
	taken, err := d.store.DailyContentsTaken(ctx, acct.ID, day, keys)
	if err != nil {
		return err
	}
	kept := res.Messages[:0]
	for i, m := range res.Messages {
		k := keys[i]
		if m.Status != models.StatusPending {
			kept = append(kept, m) // nothing will be sent on this platform (no address)
			continue
		}
		if taken[k] {
			res.Skipped = append(res.Skipped, models.Reason{Recipient: res.Names[m.RecipientID], Reason: ReasonDuplicateContentToday})
			continue
		}
		taken[k] = true
		kept = append(kept, m)
		res.daily = append(res.daily, models.DailyContent{AccountID: acct.ID, Address: k.Address, Day: day,
			ContentHash: k.ContentHash, MessageID: m.ID})
	}
	res.Messages = slices.Clip(kept)
	return nil
}

// dailyKey is what makes a message the same as another on one day.
func dailyKey(m *models.Message) models.DailyContentKey {
	return models.DailyContentKey{Address: m.Address, ContentHash: models.ContentHash(m.MsgType, m.Subject, m.Content)}
}

// contentTaken reports whether an intake failed because another took a person's
// content for the day first.
func contentTaken(err error) bool { return errors.Is(err, models.ErrContentTaken) }
