package reports_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"herald/alert"
	"herald/audit"
	"herald/duty"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
	"herald/reports"
)

var shanghai = mustZone("Asia/Shanghai")

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// local is a time on Herald's clock (Asia/Shanghai, eight hours east of UTC).
func local(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02 15:04:05", s, shanghai)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// fixture is the reports' service on a fresh database with the demo staff and duty week
// (E1001–E1004 at head office), October 2026 with 国庆 (1st–7th off, E1003 put on duty
// on the 3rd) and two make-up Saturdays (the 10th as a Monday, the 17th as a Friday), and
// these rows:
//
//   - three alerts of policy "core" in batches of API key 1, opened on Tuesday
//     2026-10-20 at 09:00 and 09:10: A1 acknowledged after 2 s and resolved after 10 s,
//     notifying E1001; A2 acknowledged after 4 s and resolved after 20 s, notifying
//     E1001 and E1002; A3 exhausted after its second step, notifying E1002 (at 09:10);
//   - one alert of policy "other" in a batch of API key 2, notifying E1003;
//   - notices to E1003 on Monday 12th at 10:00:00, 10:00:30 and 10:01:30 (the second
//     within a minute of the first: one interruption; the third a minute after the
//     second: another), to E1004 on the make-up Saturday 10th at 10:00 (work hours), on
//     Sunday 11th at 10:00 (rest), on Monday 12th at 02:00 (sleep) and 20:00 (rest),
//     and on the 3rd, a holiday, at 23:30 (sleep); none through a key.
type fixture struct {
	store *models.Store
	svc   *reports.Analyst
	ids   map[string]int64
	now   time.Time
}

var admin = audit.Actor{Name: "admin1", Type: audit.ActorUser, Person: "admin1"}

func readKey(id int64) audit.Actor {
	return audit.Actor{Name: "apikey:k", Type: audit.ActorAPIKey, APIKeyID: id, OwnOnly: true}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	s := testenv.Store(t)
	if err := s.SeedDemo(ctx); err != nil {
		t.Fatal(err)
	}
	f := &fixture{store: s, ids: map[string]int64{}, now: local("2026-11-02 12:00:00")}
	people, err := s.Directory().RecipientsByExternalIDs(ctx, []string{"E1001", "E1002", "E1003", "E1004", "E2001"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range people {
		f.ids[p.ExternalID] = p.ID
	}
	monday, friday := 1, 5
	for _, h := range []duty.Holiday{
		{Date: "2026-10-01", Kind: duty.HolidayOff, Name: "国庆"}, {Date: "2026-10-02", Kind: duty.HolidayOff, Name: "国庆"},
		{Date: "2026-10-03", Kind: duty.HolidayOff, Name: "国庆"}, {Date: "2026-10-04", Kind: duty.HolidayOff, Name: "国庆"},
		{Date: "2026-10-05", Kind: duty.HolidayOff, Name: "国庆"}, {Date: "2026-10-06", Kind: duty.HolidayOff, Name: "国庆"},
		{Date: "2026-10-07", Kind: duty.HolidayOff, Name: "国庆"},
		{Date: "2026-10-10", Kind: duty.HolidayWorkday, AsWeekday: &monday, Name: "调休"},
		{Date: "2026-10-17", Kind: duty.HolidayWorkday, AsWeekday: &friday, Name: "调休"},
	} {
		if err := s.Duty().SetHoliday(ctx, &h); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Duty().SetOverride(ctx, &duty.DutyOverride{Date: "2026-10-03", RecipientID: f.ids["E1003"], Action: duty.OverrideAdd}); err != nil {
		t.Fatal(err)
	}
	key1, key2 := int64(1), int64(2)
	opened := local("2026-10-20 09:00:00")
	testenv.SeedRows(t, s, "batches", []testenv.Row{
		testenv.BatchRow("b1", &key1, opened), testenv.BatchRow("b2", &key1, opened), testenv.BatchRow("b3", &key1, opened),
		testenv.BatchRow("b4", &key2, opened), testenv.BatchRow("b-console", nil, opened),
	})
	at := func(d time.Duration) *time.Time { x := opened.Add(d); return &x }
	alertRow := func(id int64, batch, policy, state string, step int, openedAt time.Time, ack, resolved *time.Time) testenv.Row {
		return testenv.Row{"id": id, "batch_id": batch, "policy": policy, "policy_copy": "{}", "state": state, "step": step,
			"round": 1, "account_id": 1, "opened_at": openedAt, "acknowledged_at": ack, "resolved_at": resolved, "source": "zabbix",
			"text": "t"}
	}
	later := opened.Add(10 * time.Minute)
	testenv.SeedRows(t, s, "alerts", []testenv.Row{
		alertRow(1, "b1", "core", alert.AlertResolved, 1, opened, at(2*time.Second), at(10*time.Second)),
		alertRow(2, "b2", "core", alert.AlertResolved, 1, opened, at(4*time.Second), at(20*time.Second)),
		alertRow(3, "b3", "core", alert.AlertExhausted, 2, later, nil, nil),
		alertRow(4, "b4", "other", alert.AlertOpen, 1, opened, nil, nil),
	})
	a := func(id int64) *int64 { return &id }
	testenv.SeedRows(t, s, "messages", []testenv.Row{
		testenv.SentMessage("m1", "b1", f.ids["E1001"], a(1), opened),
		testenv.SentMessage("m2", "b2", f.ids["E1001"], a(2), opened),
		testenv.SentMessage("m3", "b2", f.ids["E1002"], a(2), opened),
		testenv.SentMessage("m4", "b3", f.ids["E1002"], a(3), later),
		testenv.SentMessage("m5", "b4", f.ids["E1003"], a(4), opened.Add(time.Hour)),
		testenv.SentMessage("n1", "b-console", f.ids["E1003"], nil, local("2026-10-12 10:00:00")),
		testenv.SentMessage("n2", "b-console", f.ids["E1003"], nil, local("2026-10-12 10:00:30")),
		testenv.SentMessage("n3", "b-console", f.ids["E1003"], nil, local("2026-10-12 10:01:30")),
		testenv.SentMessage("n4", "b-console", f.ids["E1004"], nil, local("2026-10-10 10:00:00")),
		testenv.SentMessage("n5", "b-console", f.ids["E1004"], nil, local("2026-10-11 10:00:00")),
		testenv.SentMessage("n6", "b-console", f.ids["E1004"], nil, local("2026-10-12 02:00:00")),
		testenv.SentMessage("n7", "b-console", f.ids["E1004"], nil, local("2026-10-12 20:00:00")),
		testenv.SentMessage("n8", "b-console", f.ids["E1004"], nil, local("2026-10-03 23:30:00")),
		// Across the end of summer time in New York (1 November 2026, 02:00): 23:30
		// EDT on the 31st and 07:30 EST on 2 November, both 12:30 or 03:30 UTC.
		testenv.SentMessage("d1", "b-console", f.ids["E2001"], nil, time.Date(2026, 11, 1, 3, 30, 0, 0, time.UTC)),
		testenv.SentMessage("d2", "b-console", f.ids["E2001"], nil, time.Date(2026, 11, 2, 12, 30, 0, 0, time.UTC)),
	})
	f.svc = reports.NewService(reports.Config{Store: reports.NewStore(s.DB()), Duty: s.Duty(), Staff: s.Directory(),
		Policies: alert.Of(s), Location: shanghai, Now: func() time.Time { return f.now }})
	return f
}

// TestReports runs the reports' cases on one fixture (a fresh database costs seconds on
// MySQL); each reads what the fixture wrote, and the schedules' case writes only its own.
func TestReports(t *testing.T) {
	f := newFixture(t)
	t.Run("response by policy and person", func(t *testing.T) { checkResponseByPolicyAndPerson(t, f) })
	t.Run("interruptions", func(t *testing.T) { checkInterruptions(t, f) })
	t.Run("interruptions from the tallies of closed days", func(t *testing.T) { checkTallies(t, f) })
	t.Run("interruptions across summer time", func(t *testing.T) { checkSummerTime(t, f) })
	t.Run("duty load", func(t *testing.T) { checkDutyLoad(t, f) })
	t.Run("csv", func(t *testing.T) { checkReportCSV(t, f) })
	t.Run("schedules send once per period", func(t *testing.T) { checkScheduleSendsOncePerPeriod(t, f) })
}

func october(t *testing.T, f *fixture) reports.Range {
	t.Helper()
	r, err := f.svc.Range("2026-10-01", "2026-10-31")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ptr(v float64) *float64 { return &v }

// checkResponseByPolicyAndPerson: two alerts acknowledged after 2 s and 4 s and one
// exhausted give an acknowledgment rate of 2/3, a median of 3 s and a 90th percentile
// of 3.8 s (2 + 0.9 × 2), resolutions after 10 s and 20 s a median of 15 s and 19 s;
// by person each counts the alerts whose notices reached them; a read key sees only
// the alerts of its own batches.
func checkResponseByPolicyAndPerson(t *testing.T, f *fixture) {
	ctx := context.Background()
	r := october(t, f)
	core := reports.Response{Key: "core", Alerts: 3, Acknowledged: 2, AckRate: 0.6667, AckMedian: ptr(3), AckP90: ptr(3.8),
		ResolveMedian: ptr(15), ResolveP90: ptr(19), Escalated: 1, Exhausted: 1}
	other := reports.Response{Key: "other", Alerts: 1}
	overall := reports.Response{Alerts: 4, Acknowledged: 2, AckRate: 0.5, AckMedian: ptr(3), AckP90: ptr(3.8),
		ResolveMedian: ptr(15), ResolveP90: ptr(19), Escalated: 1, Exhausted: 1}
	opts := cmpopts.IgnoreUnexported(reports.Response{})

	got, err := f.svc.Response(ctx, admin, r, reports.ByPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]reports.Response{core, other}, got.Rows, opts); diff != "" {
		t.Errorf("by policy (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(overall, got.Overall, opts); diff != "" {
		t.Errorf("overall (-want +got):\n%s", diff)
	}

	got, err = f.svc.Response(ctx, admin, r, reports.ByPerson)
	if err != nil {
		t.Fatal(err)
	}
	want := []reports.Response{
		{Key: "E1001", Name: "Li Wei", Alerts: 2, Acknowledged: 2, AckRate: 1, AckMedian: ptr(3), AckP90: ptr(3.8), ResolveMedian: ptr(15), ResolveP90: ptr(19)},
		{Key: "E1002", Name: "Wang Fang", Alerts: 2, Acknowledged: 1, AckRate: 0.5, AckMedian: ptr(4), AckP90: ptr(4), ResolveMedian: ptr(20), ResolveP90: ptr(20), Escalated: 1, Exhausted: 1},
		{Key: "E1003", Name: "Zhang Min", Alerts: 1},
	}
	if diff := cmp.Diff(want, got.Rows, opts); diff != "" {
		t.Errorf("by person (-want +got):\n%s", diff)
	}

	got, err = f.svc.Response(ctx, readKey(1), r, reports.ByPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]reports.Response{core}, got.Rows, opts); diff != "" {
		t.Errorf("key 1's own (-want +got):\n%s", diff)
	}
	got, err = f.svc.Response(ctx, readKey(2), r, reports.ByPerson)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != 1 || got.Rows[0].Key != "E1003" || got.Overall.Alerts != 1 {
		t.Errorf("key 2 sees %+v, want its one alert to E1003", got.Rows)
	}

	var fe *kernel.FieldError
	if _, err := f.svc.Response(ctx, admin, r, "team"); !errors.As(err, &fe) || fe.Field != "group_by" {
		t.Errorf("group_by team: %v, want a field error on group_by", err)
	}
}

// octoberInterruptions is the fixture's October, worked out by hand (checkInterruptions).
var octoberInterruptions = []reports.Interruptions{
	{Recipient: "E1004", Name: "Chen Jie", Notices: 5, Interruptions: 5, Work: 1, Rest: 2, Sleep: 2},
	{Recipient: "E1003", Name: "Zhang Min", Notices: 4, Interruptions: 3, Work: 3},
	{Recipient: "E1002", Name: "Wang Fang", Notices: 2, Interruptions: 2, Work: 2},
	{Recipient: "E1001", Name: "Li Wei", Notices: 2, Interruptions: 1, Work: 1},
}

// checkInterruptions: notices 30 s apart are one interruption and a third 60 s after the
// second another; an interruption is work, rest or sleep by when it began on Herald's
// clock and calendar (the make-up Saturday is a working day, the holiday is not).
func checkInterruptions(t *testing.T, f *fixture) {
	ctx := context.Background()
	got, err := f.svc.Interruptions(ctx, admin, october(t, f), "23:00-08:00")
	if err != nil {
		t.Fatal(err)
	}
	want := octoberInterruptions
	if diff := cmp.Diff(want, got.People); diff != "" {
		t.Errorf("interruptions (-want +got):\n%s", diff)
	}
	if total := (reports.Interruptions{Notices: 13, Interruptions: 11, Work: 7, Rest: 2, Sleep: 2}); got.Total != total {
		t.Errorf("total %+v, want %+v", got.Total, total)
	}

	got, err = f.svc.Interruptions(ctx, readKey(1), october(t, f), "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[2:], got.People); diff != "" {
		t.Errorf("key 1 sees only the notices of its alerts (-want +got):\n%s", diff)
	}
	var fe *kernel.FieldError
	if _, err := f.svc.Interruptions(ctx, admin, october(t, f), "23:00"); !errors.As(err, &fe) || fe.Field != "sleep" {
		t.Errorf("sleep 23:00: %v, want a field error on sleep", err)
	}
}

// checkTallies: a closed date's tally is worked out once, stored and read back after
// (a notice written into it later is not read again), the pass stores what is left up
// to the last closed date once, and a notice in the last minute of a day joins the
// interruption of the next day's first. The service runs in Asia/Chongqing, Shanghai's
// clock under another name, so its tallies are its own in the fixture's database.
func checkTallies(t *testing.T, f *fixture) {
	ctx := context.Background()
	chongqing := mustZone("Asia/Chongqing")
	at := func(now time.Time) *reports.Analyst {
		return reports.NewService(reports.Config{Store: reports.NewStore(f.store.DB()), Duty: f.store.Duty(), Staff: f.store.Directory(),
			Policies: alert.Of(f.store), Location: chongqing, Now: func() time.Time { return now }})
	}
	svc := at(f.now)
	tallied := func() int {
		var n int
		if err := f.store.SQL().QueryRow("SELECT COUNT(*) FROM notice_days_tallied WHERE zone = 'Asia/Chongqing'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	r, err := svc.Range("2026-10-01", "2026-10-31")
	if err != nil {
		t.Fatal(err)
	}
	for _, pass := range []string{"worked out", "read back"} {
		got, err := svc.Interruptions(ctx, admin, r, "23:00-08:00")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(octoberInterruptions, got.People); diff != "" {
			t.Errorf("%s (-want +got):\n%s", pass, diff)
		}
		if n := tallied(); n != 31 {
			t.Errorf("%s: %d dates tallied, want October's 31", pass, n)
		}
		if pass == "worked out" {
			// Written into a closed date after its tally: the tally stands.
			testenv.SeedRows(t, f.store, "messages", []testenv.Row{
				testenv.SentMessage("late", "b-console", f.ids["E1001"], nil, local("2026-10-12 15:00:00"))})
		}
	}
	// The first notice is on 3 October; from there to 1 November, the last closed date
	// on 2 November at noon, only 1 November is left.
	for i, want := range []int{1, 0} {
		if n, err := svc.TallyClosedDays(ctx); err != nil || n != want {
			t.Errorf("pass %d: %d dates tallied (%v), want %d", i+1, n, err, want)
		}
	}

	testenv.SeedRows(t, f.store, "messages", []testenv.Row{
		testenv.SentMessage("eve", "b-console", f.ids["E1001"], nil, local("2026-09-20 23:59:40")),
		testenv.SentMessage("dawn", "b-console", f.ids["E1001"], nil, local("2026-09-21 00:00:10")),
		testenv.SentMessage("day", "b-console", f.ids["E1001"], nil, local("2026-09-21 09:30:00")),
	})
	sept, err := svc.Range("2026-09-20", "2026-09-21")
	if err != nil {
		t.Fatal(err)
	}
	want := []reports.Interruptions{{Recipient: "E1001", Name: "Li Wei", Notices: 3, Interruptions: 2, Work: 1, Sleep: 1}}
	// Three minutes into the 21st, neither date is closed: both are worked out afresh.
	for name, s := range map[string]*reports.Analyst{"open": at(local("2026-09-21 00:03:00")), "closed": svc} {
		got, err := s.Interruptions(ctx, admin, sept, "")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got.People); diff != "" {
			t.Errorf("across midnight, dates %s (-want +got):\n%s", name, diff)
		}
	}
	if n := tallied(); n != 32+2 {
		t.Errorf("%d dates tallied, want October's, 1 November and the two of September", n)
	}
}

// checkSummerTime: in a time zone whose offset changes within the range, each notice
// is placed by the offset of its own moment: 23:30 EDT and 07:30 EST are both sleep
// (one offset for the whole range would put one of them at 22:30 or 08:30).
func checkSummerTime(t *testing.T, f *fixture) {
	ny := mustZone("America/New_York")
	svc := reports.NewService(reports.Config{Store: reports.NewStore(f.store.DB()), Duty: f.store.Duty(), Staff: f.store.Directory(),
		Policies: alert.Of(f.store), Location: ny, Now: func() time.Time { return f.now }})
	r, err := svc.Range("2026-10-31", "2026-11-02")
	if err != nil {
		t.Fatal(err)
	}
	got, err := svc.Interruptions(context.Background(), admin, r, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []reports.Interruptions{{Recipient: "E2001", Name: "Liu Yang", Notices: 2, Interruptions: 2, Sleep: 2}}
	if diff := cmp.Diff(want, got.People); diff != "" {
		t.Errorf("across summer time (-want +got):\n%s", diff)
	}
}

// checkDutyLoad: October 2026 on the demo week, worked out by hand: 17 workdays, 5
// weekend days, the make-up 10th (Monday's roster: E1001, E1002) and 17th (Friday's:
// E1001, E1003), and E1003 on duty on the 3rd of 国庆; the totals are the duty calendar's.
func checkDutyLoad(t *testing.T, f *fixture) {
	ctx := context.Background()
	got, err := f.svc.Duty(ctx, october(t, f))
	if err != nil {
		t.Fatal(err)
	}
	want := []reports.DutyLoad{
		{Recipient: "E1001", Name: "Li Wei", Workday: 11, MakeupWorkday: 2, Total: 13},
		{Recipient: "E1002", Name: "Wang Fang", Workday: 6, Weekend: 2, MakeupWorkday: 1, Total: 9},
		{Recipient: "E1003", Name: "Zhang Min", Workday: 10, Holiday: 1, MakeupWorkday: 1, Total: 12},
		{Recipient: "E1004", Name: "Chen Jie", Workday: 7, Weekend: 3, Total: 10},
	}
	if diff := cmp.Diff(want, got.People); diff != "" {
		t.Errorf("duty load (-want +got):\n%s", diff)
	}
	// The calendar's own function, day by day.
	rosters, err := duty.Rosters(ctx, f.store.Duty(), "2026-10-01", "2026-10-31")
	if err != nil {
		t.Fatal(err)
	}
	calendar := map[string]int{}
	for _, r := range rosters {
		calendar[r.Kind] += len(r.OnDuty)
	}
	for _, kind := range reports.DayKinds {
		if got.Total.Of(kind) != calendar[kind] {
			t.Errorf("%s: report %d, calendar %d", kind, got.Total.Of(kind), calendar[kind])
		}
	}
}

// checkReportCSV: the CSV opens with a byte order mark and the headers given.
func checkReportCSV(t *testing.T, f *fixture) {
	got, err := f.svc.Duty(context.Background(), october(t, f))
	if err != nil {
		t.Fatal(err)
	}
	table := got.Table("合计")
	text := string(table.CSV([]string{"工号", "姓名", "工作日", "周末", "法定节假日", "调休上班", "合计"}))
	want := "\uFEFF工号,姓名,工作日,周末,法定节假日,调休上班,合计\nE1001,Li Wei,11,0,0,2,13\n"
	if !strings.HasPrefix(text, want) || !strings.HasSuffix(text, "合计,,34,5,1,4,44\n") {
		t.Errorf("csv:\n%q", text)
	}
}

// sender records the reports sent; with fail set it refuses them, as an intake whose
// database is away does.
type sender struct {
	sent []string
	fail error
}

func (s *sender) SendReport(_ context.Context, to reports.Send, subject, text string) error {
	if s.fail != nil {
		return s.fail
	}
	s.sent = append(s.sent, strings.Join(to.Recipients, ",")+"|"+text)
	return nil
}

// checkScheduleSendsOncePerPeriod: a weekly schedule made on a Wednesday sends nothing
// until Monday 09:00; then once, whichever of two services (two processes) passes
// first; after Herald was down over two Mondays, once on the first pass whose notice
// goes out (one that cannot be sent gives its period back).
func checkScheduleSendsOncePerPeriod(t *testing.T, f *fixture) {
	ctx := context.Background()
	out := &sender{}
	f.now = local("2026-10-21 15:00:00") // a Wednesday
	svc := func() *reports.Analyst {
		return reports.NewService(reports.Config{Store: reports.NewStore(f.store.DB()), Duty: f.store.Duty(), Staff: f.store.Directory(),
			Policies: alert.Of(f.store), Location: shanghai, Now: func() time.Time { return f.now }, Sender: out,
			Language: "en", PublicURL: "https://herald.example"})
	}
	one, two := svc(), svc()
	var fe *kernel.FieldError
	if _, err := one.CreateSchedule(ctx, admin, reports.ScheduleInput{Report: "response", Period: "weekly"}); !errors.As(err, &fe) || fe.Field != "send" {
		t.Fatalf("a schedule to nobody: %v, want a field error on send", err)
	}
	if _, err := one.CreateSchedule(ctx, admin, reports.ScheduleInput{Report: "response", Period: "weekly",
		Send: reports.Send{Recipients: []string{"E1001"}}}); err != nil {
		t.Fatal(err)
	}
	pass := func(want int) {
		t.Helper()
		n1, err := one.SendDue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n2, err := two.SendDue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n1+n2 != want {
			t.Errorf("at %s: sent %d, want %d", f.now, n1+n2, want)
		}
	}
	pass(0)
	f.now = local("2026-10-26 08:59:00")
	pass(0)
	f.now = local("2026-10-26 09:00:00")
	pass(1)
	pass(0)
	if len(out.sent) != 1 || !strings.Contains(out.sent[0], "2026-10-19") || !strings.Contains(out.sent[0], "Alerts 4, acknowledged 2") ||
		!strings.Contains(out.sent[0], "https://herald.example/reports?from=2026-10-19&to=2026-10-25") {
		t.Errorf("sent %q", out.sent)
	}
	f.now = local("2026-11-10 10:00:00") // down over two Mondays
	// The notice cannot be sent: the period is given back, and the next pass sends it.
	out.fail = errors.New("intake away")
	if _, err := one.SendDue(ctx); err == nil || !strings.Contains(err.Error(), "intake away") {
		t.Errorf("a pass whose notice failed: %v, want its error", err)
	}
	out.fail = nil
	pass(1)
	pass(0)
	if n := testenv.Count(t, f.store, "SELECT COUNT(*) FROM audit_log WHERE action = 'report_schedule.sent'"); n != 3 {
		t.Errorf("%d audit entries of a sent report, want 3 (one of them given back)", n)
	}
	if n := testenv.Count(t, f.store, "SELECT COUNT(*) FROM audit_log WHERE action = 'report_schedule.send_failed'"); n != 1 {
		t.Errorf("%d audit entries of a report given back, want 1", n)
	}
	if len(out.sent) != 2 || !strings.Contains(out.sent[1], "2026-11-02") {
		t.Errorf("sent %q, want the week of 2 November second", out.sent)
	}
}
