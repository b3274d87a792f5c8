package reports

import (
	"context"
	"time"
)

// InterruptionGap is how close a notice follows the one before to the same person to
// join its interruption rather than begin one.
const InterruptionGap = time.Minute

// closeMargin is how long after a date has ended, in Herald's time zone, its tally is
// taken as final: a notice finished at the day's last moment has been written by then.
const closeMargin = 5 * time.Minute

// tallyPassDays bounds the dates one pass of TallyClosedDays tallies, so that the first
// pass after an upgrade over a long history spreads over a few sweeps.
const tallyPassDays = 62

// tallyDay counts date day (a date at midnight UTC, read as a date in Herald's time zone):
// for each person notified that day, the notices delivered to them and the minutes of
// the day at which an interruption began. A notice within InterruptionGap of the one
// before to the same person joins its interruption, also when that one came in the last
// minute of the day before; ownKey, when not 0, counts that key's notices only.
func (a *Analyst) tallyDay(ctx context.Context, day time.Time, ownKey int64) ([]noticeDay, error) {
	loc := a.cfg.Location
	// In UTC, as the times are stored (SQLite compares them as text).
	start := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, loc).UTC()
	end := time.Date(day.Year(), day.Month(), day.Day()+1, 0, 0, 0, 0, loc).UTC()
	notices, err := a.cfg.Store.Delivered(ctx, start.Add(-InterruptionGap), end, ownKey)
	if err != nil {
		return nil, err
	}
	date := day.Format(time.DateOnly)
	var out []noticeDay
	var who int64
	var prev time.Time
	for _, n := range notices {
		if n.RecipientID != who {
			who, prev = n.RecipientID, time.Time{}
		}
		if n.SentAt.Before(start) {
			prev = n.SentAt
			continue
		}
		if len(out) == 0 || out[len(out)-1].RecipientID != who {
			out = append(out, noticeDay{LocalDay: date, RecipientID: who})
		}
		d := &out[len(out)-1]
		d.Notices++
		if prev.IsZero() || n.SentAt.Sub(prev) >= InterruptionGap {
			local := n.SentAt.In(loc)
			d.Starts = append(d.Starts, local.Hour()*60+local.Minute())
		}
		prev = n.SentAt
	}
	return out, nil
}

// lastClosedDay is the last date in Herald's time zone whose tally is final
// (closeMargin after its end), at midnight UTC.
func (a *Analyst) lastClosedDay() time.Time {
	t := a.now().Add(-closeMargin).In(a.cfg.Location)
	return time.Date(t.Year(), t.Month(), t.Day()-1, 0, 0, 0, 0, time.UTC)
}

// noticeDays returns the tallies of r's dates. A closed date's tally is read as stored,
// or worked out and stored the first time it is asked for (TallyClosedDays stores them
// ahead); a date not yet closed is worked out afresh. A key that sees only its own
// notices (ownKey) has every date worked out from those, never stored.
func (a *Analyst) noticeDays(ctx context.Context, r Range, ownKey int64) ([]noticeDay, error) {
	zone := a.cfg.Location.String()
	var out []noticeDay
	stored := map[string]bool{}
	if ownKey == 0 {
		var err error
		if stored, err = a.cfg.Store.TalliedDays(ctx, zone, r.From, r.To); err != nil {
			return nil, err
		}
		if len(stored) > 0 {
			if out, err = a.cfg.Store.StoredDays(ctx, zone, r.From, r.To); err != nil {
				return nil, err
			}
		}
	}
	closed := a.lastClosedDay()
	for d := r.dateFrom(); !d.After(r.dateTo()); d = d.AddDate(0, 0, 1) {
		if stored[d.Format(time.DateOnly)] {
			continue
		}
		var tallies []noticeDay
		var err error
		if ownKey == 0 && !d.After(closed) {
			tallies, err = a.storeDay(ctx, d)
		} else {
			tallies, err = a.tallyDay(ctx, d, ownKey)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, tallies...)
	}
	return out, nil
}

// storeDay tallies the closed date d and stores it (Tallies.SaveDay: a date another
// process stored meanwhile is left as it is, the same count).
func (a *Analyst) storeDay(ctx context.Context, d time.Time) ([]noticeDay, error) {
	tallies, err := a.tallyDay(ctx, d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := a.cfg.Store.SaveDay(ctx, a.cfg.Location.String(), d.Format(time.DateOnly), tallies); err != nil {
		return nil, err
	}
	return tallies, nil
}

// TallyClosedDays stores the tally of every closed date not yet tallied, from the first
// notice recorded, at most tallyPassDays of them a pass, and returns how many it
// stored. The sweep calls it once a minute: once the last closed date is tallied (or
// nothing was ever delivered) it reads nothing until the next date closes.
func (a *Analyst) TallyClosedDays(ctx context.Context) (int, error) {
	closed := a.lastClosedDay()
	if a.talliedThrough.Load() == closed.Unix() {
		return 0, nil
	}
	first, err := a.cfg.Store.FirstDelivered(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	if !first.IsZero() {
		t := first.In(a.cfg.Location)
		from := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		stored, err := a.cfg.Store.TalliedDays(ctx, a.cfg.Location.String(), from.Format(time.DateOnly), closed.Format(time.DateOnly))
		if err != nil {
			return 0, err
		}
		for d := from; !d.After(closed); d = d.AddDate(0, 0, 1) {
			if stored[d.Format(time.DateOnly)] {
				continue
			}
			if n == tallyPassDays {
				return n, nil
			}
			if _, err := a.storeDay(ctx, d); err != nil {
				return n, err
			}
			n++
		}
	}
	a.talliedThrough.Store(closed.Unix())
	return n, nil
}
