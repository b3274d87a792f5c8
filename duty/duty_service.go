package duty

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"herald/audit"
	"herald/directory"
	"herald/kernel"
)

// The duty writes: the weekly roster, overrides, shift swaps, the duty reminder's
// settings and the calendar feeds. Holidays are in holidays.go, rotations in
// rotations.go. People are named by external id, as the console's forms and the API
// name them; only head-office staff have duty.

// headOffice resolves external ids to head-office recipients. field names the list in
// errors ("1" gives "1[0]" for the first id); "" names each the single field
// "recipient".
func headOffice(ctx context.Context, st *Schedule, field string, ids []string) ([]directory.Recipient, error) {
	people, err := st.Directory().RecipientsByExternalIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	byExt := make(map[string]directory.Recipient, len(people))
	for _, p := range people {
		byExt[p.ExternalID] = p
	}
	out := make([]directory.Recipient, 0, len(ids))
	for i, id := range ids {
		f := "recipient"
		if field != "" {
			f = fmt.Sprintf("%s[%d]", field, i)
		}
		p, ok := byExt[id]
		switch {
		case !ok:
			return nil, kernel.Invalid(f, "duty.no_recipient", "ID", strconv.Quote(id))
		case p.OrgType != directory.HeadOffice:
			return nil, kernel.Invalid(f, "duty.branch_staff", "ID", id)
		}
		out = append(out, p)
	}
	return out, nil
}

// headOfficePerson resolves the one person a form's field names.
func headOfficePerson(ctx context.Context, st *Schedule, field, ext string) (directory.Recipient, error) {
	ext = strings.TrimSpace(ext)
	if ext == "" {
		return directory.Recipient{}, kernel.Invalid(field, "duty.choose_person_error")
	}
	people, err := headOffice(ctx, st, "", []string{ext})
	var fe *kernel.FieldError
	if errors.As(err, &fe) {
		fe.Field = field
	}
	if err != nil {
		return directory.Recipient{}, err
	}
	return people[0], nil
}

// validWeekday checks a weekday of the weekly roster.
func validWeekday(weekday int) error {
	if weekday < 1 || weekday > 7 {
		return kernel.Invalid("weekday", "duty.invalid.weekday")
	}
	return nil
}

// AddDutySlot puts a head-office person (by external id) on a weekday's roster
// (1 = Monday … 7 = Sunday), audited. Adding someone already there changes nothing
// but is audited all the same: it is what was asked.
func (d *Planner) AddDutySlot(ctx context.Context, by audit.Actor, weekday int, recipient string) (directory.Recipient, error) {
	var p directory.Recipient
	err := d.change(ctx, by, func(tx *Schedule, ch *audit.Change) error {
		if err := validWeekday(weekday); err != nil {
			return err
		}
		var err error
		if p, err = headOfficePerson(ctx, tx, "recipient", recipient); err != nil {
			return err
		}
		if err := tx.AddDutySlot(ctx, weekday, p.ID); err != nil {
			return err
		}
		ch.Audit("duty.slot.add", "duty", "weekday "+strconv.Itoa(weekday), audit.Params{
			"weekday": strconv.Itoa(weekday), "recipient": p.ExternalID, "name": p.Name})
		return nil
	})
	return p, err
}

// RemoveDutySlot takes a person off a weekday's roster, audited. Branch staff are
// accepted here: taking someone off is always allowed.
func (d *Planner) RemoveDutySlot(ctx context.Context, by audit.Actor, weekday int, recipient string) error {
	return d.change(ctx, by, func(tx *Schedule, ch *audit.Change) error {
		if err := validWeekday(weekday); err != nil {
			return err
		}
		p, err := tx.Directory().RecipientByExternalID(ctx, recipient)
		if errors.Is(err, kernel.ErrNotFound) {
			return kernel.Invalid("recipient", "duty.no_recipient", "ID", strconv.Quote(recipient))
		}
		if err != nil {
			return err
		}
		if err := tx.RemoveDutySlot(ctx, weekday, p.ID); err != nil {
			return err
		}
		ch.Audit("duty.slot.remove", "duty", "weekday "+strconv.Itoa(weekday), audit.Params{
			"weekday": strconv.Itoa(weekday), "recipient": p.ExternalID, "name": p.Name})
		return nil
	})
}

// ReplaceDutyWeek replaces the whole weekly roster: weekday (1–7) → external ids of
// head-office staff; a weekday left out gets an empty roster. An unknown or branch
// person is a FieldError naming the weekday and position ("3[1]"). Audited with each
// weekday that changed, before and after.
func (d *Planner) ReplaceDutyWeek(ctx context.Context, by audit.Actor, week map[int][]string) error {
	return d.change(ctx, by, func(tx *Schedule, ch *audit.Change) error {
		w := Week{}
		for _, day := range slices.Sorted(maps.Keys(week)) {
			if day < 1 || day > 7 {
				return kernel.Invalid(strconv.Itoa(day), "duty.invalid.not_weekday", "Day", day)
			}
			people, err := headOffice(ctx, tx, strconv.Itoa(day), week[day])
			if err != nil {
				return err
			}
			for _, p := range people {
				w[day] = append(w[day], p.ID)
			}
		}
		before, err := tx.ReplaceDutyWeek(ctx, w)
		if err != nil {
			return err
		}
		changes, err := weekChanges(ctx, tx, before, w)
		if err != nil {
			return err
		}
		ch.Audit("duty.week.replace", "duty", "week", audit.Params{"changes": changes})
		return nil
	})
}

// weekChanges names each weekday whose roster changed, before and after, by external
// id: "1: E1001 → E1001, E1002; 3: — → E1003". Empty when nothing changed.
func weekChanges(ctx context.Context, st *Schedule, before, after Week) (string, error) {
	var ids []int64
	for _, w := range []Week{before, after} {
		for _, list := range w {
			ids = append(ids, list...)
		}
	}
	people, err := st.Directory().RecipientsByIDs(ctx, ids)
	if err != nil {
		return "", err
	}
	ext := make(map[int64]string, len(people))
	for _, p := range people {
		ext[p.ID] = p.ExternalID
	}
	names := func(list []int64) string {
		out := make([]string, 0, len(list))
		for _, id := range list {
			out = append(out, ext[id])
		}
		slices.Sort(out)
		out = slices.Compact(out)
		if len(out) == 0 {
			return "—"
		}
		return strings.Join(out, ", ")
	}
	var parts []string
	for day := 1; day <= 7; day++ {
		if was, now := names(before[day]), names(after[day]); was != now {
			parts = append(parts, fmt.Sprintf("%d: %s → %s", day, was, now))
		}
	}
	return strings.Join(parts, "; "), nil
}

// Override is an override as the console's form and the API give it: a person by
// external id added to (OverrideAdd) or removed from (OverrideRemove) the roster
// of a date.
type Override struct {
	Date      string
	Recipient string
	Action    string
	Note      string
}

// today is the dispatcher's current date (YYYY-MM-DD) in its time zone.
func (d *Planner) today() string {
	date, _ := DateOf(d.now(), d.loc)
	return date
}

// notPast refuses a date before today: a past date's roster has been used already,
// and the duty page, the calendar feeds and the reminder all look ahead, so a change to
// it would be saved and never seen.
func (d *Planner) notPast(field, date string) error {
	if err := ValidDate(field, date); err != nil {
		return err
	}
	if date < d.today() {
		return kernel.Invalid(field, "duty.invalid.past", "Today", d.today())
	}
	return nil
}

// SetOverride adds a head-office person to, or removes them from, the roster of a date
// (today or later), replacing their earlier override of that date; audited. It returns
// the person.
func (d *Planner) SetOverride(ctx context.Context, by audit.Actor, o Override) (directory.Recipient, error) {
	var p directory.Recipient
	err := d.change(ctx, by, func(tx *Schedule, ch *audit.Change) error {
		if err := d.notPast("date", o.Date); err != nil {
			return err
		}
		var err error
		if p, err = headOfficePerson(ctx, tx, "recipient", o.Recipient); err != nil {
			return err
		}
		before, err := overrideOf(ctx, tx, o.Date, p.ID)
		if err != nil {
			return err
		}
		if err := tx.SetOverride(ctx, &DutyOverride{Date: o.Date, RecipientID: p.ID, Action: o.Action, Note: o.Note}); err != nil {
			return err
		}
		params := audit.Params{"date": o.Date, "action": o.Action, "recipient": p.ExternalID, "name": p.Name, "note": o.Note}
		if before != nil {
			params["before"] = before.Action
		}
		ch.Audit("duty.override.set", "duty", o.Date, params)
		return nil
	})
	return p, err
}

// overrideOf returns a person's override of a date, or nil.
func overrideOf(ctx context.Context, st *Schedule, date string, recipientID int64) (*DutyOverride, error) {
	list, err := st.OverridesBetween(ctx, date, date)
	if err != nil {
		return nil, err
	}
	for _, o := range list {
		if o.RecipientID == recipientID {
			return &o, nil
		}
	}
	return nil, nil
}

// DeleteOverride removes a person's override of a date (a past one too: removing
// never hides anything), audited with what it was. kernel.ErrNotFound: no such person
// or override. It returns the person.
func (d *Planner) DeleteOverride(ctx context.Context, by audit.Actor, date, recipient string) (directory.Recipient, error) {
	var p directory.Recipient
	err := d.change(ctx, by, func(tx *Schedule, ch *audit.Change) error {
		if err := ValidDate("date", date); err != nil {
			return err
		}
		person, err := tx.Directory().RecipientByExternalID(ctx, recipient)
		if err != nil {
			return err
		}
		p = *person
		was, err := overrideOf(ctx, tx, date, p.ID)
		if err != nil {
			return err
		}
		if was == nil {
			return fmt.Errorf("duty: override of %s on %s: %w", recipient, date, kernel.ErrNotFound)
		}
		if err := tx.DeleteOverride(ctx, date, p.ID); err != nil {
			return err
		}
		ch.Audit("duty.override.delete", "duty", date, audit.Params{"date": date, "action": was.Action,
			"recipient": p.ExternalID, "name": p.Name})
		return nil
	})
	return p, err
}

// Swap is a shift swap as the console's form gives it: A gives away their duty on ADate
// and takes B's on BDate; people by external id.
type Swap struct {
	A, ADate string
	B, BDate string
	Note     string
}

// CreateSwap records a shift swap, four overrides made together, after checking that
// both dates are today or later and, by the duty rule, that each person is on duty on
// the date they give away. Audited. It returns the swap and its two people.
func (d *Planner) CreateSwap(ctx context.Context, by audit.Actor, s Swap) (*DutySwap, [2]directory.Recipient, error) {
	var sw *DutySwap
	var people [2]directory.Recipient
	err := d.change(ctx, by, func(tx *Schedule, ch *audit.Change) error {
		for i, pick := range []struct{ field, ext string }{{"a", s.A}, {"b", s.B}} {
			var err error
			if people[i], err = headOfficePerson(ctx, tx, pick.field, pick.ext); err != nil {
				return err
			}
		}
		sw = &DutySwap{AID: people[0].ID, ADate: s.ADate, BID: people[1].ID, BDate: s.BDate, Note: s.Note, CreatedBy: by.Name}
		if err := CheckSwap(sw); err != nil {
			return err
		}
		for _, give := range []struct {
			p           directory.Recipient
			date, field string
		}{{people[0], sw.ADate, "a_date"}, {people[1], sw.BDate, "b_date"}} {
			if err := d.notPast(give.field, give.date); err != nil {
				return err
			}
			day, err := tx.DutyDayOf(ctx, give.date)
			if err != nil {
				return err
			}
			if !BuildRoster(day).OnDuty[give.p.ID] {
				return kernel.Invalid(give.field, "swap.invalid.not_on_duty", "Name", give.p.Name, "Date", give.date)
			}
		}
		if err := tx.CreateSwap(ctx, sw); err != nil {
			return err
		}
		ch.Audit("duty.swap.create", "duty", "swap "+strconv.FormatInt(sw.ID, 10), swapParams(sw, people))
		return nil
	})
	return sw, people, err
}

// DeleteSwap undoes a shift swap: its overrides still in place go with it. Audited.
// kernel.ErrNotFound: no such swap. It returns the swap as it was and its people.
func (d *Planner) DeleteSwap(ctx context.Context, by audit.Actor, id int64) (*DutySwap, [2]directory.Recipient, error) {
	var sw *DutySwap
	var people [2]directory.Recipient
	err := d.change(ctx, by, func(tx *Schedule, ch *audit.Change) error {
		var err error
		if sw, err = tx.DeleteSwap(ctx, id); err != nil {
			return err
		}
		found, err := tx.Directory().RecipientsByIDs(ctx, []int64{sw.AID, sw.BID})
		if err != nil {
			return err
		}
		for _, p := range found {
			if p.ID == sw.AID {
				people[0] = p
			}
			if p.ID == sw.BID {
				people[1] = p
			}
		}
		ch.Audit("duty.swap.delete", "duty", "swap "+strconv.FormatInt(id, 10), swapParams(sw, people))
		return nil
	})
	return sw, people, err
}

// swapParams names a swap for its audit sentence.
func swapParams(sw *DutySwap, people [2]directory.Recipient) audit.Params {
	return audit.Params{"a": people[0].ExternalID, "a_name": people[0].Name, "a_date": sw.ADate,
		"b": people[1].ExternalID, "b_name": people[1].Name, "b_date": sw.BDate, "note": sw.Note}
}

// RotateDutyFeed gives a head-office person (by recipient id) a new secret calendar
// feed address, replacing their old one, audited without the token; it returns the
// token, shown once. kernel.ErrNotFound: no such person.
func (d *Planner) RotateDutyFeed(ctx context.Context, by audit.Actor, recipientID int64) (string, error) {
	var token string
	err := d.change(ctx, by, func(tx *Schedule, ch *audit.Change) error {
		p, err := recipientByID(ctx, tx, recipientID)
		if err != nil {
			return err
		}
		if token, err = tx.RotateDutyFeed(ctx, recipientID, by.Name); err != nil {
			return err
		}
		ch.Audit("duty.feed.rotate", "recipient", p.ExternalID, audit.Params{"recipient": p.ExternalID, "name": p.Name})
		return nil
	})
	return token, err
}

// DeleteDutyFeed turns a person's calendar feed off, audited. kernel.ErrNotFound: no
// such person, or no feed to turn off.
func (d *Planner) DeleteDutyFeed(ctx context.Context, by audit.Actor, recipientID int64) error {
	return d.change(ctx, by, func(tx *Schedule, ch *audit.Change) error {
		p, err := recipientByID(ctx, tx, recipientID)
		if err != nil {
			return err
		}
		if err := tx.DeleteDutyFeed(ctx, recipientID); err != nil {
			return err
		}
		ch.Audit("duty.feed.delete", "recipient", p.ExternalID, audit.Params{"recipient": p.ExternalID, "name": p.Name})
		return nil
	})
}

// recipientByID returns a recipient, or kernel.ErrNotFound.
func recipientByID(ctx context.Context, st *Schedule, id int64) (directory.Recipient, error) {
	people, err := st.Directory().RecipientsByIDs(ctx, []int64{id})
	if err != nil {
		return directory.Recipient{}, err
	}
	if len(people) == 0 {
		return directory.Recipient{}, fmt.Errorf("duty: recipient %d: %w", id, kernel.ErrNotFound)
	}
	return people[0], nil
}
