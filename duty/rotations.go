package duty

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"herald/directory"
	"herald/kernel"
)

// Which days a rotation covers.
const (
	// CoversEveryDay: every date from the start, days off included.
	CoversEveryDay = "every_day"
	// CoversWorkdays: Monday to Friday unless the holiday calendar makes the date a day
	// off, and every make-up workday.
	CoversWorkdays = "workdays"
	// CoversWeekdays: the chosen weekdays, read as the weekly table reads them: a day off
	// is not covered and a make-up workday counts as the weekday it stands for.
	CoversWeekdays = "weekdays"
)

// Rotation limits.
const (
	MaxRotationName    = 64
	MaxRotationMembers = 200
	MaxTurnDays        = 366
)

// Rotation is a roster source beside the weekly table: turns taken in order from a start
// date, each turn by one person or a group of people on duty together.
//
// A turn of a multiple of 7 days runs over calendar weeks from the start, whatever the
// rotation covers ("team A one week, team B the next"). Any other turn counts only the
// days the rotation covers: a daily rotation over workdays skips weekends and days off
// without using a turn on them ("the six of us take turns, one a day").
type Rotation struct {
	ID        int64
	Name      string
	Members   [][]int64 `gorm:"serializer:json"` // turns in order, each a group of recipient ids
	StartDate string
	TurnDays  int
	Covers    string
	Weekdays  []int `gorm:"serializer:json"` // ISO weekdays, only with CoversWeekdays
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TableName is the rotations' table.
func (Rotation) TableName() string { return "duty_rotations" }

// RotationSpec is a rotation as people write it: members by external id in turn order,
// a group joined with "+" ("E1001+E1002").
type RotationSpec struct {
	Name     string   `json:"name"`
	Members  []string `json:"members"`
	Start    string   `json:"start"`
	TurnDays int      `json:"turn_days"`
	Covers   string   `json:"covers"`
	Weekdays []int    `json:"weekdays,omitempty"`
}

// Rotations lists every rotation by name.
func (s *Schedule) Rotations(ctx context.Context) ([]Rotation, error) {
	var out []Rotation
	if err := s.k.Reader(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("duty: rotations: %w", err)
	}
	return out, nil
}

// RotationByName returns one rotation, or ErrNotFound.
func (s *Schedule) RotationByName(ctx context.Context, name string) (*Rotation, error) {
	var out []Rotation
	if err := s.k.Reader(ctx).Where("name = ?", name).Limit(1).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("duty: rotation %s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("duty: rotation %s: %w", name, kernel.ErrNotFound)
	}
	return &out[0], nil
}

// CreateRotation checks a spec, resolves its members and stores it.
func (s *Schedule) CreateRotation(ctx context.Context, spec RotationSpec) (*Rotation, error) {
	r, err := s.rotationFrom(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := s.k.Writer(ctx).Create(r).Error; err != nil {
		if kernel.IsDuplicate(err) {
			return nil, kernel.DuplicateField("name", "rotation.invalid.name_taken")
		}
		return nil, fmt.Errorf("duty: create rotation: %w", err)
	}
	return r, nil
}

// UpdateRotation replaces the rotation called name with spec (which may rename it) and
// returns it as it was, for the audit log.
func (s *Schedule) UpdateRotation(ctx context.Context, name string, spec RotationSpec) (before, after *Rotation, err error) {
	after, err = s.rotationFrom(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	err = s.k.Tx(ctx, func(tx *gorm.DB) error {
		var old []Rotation
		if err := tx.Where("name = ?", name).Limit(1).Find(&old).Error; err != nil {
			return fmt.Errorf("duty: rotation %s: %w", name, err)
		}
		if len(old) == 0 {
			return fmt.Errorf("duty: rotation %s: %w", name, kernel.ErrNotFound)
		}
		before = &old[0]
		after.ID, after.CreatedAt = before.ID, before.CreatedAt
		res := tx.Model(&Rotation{}).Where("id = ? AND updated_at = ?", before.ID, before.UpdatedAt).Select("*").Updates(after)
		if res.Error != nil {
			if kernel.IsDuplicate(res.Error) {
				return kernel.DuplicateField("name", "rotation.invalid.name_taken")
			}
			return fmt.Errorf("duty: update rotation: %w", res.Error)
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("duty: rotation %s changed meanwhile: %w", name, kernel.ErrStateChanged)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return before, after, nil
}

// DeleteRotation removes a rotation.
func (s *Schedule) DeleteRotation(ctx context.Context, name string) error {
	res := s.k.Writer(ctx).Where("name = ?", name).Delete(&Rotation{})
	if res.Error != nil {
		return fmt.Errorf("duty: delete rotation: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("duty: rotation %s: %w", name, kernel.ErrNotFound)
	}
	return nil
}

// rotationFrom checks a spec field by field and resolves its members, who must be
// head-office staff.
func (s *Schedule) rotationFrom(ctx context.Context, spec RotationSpec) (*Rotation, error) {
	name := strings.TrimSpace(spec.Name)
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		return nil, kernel.Invalid("name", "rotation.invalid.name_required")
	case n > MaxRotationName:
		return nil, kernel.Invalid("name", "duty.invalid.too_long", "Max", MaxRotationName)
	case strings.ContainsAny(name, "/?#%"):
		return nil, kernel.Invalid("name", "rotation.invalid.name_chars")
	}
	if err := kernel.CheckText("name", name, false); err != nil {
		return nil, err
	}
	if len(spec.Members) == 0 {
		return nil, kernel.Invalid("members", "rotation.invalid.no_members")
	}
	if len(spec.Members) > MaxRotationMembers {
		return nil, kernel.Invalid("members", "rotation.invalid.too_many", "Max", MaxRotationMembers)
	}
	if err := ValidDate("start", spec.Start); err != nil {
		return nil, err
	}
	if spec.TurnDays < 1 || spec.TurnDays > MaxTurnDays {
		return nil, kernel.Invalid("turn_days", "rotation.invalid.turn_days", "Max", MaxTurnDays)
	}
	r := &Rotation{Name: name, StartDate: spec.Start, TurnDays: spec.TurnDays, Covers: spec.Covers, Weekdays: []int{}}
	switch spec.Covers {
	case CoversEveryDay, CoversWorkdays:
		if len(spec.Weekdays) > 0 {
			return nil, kernel.Invalid("weekdays", "rotation.invalid.weekdays_unused")
		}
	case CoversWeekdays:
		if len(spec.Weekdays) == 0 {
			return nil, kernel.Invalid("weekdays", "rotation.invalid.no_weekdays")
		}
		for i, d := range spec.Weekdays {
			if d < 1 || d > 7 {
				return nil, kernel.Invalid(fmt.Sprintf("weekdays[%d]", i), "duty.invalid.weekday")
			}
		}
		r.Weekdays = slices.Compact(slices.Sorted(slices.Values(spec.Weekdays)))
	default:
		return nil, kernel.Invalid("covers", "rotation.invalid.covers")
	}
	groups := make([][]string, len(spec.Members))
	var all []string
	for i, m := range spec.Members {
		for _, id := range strings.Split(m, "+") {
			id = strings.TrimSpace(id)
			if id == "" {
				return nil, kernel.Invalid(fmt.Sprintf("members[%d]", i), "rotation.invalid.member_empty")
			}
			groups[i] = append(groups[i], id)
			all = append(all, id)
		}
	}
	people, err := s.Directory().RecipientsByExternalIDs(ctx, all)
	if err != nil {
		return nil, err
	}
	byExt := make(map[string]directory.Recipient, len(people))
	for _, p := range people {
		byExt[p.ExternalID] = p
	}
	for i, g := range groups {
		var turn []int64
		for _, id := range g {
			p, ok := byExt[id]
			field := fmt.Sprintf("members[%d]", i)
			switch {
			case !ok:
				return nil, kernel.Invalid(field, "duty.no_recipient", "ID", id)
			case p.OrgType != directory.HeadOffice:
				return nil, kernel.Invalid(field, "duty.branch_staff", "ID", id)
			case slices.Contains(turn, p.ID):
				return nil, kernel.Invalid(field, "validation.appears_twice")
			}
			turn = append(turn, p.ID)
		}
		r.Members = append(r.Members, turn)
	}
	return r, nil
}

// RotationMembers lists the recipient ids of every turn of the rotations.
func RotationMembers(list []Rotation) []int64 {
	var ids []int64
	for _, r := range list {
		for _, g := range r.Members {
			ids = append(ids, g...)
		}
	}
	return ids
}

// RotationSpecs writes rotations back as people write them, members by external id.
func (s *Schedule) RotationSpecs(ctx context.Context, list []Rotation) ([]RotationSpec, error) {
	people, err := s.Directory().RecipientsByIDs(ctx, RotationMembers(list))
	if err != nil {
		return nil, err
	}
	ext := make(map[int64]string, len(people))
	for _, p := range people {
		ext[p.ID] = p.ExternalID
	}
	out := make([]RotationSpec, len(list))
	for i, r := range list {
		spec := RotationSpec{Name: r.Name, Members: make([]string, len(r.Members)), Start: r.StartDate, TurnDays: r.TurnDays, Covers: r.Covers}
		if r.Covers == CoversWeekdays {
			spec.Weekdays = r.Weekdays
		}
		for j, g := range r.Members {
			names := make([]string, len(g))
			for k, id := range g {
				names[k] = ext[id]
			}
			spec.Members[j] = strings.Join(names, "+")
		}
		out[i] = spec
	}
	return out, nil
}

// Kinds of day on the duty calendar.
const (
	DayWorkday       = "workday"
	DayWeekend       = "weekend"
	DayHoliday       = "holiday"        // a holiday entry of kind off
	DayMakeupWorkday = "makeup_workday" // a holiday entry of kind workday
)

// DutyData is what the duty rule needs for a run of dates: the weekly roster, the
// rotations, the holiday entries from the earliest rotation start (turns are counted
// from it) to the last date, and the overrides of the dates.
type DutyData struct {
	Week      Week
	Rotations []Rotation
	Holidays  map[string]*Holiday
	Overrides map[string][]DutyOverride
}

// DutyBetween loads the duty data of the dates from one to another, inclusive
// (YYYY-MM-DD).
func (s *Schedule) DutyBetween(ctx context.Context, from, to string) (*DutyData, error) {
	d := &DutyData{Holidays: map[string]*Holiday{}, Overrides: map[string][]DutyOverride{}}
	var err error
	if d.Rotations, err = s.Rotations(ctx); err != nil {
		return nil, err
	}
	first := from
	for _, r := range d.Rotations {
		first = min(first, r.StartDate)
	}
	holidays, err := s.HolidaysBetween(ctx, first, to)
	if err != nil {
		return nil, err
	}
	for i := range holidays {
		d.Holidays[holidays[i].Date] = &holidays[i]
	}
	if d.Week, err = s.DutyWeek(ctx); err != nil {
		return nil, err
	}
	overrides, err := s.OverridesBetween(ctx, from, to)
	if err != nil {
		return nil, err
	}
	for _, o := range overrides {
		d.Overrides[o.Date] = append(d.Overrides[o.Date], o)
	}
	return d, nil
}

// DutyDay is everything the duty rule needs to know about one date.
type DutyDay struct {
	Date      string
	Kind      string // DayWorkday, DayWeekend, DayHoliday or DayMakeupWorkday
	Holiday   *Holiday
	Weekly    []int64 // recipient ids on the weekly roster of the weekday that applies
	Rotations []RotationTurn
	Overrides []DutyOverride
}

// RotationTurn is who a rotation puts on duty on a date.
type RotationTurn struct {
	Name    string
	Members []int64
}

// DutyDayOf loads the duty data of one date (YYYY-MM-DD).
func (s *Schedule) DutyDayOf(ctx context.Context, date string) (*DutyDay, error) {
	d, err := s.DutyBetween(ctx, date, date)
	if err != nil {
		return nil, err
	}
	return d.Day(date)
}

// Weekday is the ISO weekday (1 = Monday … 7 = Sunday) of a YYYY-MM-DD date.
func Weekday(date time.Time) int {
	wd := int(date.Weekday())
	if wd == 0 {
		wd = 7
	}
	return wd
}

// Day gathers one date's duty data: its kind, the weekly roster that applies (none on a
// day off, that of the weekday a make-up workday stands for), the rotations' turns and
// the overrides.
func (d *DutyData) Day(date string) (*DutyDay, error) {
	t, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return nil, kernel.Invalid("date", "validation.date")
	}
	day := &DutyDay{Date: date, Holiday: d.Holidays[date], Overrides: d.Overrides[date]}
	day.Kind = d.kind(t)
	if wd := d.rosterWeekday(t); wd != 0 {
		day.Weekly = d.Week[wd]
	}
	for i := range d.Rotations {
		if turn := d.turn(&d.Rotations[i], t); turn != nil {
			day.Rotations = append(day.Rotations, RotationTurn{Name: d.Rotations[i].Name, Members: turn})
		}
	}
	return day, nil
}

// kind is what the calendar makes of a date.
func (d *DutyData) kind(t time.Time) string {
	if h := d.Holidays[t.Format(time.DateOnly)]; h != nil {
		if h.Kind == HolidayOff {
			return DayHoliday
		}
		return DayMakeupWorkday
	}
	if Weekday(t) >= 6 {
		return DayWeekend
	}
	return DayWorkday
}

// rosterWeekday is the weekday whose weekly roster applies on a date: none (0) on a day
// off, the weekday a make-up workday stands for, else the date's own.
func (d *DutyData) rosterWeekday(t time.Time) int {
	if h := d.Holidays[t.Format(time.DateOnly)]; h != nil {
		switch {
		case h.Kind == HolidayOff:
			return 0
		case h.AsWeekday != nil:
			return *h.AsWeekday
		}
	}
	return Weekday(t)
}

// covers reports whether rotation r has a turn on date t.
func (d *DutyData) covers(r *Rotation, t time.Time) bool {
	switch r.Covers {
	case CoversEveryDay:
		return true
	case CoversWorkdays:
		k := d.kind(t)
		return k == DayWorkday || k == DayMakeupWorkday
	case CoversWeekdays:
		wd := d.rosterWeekday(t)
		return wd != 0 && slices.Contains(r.Weekdays, wd)
	}
	return false
}

// turn returns who rotation r puts on duty on date t, or nil if it covers no turn then.
func (d *DutyData) turn(r *Rotation, t time.Time) []int64 {
	return d.turnAfter(r, t, 0)
}

// turnAfter returns who takes the turn k turns after the one rotation r puts on duty on
// date t (0: that turn, 1: the next in line, its backup), or nil if it covers no turn
// then.
func (d *DutyData) turnAfter(r *Rotation, t time.Time, k int) []int64 {
	start, err := time.Parse(time.DateOnly, r.StartDate)
	if err != nil || t.Before(start) || len(r.Members) == 0 || r.TurnDays < 1 || !d.covers(r, t) {
		return nil
	}
	var elapsed int // days of turns used before t
	if r.TurnDays%7 == 0 {
		elapsed = int(t.Sub(start).Hours()/24 + 0.5)
	} else {
		for day := start; day.Before(t); day = day.AddDate(0, 0, 1) {
			if d.covers(r, day) {
				elapsed++
			}
		}
	}
	return r.Members[(elapsed/r.TurnDays+k)%len(r.Members)]
}

// RotationTurnOn returns who rotation name puts on duty on date (YYYY-MM-DD), or with
// next the people whose turn comes after them; nil when the rotation covers no turn
// that day. ErrNotFound: no such rotation.
func (s *Schedule) RotationTurnOn(ctx context.Context, name, date string, next int) ([]int64, error) {
	d, err := s.DutyBetween(ctx, date, date)
	if err != nil {
		return nil, err
	}
	t, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return nil, kernel.Invalid("date", "validation.date")
	}
	for i := range d.Rotations {
		if d.Rotations[i].Name == name {
			return d.turnAfter(&d.Rotations[i], t, next), nil
		}
	}
	return nil, fmt.Errorf("duty: rotation %s: %w", name, kernel.ErrNotFound)
}
