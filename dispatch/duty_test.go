package dispatch_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/directory"
	"herald/dispatch"
	"herald/duty"
	"herald/internal/testenv"
	"herald/models"
	"herald/sending"
)

var shanghai, _ = time.LoadLocation("Asia/Shanghai")

// dutyFixture is a store with four head-office people and one branch person, and a
// dispatcher whose log is captured.
type dutyFixture struct {
	store *models.Store
	d     *dispatch.Dispatcher
	log   *bytes.Buffer
	ids   map[string]int64
}

func newDutyFixture(t *testing.T) *dutyFixture {
	t.Helper()
	store := testenv.Store(t)
	ctx := context.Background()
	f := &dutyFixture{store: store, log: &bytes.Buffer{}, ids: map[string]int64{}}
	d, err := dispatch.NewDispatcher(dispatch.Config{Store: store, Enqueuer: testenv.Enqueuer(t), Location: shanghai,
		Log: slog.New(slog.NewTextHandler(f.log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f.d = d
	for _, p := range []struct {
		id  string
		org directory.OrgType
	}{{"H1", directory.HeadOffice}, {"H2", directory.HeadOffice}, {"H3", directory.HeadOffice}, {"H4", directory.HeadOffice}, {"B1", directory.Branch}} {
		r := &directory.Recipient{ExternalID: p.id, Name: p.id, OrgType: p.org, Active: true, TianyuanID: "ty" + p.id}
		if err := store.Directory().CreateRecipient(ctx, r); err != nil {
			t.Fatal(err)
		}
		f.ids[p.id] = r.ID
	}
	// Monday: H1, H2. Tuesday: H3. Wednesday: H4. Nobody on other days.
	week := duty.Week{1: {f.ids["H1"], f.ids["H2"]}, 2: {f.ids["H3"]}, 3: {f.ids["H4"]}}
	if _, err := store.Duty().ReplaceDutyWeek(ctx, week); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *dutyFixture) receives(t *testing.T, at time.Time) map[string]string {
	t.Helper()
	roster, err := f.d.Duty().RosterOn(context.Background(), at)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, id := range []string{"H1", "H2", "H3", "H4", "B1"} {
		people, _ := f.store.Directory().RecipientsByExternalIDs(context.Background(), []string{id})
		reason := roster.SkipReason(&people[0])
		if reason == "" {
			reason = "receives"
		}
		out[id] = reason
	}
	return out
}

func TestDutyRule(t *testing.T) {
	t.Parallel()
	intPtr := func(n int) *int { return &n }
	// 2026-11-23 is a Monday; 2026-11-28 a Saturday.
	tests := []struct {
		name      string
		at        string // an instant; its date in Asia/Shanghai is the delivery date
		holidays  []duty.Holiday
		overrides []duty.DutyOverride
		want      map[string]string
		warns     bool
	}{
		{
			name: "monday: weekly roster",
			at:   "2026-11-23T09:00:00+08:00",
			want: map[string]string{"H1": "receives", "H2": "receives", "H3": "off_duty", "H4": "off_duty", "B1": "receives"},
		},
		{
			name: "the date is taken in HERALD_TIMEZONE, not UTC",
			at:   "2026-11-23T17:00:00Z", // already Tuesday in Shanghai
			want: map[string]string{"H1": "off_duty", "H2": "off_duty", "H3": "receives", "H4": "off_duty", "B1": "receives"},
		},
		{
			name:     "a day off skips head office as a holiday, with no warning",
			at:       "2026-11-23T09:00:00+08:00",
			holidays: []duty.Holiday{{Date: "2026-11-23", Kind: duty.HolidayOff}},
			want:     map[string]string{"H1": "holiday", "H2": "holiday", "H3": "holiday", "H4": "holiday", "B1": "receives"},
		},
		{
			name:     "a make-up workday with nobody on its roster is a missing schedule",
			at:       "2026-11-28T09:00:00+08:00",
			holidays: []duty.Holiday{{Date: "2026-11-28", Kind: duty.HolidayWorkday, AsWeekday: intPtr(6)}},
			want:     map[string]string{"H1": "duty_not_configured", "H2": "duty_not_configured", "H3": "duty_not_configured", "H4": "duty_not_configured", "B1": "receives"},
			warns:    true,
		},
		{
			name:     "make-up workday uses the named weekday's roster",
			at:       "2026-11-28T09:00:00+08:00",
			holidays: []duty.Holiday{{Date: "2026-11-28", Kind: duty.HolidayWorkday, AsWeekday: intPtr(3)}},
			want:     map[string]string{"H1": "off_duty", "H2": "off_duty", "H3": "off_duty", "H4": "receives", "B1": "receives"},
		},
		{
			name: "overrides add and remove on the date",
			at:   "2026-11-23T09:00:00+08:00",
			overrides: []duty.DutyOverride{
				{Date: "2026-11-23", Action: duty.OverrideRemove}, // H1, see below
				{Date: "2026-11-23", Action: duty.OverrideAdd},    // H3
			},
			want: map[string]string{"H1": "off_duty", "H2": "receives", "H3": "receives", "H4": "off_duty", "B1": "receives"},
		},
		{
			name:      "override on a holiday adds to an empty roster",
			at:        "2026-11-23T09:00:00+08:00",
			holidays:  []duty.Holiday{{Date: "2026-11-23", Kind: duty.HolidayOff}},
			overrides: []duty.DutyOverride{{Date: "2026-11-23", Action: duty.OverrideAdd}}, // H1
			want:      map[string]string{"H1": "receives", "H2": "off_duty", "H3": "off_duty", "H4": "off_duty", "B1": "receives"},
		},
		{
			name:  "empty roster: nobody configured for a Saturday",
			at:    "2026-11-28T09:00:00+08:00",
			want:  map[string]string{"H1": "duty_not_configured", "H2": "duty_not_configured", "H3": "duty_not_configured", "H4": "duty_not_configured", "B1": "receives"},
			warns: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newDutyFixture(t)
			ctx := context.Background()
			for _, h := range tt.holidays {
				if err := f.store.Duty().SetHoliday(ctx, &h); err != nil {
					t.Fatal(err)
				}
			}
			who := []string{"H1", "H3"}
			for i, o := range tt.overrides {
				o.RecipientID = f.ids[who[i]]
				if err := f.store.Duty().SetOverride(ctx, &o); err != nil {
					t.Fatal(err)
				}
			}
			at, _ := time.Parse(time.RFC3339, tt.at)
			if diff := cmp.Diff(tt.want, f.receives(t, at)); diff != "" {
				t.Errorf("who receives (-want +got):\n%s", diff)
			}
			logged := strings.Contains(f.log.String(), "DUTY_SCHEDULE_NOT_CONFIGURED")
			if logged != tt.warns {
				t.Errorf("DUTY_SCHEDULE_NOT_CONFIGURED logged %v, want %v; log:\n%s", logged, tt.warns, f.log)
			}
			if tt.warns {
				date, _ := duty.DateOf(at, shanghai)
				if !strings.Contains(f.log.String(), "date="+date) {
					t.Errorf("the warning does not name the date %s: %s", date, f.log)
				}
			}
		})
	}
}

func TestScheduledSendUsesItsOwnDate(t *testing.T) {
	t.Parallel()
	f := newDutyFixture(t)
	dispatch.SetClock(f.d, func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, shanghai) }) // a Sunday: nobody on duty
	ctx := context.Background()
	acct := &sending.Account{Name: "ty", Platform: "tianyuan", Enabled: true, MaxAttempts: 3, Config: map[string]string{}}
	if err := f.store.Sending().SaveAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	monday := time.Date(2026, 11, 23, 9, 0, 0, 0, shanghai)
	res, err := f.d.Plan(ctx, dispatch.Request{Account: "ty", Recipients: []string{"H1", "H3", "B1"}, Text: "hi", SendAt: &monday})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range res.Messages {
		got = append(got, res.Names[m.RecipientID])
	}
	if diff := cmp.Diff([]string{"H1", "B1"}, got); diff != "" {
		t.Errorf("recipients of a send scheduled for Monday (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(models.Reasons{{Recipient: "H3", Reason: "off_duty"}}, res.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	// The same request sent now (Sunday) finds nobody on duty.
	res, err = f.d.Plan(ctx, dispatch.Request{Account: "ty", Recipients: []string{"H1", "B1"}, Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(models.Reasons{{Recipient: "H1", Reason: "duty_not_configured"}}, res.Skipped); diff != "" {
		t.Errorf("skipped on Sunday (-want +got):\n%s", diff)
	}
	// to_on_duty adds Monday's roster.
	res, err = f.d.Plan(ctx, dispatch.Request{Account: "ty", ToOnDuty: true, Text: "hi", SendAt: &monday})
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, m := range res.Messages {
		got = append(got, res.Names[m.RecipientID])
	}
	if diff := cmp.Diff([]string{"H1", "H2"}, got); diff != "" {
		t.Errorf("to_on_duty on Monday (-want +got):\n%s", diff)
	}
}

// A rotation counts at intake exactly as the weekly table does, on the delivery date: a
// send scheduled for a rotation's day reaches whoever's turn it is then.
func TestScheduledSendFollowsRotations(t *testing.T) {
	t.Parallel()
	f := newDutyFixture(t)
	dispatch.SetClock(f.d, func() time.Time { return time.Date(2026, 11, 27, 10, 0, 0, 0, shanghai) }) // a Friday
	ctx := context.Background()
	acct := &sending.Account{Name: "ty", Platform: "tianyuan", Enabled: true, MaxAttempts: 3, Config: map[string]string{}}
	if err := f.store.Sending().SaveAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	// Saturdays, a week each: H3 from 2026-11-28, then H4 with H1.
	if _, err := f.store.Duty().CreateRotation(ctx, duty.RotationSpec{Name: "sat", Members: []string{"H3", "H4+H1"}, Start: "2026-11-23",
		TurnDays: 7, Covers: duty.CoversWeekdays, Weekdays: []int{6}}); err != nil {
		t.Fatal(err)
	}
	// H3 is also taken off the second Saturday by an override, which wins.
	if err := f.store.Duty().SetOverride(ctx, &duty.DutyOverride{Date: "2026-12-05", RecipientID: f.ids["H4"], Action: duty.OverrideRemove}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		at      time.Time
		want    []string
		skipped models.Reasons
	}{
		{time.Date(2026, 11, 28, 9, 0, 0, 0, shanghai), []string{"H3", "B1"}, models.Reasons{{Recipient: "H1", Reason: "off_duty"}, {Recipient: "H4", Reason: "off_duty"}}},
		{time.Date(2026, 12, 5, 9, 0, 0, 0, shanghai), []string{"H1", "B1"}, models.Reasons{{Recipient: "H3", Reason: "off_duty"}, {Recipient: "H4", Reason: "off_duty"}}},
	} {
		res, err := f.d.Plan(ctx, dispatch.Request{Account: "ty", Recipients: []string{"H1", "H3", "H4", "B1"}, Text: "hi", SendAt: &tt.at})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range res.Messages {
			got = append(got, res.Names[m.RecipientID])
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: recipients (-want +got):\n%s", tt.at, diff)
		}
		if diff := cmp.Diff(tt.skipped, res.Skipped); diff != "" {
			t.Errorf("%s: skipped (-want +got):\n%s", tt.at, diff)
		}
	}
	// Sent now, on Friday, nobody is on duty: the rotation is not asked about today.
	res, err := f.d.Plan(ctx, dispatch.Request{Account: "ty", Recipients: []string{"H3"}, Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(models.Reasons{{Recipient: "H3", Reason: "duty_not_configured"}}, res.Skipped); diff != "" {
		t.Errorf("skipped on Friday (-want +got):\n%s", diff)
	}
}
