package dispatch_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"herald/audit"
	"herald/dispatch"
	"herald/duty"
	"herald/kernel"
	"herald/models"
	"herald/templates"
)

// writeFixture is the intake fixture on Wednesday 2026-11-25, 10:00 UTC, with the demo
// week: Monday E1001 and E1002, Wednesday E1003 and E1004, Thursday E1004 and E1001.
type writeFixture struct {
	*intakeFixture
	by audit.Actor
}

func newWriteFixture(t *testing.T) *writeFixture {
	f := newIntakeFixture(t)
	dispatch.SetClock(f.d, func() time.Time { return time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC) })
	return &writeFixture{intakeFixture: f, by: audit.Actor{Name: "ops1", Type: audit.ActorUser, Person: "ops1", IP: "192.0.2.1"}}
}

// refused checks that err is a validation failure of field and that the change wrote no
// audit entry of action.
func (f *writeFixture) refused(t *testing.T, err error, field, action string, entriesBefore int) {
	t.Helper()
	var fe *kernel.FieldError
	if !errors.As(err, &fe) || fe.Field != field {
		t.Errorf("got %v, want an error naming %s", err, field)
	}
	if n := auditCount(t, f.store, action); n != entriesBefore {
		t.Errorf("a refused change wrote %d %s entries", n-entriesBefore, action)
	}
}

// lastEntry is the one new entry of action since there were before, with its values.
func (f *writeFixture) lastEntry(t *testing.T, action string, before int) audit.Params {
	t.Helper()
	entries, err := f.store.AuditLog().List(context.Background(), audit.Filter{Action: action}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != before+1 {
		t.Fatalf("%d new %s entries, want 1", len(entries)-before, action)
	}
	e := entries[0]
	if e.Actor != "ops1" || e.ActorType != audit.ActorUser || e.IP != "192.0.2.1" {
		t.Errorf("entry %+v", e)
	}
	return e.ParamMap()
}

func (f *writeFixture) id(t *testing.T, ext string) int64 {
	t.Helper()
	p, err := f.store.Directory().RecipientByExternalID(context.Background(), ext)
	if err != nil {
		t.Fatal(err)
	}
	return p.ID
}

func TestWeeklyRosterService(t *testing.T) {
	t.Parallel()
	f := newWriteFixture(t)
	ctx := context.Background()
	week := func() duty.Week {
		w, err := f.store.Duty().DutyWeek(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	start := week()

	for _, tc := range []struct {
		name      string
		weekday   int
		recipient string
		field     string
	}{
		{"weekday 0", 0, "E1003", "weekday"},
		{"weekday 8", 8, "E1003", "weekday"},
		{"nobody", 2, " ", "recipient"},
		{"unknown person", 2, "E9999", "recipient"},
		{"branch staff", 2, "E2001", "recipient"},
	} {
		t.Run("add: "+tc.name, func(t *testing.T) {
			_, err := f.d.Duty().AddDutySlot(ctx, f.by, tc.weekday, tc.recipient)
			f.refused(t, err, tc.field, "duty.slot.add", 0)
		})
	}
	for _, tc := range []struct {
		name      string
		weekday   int
		recipient string
		field     string
	}{
		{"weekday 9", 9, "E1001", "weekday"},
		{"unknown person", 1, "E9999", "recipient"},
	} {
		t.Run("remove: "+tc.name, func(t *testing.T) {
			f.refused(t, f.d.Duty().RemoveDutySlot(ctx, f.by, tc.weekday, tc.recipient), tc.field, "duty.slot.remove", 0)
		})
	}
	for _, tc := range []struct {
		name  string
		week  map[int][]string
		field string
	}{
		{"weekday 8", map[int][]string{1: {"E1001"}, 8: {"E1001"}}, "8"},
		{"branch staff", map[int][]string{1: {"E2001"}}, "1[0]"},
		{"unknown second person", map[int][]string{2: {"E1001", "nope"}}, "2[1]"},
	} {
		t.Run("replace: "+tc.name, func(t *testing.T) {
			f.refused(t, f.d.Duty().ReplaceDutyWeek(ctx, f.by, tc.week), tc.field, "duty.week.replace", 0)
		})
	}
	if got := week(); !mapsEqual(got, start) {
		t.Fatalf("refused changes changed the week: %v, was %v", got, start)
	}

	p, err := f.d.Duty().AddDutySlot(ctx, f.by, 2, "E1003")
	if err != nil || p.ExternalID != "E1003" {
		t.Fatalf("add: %+v, %v", p, err)
	}
	if !slices.Contains(week()[2], f.id(t, "E1003")) {
		t.Errorf("Tuesday %v lacks E1003", week()[2])
	}
	if p := f.lastEntry(t, "duty.slot.add", 0); p["weekday"] != "2" || p["recipient"] != "E1003" || p["name"] == "" {
		t.Errorf("add entry %v", p)
	}
	if err := f.d.Duty().RemoveDutySlot(ctx, f.by, 2, "E1003"); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(week()[2], f.id(t, "E1003")) {
		t.Errorf("Tuesday %v still has E1003", week()[2])
	}
	if p := f.lastEntry(t, "duty.slot.remove", 0); p["weekday"] != "2" || p["recipient"] != "E1003" {
		t.Errorf("remove entry %v", p)
	}

	if err := f.d.Duty().ReplaceDutyWeek(ctx, f.by, map[int][]string{1: {"E1003"}, 6: {"E1004", "E1004"}}); err != nil {
		t.Fatal(err)
	}
	if got := week(); len(got) != 2 || !slices.Equal(got[1], []int64{f.id(t, "E1003")}) || len(got[6]) != 1 {
		t.Errorf("week after replacing: %v", got)
	}
	p2 := f.lastEntry(t, "duty.week.replace", 0)
	if c := p2["changes"]; !strings.Contains(c, "1: E1001, E1002 → E1003") || !strings.Contains(c, "6: E1002 → E1004") || !strings.Contains(c, "3: E1003, E1004 → —") {
		t.Errorf("replace entry %v", p2)
	}
}

func mapsEqual(a, b duty.Week) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func TestOverrideService(t *testing.T) {
	t.Parallel()
	f := newWriteFixture(t)
	ctx := context.Background()
	overrides := func() []duty.DutyOverride {
		list, err := f.store.Duty().OverridesBetween(ctx, "2000-01-01", "2100-01-01")
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	good := duty.Override{Date: "2026-11-25", Recipient: "E1003", Action: duty.OverrideAdd, Note: "cover"}
	with := func(change func(o *duty.Override)) duty.Override {
		o := good
		change(&o)
		return o
	}
	for _, tc := range []struct {
		name  string
		o     duty.Override
		field string
	}{
		{"not a date", with(func(o *duty.Override) { o.Date = "2026-13-01" }), "date"},
		{"yesterday", with(func(o *duty.Override) { o.Date = "2026-11-24" }), "date"},
		{"nobody", with(func(o *duty.Override) { o.Recipient = "" }), "recipient"},
		{"unknown person", with(func(o *duty.Override) { o.Recipient = "E9999" }), "recipient"},
		{"branch staff", with(func(o *duty.Override) { o.Recipient = "E2001" }), "recipient"},
		{"bad action", with(func(o *duty.Override) { o.Action = "swap" }), "action"},
		{"long note", with(func(o *duty.Override) { o.Note = strings.Repeat("长", 256) }), "note"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.d.Duty().SetOverride(ctx, f.by, tc.o)
			f.refused(t, err, tc.field, "duty.override.set", 0)
			if list := overrides(); len(list) != 0 {
				t.Errorf("a refused override was saved: %+v", list)
			}
		})
	}
	var fe *kernel.FieldError
	if _, err := f.d.Duty().SetOverride(ctx, f.by, with(func(o *duty.Override) { o.Date = "2026-11-24" })); errors.As(err, &fe) {
		if msg := fe.Text("zh-CN"); !strings.Contains(msg, "早于今天（2026-11-25）") {
			t.Errorf("the past date's message in Chinese: %q", msg)
		}
	}

	// Today is allowed; a second override of the same person and date replaces the first.
	if _, err := f.d.Duty().SetOverride(ctx, f.by, good); err != nil {
		t.Fatal(err)
	}
	if p := f.lastEntry(t, "duty.override.set", 0); p["date"] != "2026-11-25" || p["action"] != "add" || p["recipient"] != "E1003" || p["note"] != "cover" || p["before"] != "" {
		t.Errorf("entry %v", p)
	}
	if _, err := f.d.Duty().SetOverride(ctx, f.by, with(func(o *duty.Override) { o.Action = duty.OverrideRemove })); err != nil {
		t.Fatal(err)
	}
	if list := overrides(); len(list) != 1 || list[0].Action != duty.OverrideRemove || list[0].RecipientID != f.id(t, "E1003") {
		t.Fatalf("overrides %+v", list)
	}
	if p := f.lastEntry(t, "duty.override.set", 1); p["action"] != "remove" || p["before"] != "add" {
		t.Errorf("replacing entry %v", p)
	}

	if _, err := f.d.Duty().DeleteOverride(ctx, f.by, "tomorrow", "E1003"); !errors.As(err, &fe) || fe.Field != "date" {
		t.Errorf("delete with a bad date: %v", err)
	}
	for _, who := range []string{"E9999", "E1001"} {
		if _, err := f.d.Duty().DeleteOverride(ctx, f.by, "2026-11-25", who); !errors.Is(err, kernel.ErrNotFound) {
			t.Errorf("delete the override %s has not: %v", who, err)
		}
	}
	if n := auditCount(t, f.store, "duty.override.delete"); n != 0 {
		t.Errorf("refused deletes wrote %d entries", n)
	}
	if _, err := f.d.Duty().DeleteOverride(ctx, f.by, "2026-11-25", "E1003"); err != nil {
		t.Fatal(err)
	}
	if list := overrides(); len(list) != 0 {
		t.Errorf("overrides after delete: %+v", list)
	}
	if p := f.lastEntry(t, "duty.override.delete", 0); p["date"] != "2026-11-25" || p["recipient"] != "E1003" || p["action"] != "remove" {
		t.Errorf("delete entry %v", p)
	}
}

func TestHolidayService(t *testing.T) {
	t.Parallel()
	f := newWriteFixture(t)
	ctx := context.Background()
	holidays := func() []duty.Holiday {
		list, err := f.store.Duty().HolidaysBetween(ctx, "2000-01-01", "2100-01-01")
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	five := 5
	for _, tc := range []struct {
		name  string
		hd    duty.Holiday
		field string
	}{
		{"not a date", duty.Holiday{Date: "2027-02-30", Kind: duty.HolidayOff}, "date"},
		{"bad kind", duty.Holiday{Date: "2027-01-01", Kind: "holiday"}, "kind"},
		{"workday without weekday", duty.Holiday{Date: "2027-01-01", Kind: duty.HolidayWorkday}, "as_weekday"},
		{"long name", duty.Holiday{Date: "2027-01-01", Kind: duty.HolidayOff, Name: strings.Repeat("节", 101)}, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.refused(t, f.d.Duty().SetHoliday(ctx, f.by, tc.hd), tc.field, "duty.holiday.set", 0)
		})
	}
	for _, tc := range []struct {
		name  string
		list  []duty.Holiday
		field string
	}{
		{"second entry bad", []duty.Holiday{{Date: "2027-01-01", Kind: duty.HolidayOff}, {Date: "2027-01-02", Kind: "maybe"}}, "[1].kind"},
		{"too many", make([]duty.Holiday, duty.MaxHolidays+1), "holidays"},
	} {
		t.Run("set: "+tc.name, func(t *testing.T) {
			f.refused(t, f.d.Duty().SetHolidays(ctx, f.by, tc.list), tc.field, "duty.holidays.set", 0)
		})
	}
	if list := holidays(); len(list) != 0 {
		t.Fatalf("refused changes saved %+v", list)
	}

	if err := f.d.Duty().SetHoliday(ctx, f.by, duty.Holiday{Date: "2027-01-01", Kind: duty.HolidayOff, Name: "元旦"}); err != nil {
		t.Fatal(err)
	}
	if p := f.lastEntry(t, "duty.holiday.set", 0); p["date"] != "2027-01-01" || p["kind"] != "off" || p["name"] != "元旦" || p["before_kind"] != "" {
		t.Errorf("entry %v", p)
	}
	if err := f.d.Duty().SetHoliday(ctx, f.by, duty.Holiday{Date: "2027-01-01", Kind: duty.HolidayWorkday, AsWeekday: &five}); err != nil {
		t.Fatal(err)
	}
	if p := f.lastEntry(t, "duty.holiday.set", 1); p["kind"] != "workday" || p["as_weekday"] != "5" || p["before_kind"] != "off" || p["before_name"] != "元旦" {
		t.Errorf("replacing entry %v", p)
	}
	if list := holidays(); len(list) != 1 || list[0].Kind != duty.HolidayWorkday {
		t.Fatalf("holidays %+v", list)
	}

	if err := f.d.Duty().DeleteHoliday(ctx, f.by, "2027-01-02"); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("deleting a date without an entry: %v", err)
	}
	if err := f.d.Duty().DeleteHoliday(ctx, f.by, "2027-01-01"); err != nil {
		t.Fatal(err)
	}
	if p := f.lastEntry(t, "duty.holiday.delete", 0); p["date"] != "2027-01-01" || p["kind"] != "workday" || p["as_weekday"] != "5" {
		t.Errorf("delete entry %v", p)
	}

	list := []duty.Holiday{{Date: "2027-10-01", Kind: duty.HolidayOff, Name: "国庆节"}, {Date: "2027-09-26", Kind: duty.HolidayWorkday, AsWeekday: &five}}
	if err := f.d.Duty().SetHolidays(ctx, f.by, list); err != nil {
		t.Fatal(err)
	}
	if p := f.lastEntry(t, "duty.holidays.set", 0); p["count"] != "2" || p["new"] != "2" || p["changed"] != "0" || p["from"] != "2027-09-26" || p["to"] != "2027-10-01" {
		t.Errorf("set entry %v", p)
	}
	list[0].Name = "National Day"
	if err := f.d.Duty().ImportHolidays(ctx, f.by, list, duty.HolidaysFromNational); err != nil {
		t.Fatal(err)
	}
	if p := f.lastEntry(t, "duty.holidays.import", 0); p["count"] != "2" || p["new"] != "0" || p["changed"] != "1" || p["source"] != "national" {
		t.Errorf("import entry %v", p)
	}
	if got := holidays(); len(got) != 2 || got[1].Name != "National Day" {
		t.Errorf("holidays after import %+v", got)
	}
}

func TestSwapService(t *testing.T) {
	t.Parallel()
	f := newWriteFixture(t)
	ctx := context.Background()
	// Monday 2026-11-30: E1001, E1002; Wednesday 2026-12-02: E1003, E1004.
	good := duty.Swap{A: "E1001", ADate: "2026-11-30", B: "E1003", BDate: "2026-12-02", Note: "dentist"}
	with := func(change func(s *duty.Swap)) duty.Swap {
		s := good
		change(&s)
		return s
	}
	for _, tc := range []struct {
		name  string
		s     duty.Swap
		field string
	}{
		{"nobody", with(func(s *duty.Swap) { s.A = "" }), "a"},
		{"branch staff", with(func(s *duty.Swap) { s.B = "E2001" }), "b"},
		{"same person", with(func(s *duty.Swap) { s.B = "E1001" }), "b"},
		{"same date", with(func(s *duty.Swap) { s.BDate = s.ADate }), "b_date"},
		{"not a date", with(func(s *duty.Swap) { s.ADate = "next monday" }), "a_date"},
		{"a past date", with(func(s *duty.Swap) { s.ADate = "2026-11-23" }), "a_date"},
		{"not on duty that day", with(func(s *duty.Swap) { s.A = "E1004" }), "a_date"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := f.d.Duty().CreateSwap(ctx, f.by, tc.s)
			f.refused(t, err, tc.field, "duty.swap.create", 0)
		})
	}
	if list, _ := f.store.Duty().OverridesBetween(ctx, "2000-01-01", "2100-01-01"); len(list) != 0 {
		t.Fatalf("refused swaps left overrides %+v", list)
	}

	sw, people, err := f.d.Duty().CreateSwap(ctx, f.by, good)
	if err != nil {
		t.Fatal(err)
	}
	if people[0].ExternalID != "E1001" || people[1].ExternalID != "E1003" || sw.CreatedBy != "ops1" {
		t.Errorf("swap %+v of %s and %s", sw, people[0].ExternalID, people[1].ExternalID)
	}
	if list, _ := f.store.Duty().OverridesBetween(ctx, "2000-01-01", "2100-01-01"); len(list) != 4 {
		t.Errorf("the swap made %d overrides, want 4", len(list))
	}
	if p := f.lastEntry(t, "duty.swap.create", 0); p["a"] != "E1001" || p["a_date"] != "2026-11-30" || p["b"] != "E1003" || p["b_date"] != "2026-12-02" || p["note"] != "dentist" {
		t.Errorf("create entry %v", p)
	}
	if _, _, err := f.d.Duty().DeleteSwap(ctx, f.by, sw.ID+100); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("deleting no swap: %v", err)
	}
	if _, _, err := f.d.Duty().DeleteSwap(ctx, f.by, sw.ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := f.store.Duty().OverridesBetween(ctx, "2000-01-01", "2100-01-01"); len(list) != 0 {
		t.Errorf("overrides after undoing the swap: %+v", list)
	}
	if p := f.lastEntry(t, "duty.swap.delete", 0); p["a"] != "E1001" || p["b"] != "E1003" {
		t.Errorf("delete entry %v", p)
	}
}

func TestDutyReminderSettingsService(t *testing.T) {
	t.Parallel()
	f := newWriteFixture(t)
	ctx := context.Background()
	if err := f.store.Templates().CreateTemplate(ctx, &templates.Template{Name: "on-duty", MsgType: "text", Body: "On duty {{.date}}", Variables: templates.StringList{"date"}}); err != nil {
		t.Fatal(err)
	}
	good := models.ReminderConfig{Enabled: true, Time: "18:30", Account: models.SandboxAccountName, Template: "on-duty"}
	for _, tc := range []struct {
		name  string
		cfg   models.ReminderConfig
		field string
	}{
		{"no template", models.ReminderConfig{Enabled: true, Time: "18:30", Account: models.SandboxAccountName}, "template"},
		{"bad time", models.ReminderConfig{Enabled: true, Time: "7pm", Account: models.SandboxAccountName, Template: "on-duty"}, "time"},
		{"unknown account", models.ReminderConfig{Enabled: true, Time: "18:30", Account: "nope", Template: "on-duty"}, "account"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.refused(t, f.d.SetDutyReminder(ctx, f.by, tc.cfg), tc.field, "duty.reminder.set", 0)
		})
	}
	if cfg, _ := f.store.Intake().DutyReminderConfig(ctx); cfg.Enabled {
		t.Fatalf("refused settings were saved: %+v", cfg)
	}
	if err := f.d.SetDutyReminder(ctx, f.by, good); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := f.store.Intake().DutyReminderConfig(ctx); cfg != good {
		t.Errorf("saved %+v", cfg)
	}
	var by string
	if err := f.store.SQL().QueryRowContext(ctx, "SELECT updated_by FROM settings WHERE name = ?", models.SettingDutyReminder).Scan(&by); err != nil || by != "ops1" {
		t.Errorf("the settings record %q (%v) as who changed them, want ops1", by, err)
	}
	if p := f.lastEntry(t, "duty.reminder.set", 0); p["enabled"] != "on" || p["time"] != "18:30" || p["template"] != "on-duty" ||
		p["before_enabled"] != "off" || p["before_time"] != models.DefaultReminderTime {
		t.Errorf("entry %v", p)
	}
}

func TestDutyFeedService(t *testing.T) {
	t.Parallel()
	f := newWriteFixture(t)
	ctx := context.Background()
	var fe *kernel.FieldError
	if _, err := f.d.Duty().RotateDutyFeed(ctx, f.by, f.id(t, "E2001")); !errors.As(err, &fe) || fe.Field != "recipient" {
		t.Errorf("a feed for branch staff: %v", err)
	}
	if _, err := f.d.Duty().RotateDutyFeed(ctx, f.by, 999999); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("a feed for nobody: %v", err)
	}
	if err := f.d.Duty().DeleteDutyFeed(ctx, f.by, f.id(t, "E1001")); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("turning off a feed there is not: %v", err)
	}
	if n := auditCount(t, f.store, "duty.feed.rotate") + auditCount(t, f.store, "duty.feed.delete"); n != 0 {
		t.Errorf("refused feed changes wrote %d entries", n)
	}
	if feeds, _ := f.store.Duty().DutyFeeds(ctx); len(feeds) != 0 {
		t.Fatalf("refused changes left feeds %+v", feeds)
	}

	token, err := f.d.Duty().RotateDutyFeed(ctx, f.by, f.id(t, "E1001"))
	if err != nil || !strings.HasPrefix(token, "hf_") {
		t.Fatalf("token %q, %v", token, err)
	}
	if p, err := f.store.Duty().DutyFeedOwner(ctx, token); err != nil || p.ExternalID != "E1001" {
		t.Errorf("the feed's owner: %+v, %v", p, err)
	}
	p := f.lastEntry(t, "duty.feed.rotate", 0)
	if p["recipient"] != "E1001" {
		t.Errorf("rotate entry %v", p)
	}
	for _, v := range p {
		if strings.Contains(v, token) {
			t.Errorf("the audit entry holds the token: %v", p)
		}
	}
	if err := f.d.Duty().DeleteDutyFeed(ctx, f.by, f.id(t, "E1001")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Duty().DutyFeedOwner(ctx, token); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("the feed still works: %v", err)
	}
	if p := f.lastEntry(t, "duty.feed.delete", 0); p["recipient"] != "E1001" {
		t.Errorf("delete entry %v", p)
	}
}
