package dispatch_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/dispatch"
	"herald/models"
)

// alertFixture is the intake fixture with a clock the test moves, on Wednesday
// 2026-11-25 at 10:00 UTC (demo week: Wednesday E1003 and E1004 on duty).
type alertFixture struct {
	*intakeFixture
	by  dispatch.Actor
	now time.Time
	mu  sync.Mutex
}

func newAlertFixture(t *testing.T) *alertFixture {
	f := &alertFixture{intakeFixture: newIntakeFixture(t), now: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC),
		by: dispatch.Actor{Name: "admin1", Type: dispatch.ActorUser, Person: "admin1"}}
	f.d.Now = f.clock
	f.d.AckLink = func(messageID string, recipientID int64) string {
		return "https://herald.example/ack/" + messageID
	}
	return f
}

func (f *alertFixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// advance moves the clock on and fires every step due then, as the poll would.
func (f *alertFixture) advance(t *testing.T, d time.Duration) int {
	t.Helper()
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
	n, err := f.d.FireDueAlertSteps(context.Background(), f.clock())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *alertFixture) policy(t *testing.T, p models.EscalationPolicy) {
	t.Helper()
	if _, err := f.d.CreatePolicy(context.Background(), f.by, p); err != nil {
		t.Fatal(err)
	}
}

// open sends an alert under policy to people (none: the policy calls first).
func (f *alertFixture) open(t *testing.T, policy string, people ...string) *models.Alert {
	t.Helper()
	req := dispatch.Request{Source: "api", Actor: "apikey:intake", APIKeyID: &f.keyID, CallbackKeyID: &f.keyID, Platform: "sandbox",
		Recipients: people, Text: "核心系统告警", Ack: &dispatch.AckRequest{Policy: policy}}
	res, err := f.d.Submit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Alert == nil || res.Alert.ID == 0 {
		t.Fatal("no alert opened")
	}
	return res.Alert
}

// steps are the alert's steps as the API shows them: n/round → targets or reason.
func (f *alertFixture) steps(t *testing.T, id int64) []string {
	t.Helper()
	_, steps, err := f.d.Alert(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range steps {
		if s.FiredAt == nil {
			continue
		}
		line := strings.Join(s.Targets, ",")
		if s.SkippedReason != "" {
			line = "(" + s.SkippedReason + ")"
		}
		out = append(out, string(rune('0'+s.Round))+"."+string(rune('0'+s.N))+" "+line)
	}
	return out
}

func (f *alertFixture) alert(t *testing.T, id int64) *models.Alert {
	t.Helper()
	a, err := f.store.AlertByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// noticesTo lists the contents of the messages of an alert, per external id, oldest
// first.
func (f *alertFixture) noticesTo(t *testing.T, alertID int64) map[string][]string {
	t.Helper()
	rows, err := f.store.SQL().Query(`SELECT r.external_id, m.content FROM messages m JOIN recipients r ON r.id = m.recipient_id
		WHERE m.alert_id = ? ORDER BY m.created_at, m.id`, alertID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var ext, content string
		if err := rows.Scan(&ext, &content); err != nil {
			t.Fatal(err)
		}
		out[ext] = append(out[ext], content)
	}
	return out
}

func TestEscalationRunsThroughStepsAndRounds(t *testing.T) {
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, models.EscalationPolicy{Name: "core", Repeat: 1, Steps: []models.PolicyStep{
		{Targets: []string{"on_duty"}, Wait: "10m"}, {Targets: []string{"E2001"}, Wait: "5m"}}})
	a := f.open(t, "core")
	// Nobody named: step 1 fired at once, to Wednesday's people on duty.
	if diff := cmp.Diff([]string{"1.1 E1003,E1004"}, f.steps(t, a.ID)); diff != "" {
		t.Fatalf("after opening (-want +got):\n%s", diff)
	}
	if n := f.advance(t, 9*time.Minute); n != 0 {
		t.Fatalf("%d steps fired before the wait ended", n)
	}
	f.advance(t, time.Minute)
	f.advance(t, 5*time.Minute)
	f.advance(t, 10*time.Minute)
	want := []string{"1.1 E1003,E1004", "1.2 E2001", "2.1 E1003,E1004", "2.2 E2001"}
	if diff := cmp.Diff(want, f.steps(t, a.ID)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if st := f.alert(t, a.ID).State; st != models.AlertOpen {
		t.Fatalf("state %s before the last wait ended", st)
	}
	f.advance(t, 5*time.Minute)
	got := f.alert(t, a.ID)
	if got.State != models.AlertExhausted || got.EndedAt == nil {
		t.Fatalf("alert %+v, want exhausted", got)
	}
	notices := f.noticesTo(t, a.ID)
	if len(notices["E2001"]) != 3 || !strings.Contains(notices["E2001"][2], "无人响应") {
		t.Errorf("E2001 got %q, want two calls and the nobody-answered notice", notices["E2001"])
	}
	if !strings.Contains(notices["E1003"][0], "https://herald.example/ack/") {
		t.Errorf("a notice without its link: %q", notices["E1003"][0])
	}
	if _, err := f.d.AcknowledgeAlert(ctx, f.by, a.ID, "E1003", dispatch.AckViaAPI, ""); !errors.Is(err, dispatch.ErrAlertEnded) {
		t.Errorf("acknowledging an exhausted alert: %v", err)
	}
}

func TestAcknowledgeStopsEscalation(t *testing.T) {
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, models.EscalationPolicy{Name: "core", NotifyOnAck: true, Steps: []models.PolicyStep{
		{Targets: []string{"E1001"}, Wait: "10m"}, {Targets: []string{"E2001"}, Wait: "10m"}}})
	a := f.open(t, "core", "E2002")
	// The people named were told first; step 1 waits its wait.
	if got := f.steps(t, a.ID); len(got) != 0 {
		t.Fatalf("steps fired at once: %v", got)
	}
	f.advance(t, 10*time.Minute)
	f.advance(t, 2*time.Minute)
	res, err := f.d.AcknowledgeAlert(ctx, f.by, a.ID, "E1001", dispatch.AckViaAPI, "on it")
	if err != nil || res.Already || res.State() != models.AlertAcknowledged {
		t.Fatalf("ack: %+v %v", res, err)
	}
	again, err := f.d.AcknowledgeAlert(ctx, f.by, a.ID, "E2002", dispatch.AckViaLink, "")
	if err != nil || !again.Already || again.Alert.AcknowledgedBy != "E1001" || !again.Alert.AcknowledgedAt.Equal(*res.Alert.AcknowledgedAt) {
		t.Fatalf("second ack: %+v %v", again, err)
	}
	if n := f.advance(t, time.Hour); n != 0 {
		t.Errorf("%d steps fired after the acknowledgment", n)
	}
	if diff := cmp.Diff([]string{"1.1 E1001"}, f.steps(t, a.ID)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	notices := f.noticesTo(t, a.ID)
	if len(notices["E2002"]) != 2 || !strings.Contains(notices["E2002"][1], "Li Wei 已接手") {
		t.Errorf("E2002 got %q", notices["E2002"])
	}
	if len(notices["E1001"]) != 1 {
		t.Errorf("the acknowledger was told of their own acknowledgment: %q", notices["E1001"])
	}
	res, err = f.d.ResolveAlert(ctx, f.by, a.ID, "", dispatch.AckViaConsole, "")
	if err != nil || res.State() != models.AlertResolved || res.Alert.ResolvedBy != "admin1" || res.Alert.EndedAt == nil {
		t.Fatalf("resolve: %+v %v", res.Alert, err)
	}
	entries, err := f.store.ListAudit(ctx, models.AuditFilter{Action: "alert."}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action)
	}
	slices.Reverse(actions)
	want := []string{"alert.policy.create", "alert.open", "alert.step", "alert.acknowledge", "alert.resolve"}
	if diff := cmp.Diff(want, actions); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}

func TestAlertStepFiresOnce(t *testing.T) {
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, models.EscalationPolicy{Name: "core", Steps: []models.PolicyStep{
		{Targets: []string{"E1001"}, Wait: "10m"}, {Targets: []string{"E2001"}, Wait: "10m"}}})
	a := f.open(t, "core", "E2002")
	f.mu.Lock()
	f.now = f.now.Add(10 * time.Minute)
	f.mu.Unlock()
	steps, err := f.store.AlertSteps(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	// A firer that dies after claiming the step: its transaction rolls back, and the
	// step fires again.
	dispatch.FailAfterClaim(f.d, errors.New("killed"))
	if _, err := f.d.FireAlertStep(ctx, steps[0].ID, f.clock()); err == nil {
		t.Fatal("the failed firing reported no error")
	}
	dispatch.FailAfterClaim(f.d, nil)
	var wg sync.WaitGroup
	fired := make(chan bool, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := f.d.FireAlertStep(ctx, steps[0].ID, f.clock())
			if err != nil {
				t.Error(err)
			}
			fired <- ok
		}()
	}
	wg.Wait()
	close(fired)
	n := 0
	for ok := range fired {
		if ok {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the step fired %d times", n)
	}
	if got := f.noticesTo(t, a.ID)["E1001"]; len(got) != 1 {
		t.Fatalf("E1001 got %d notices", len(got))
	}
	if ok, err := f.d.FireAlertStep(ctx, steps[0].ID, f.clock().Add(time.Hour)); ok || err != nil {
		t.Fatalf("a fired step fired again: %v %v", ok, err)
	}
}

// TestStepTargets resolves each kind of target when its step fires: the people on duty
// (none on a holiday, Wednesday's on a make-up workday standing for a Wednesday), a
// rotation's turn and the next in turn, a department, a person.
func TestStepTargets(t *testing.T) {
	f := newAlertFixture(t)
	ctx := context.Background()
	wednesday := 3
	for _, h := range []models.Holiday{
		{Date: "2026-10-01", Kind: models.HolidayOff, Name: "国庆"},
		{Date: "2026-10-10", Kind: models.HolidayWorkday, AsWeekday: &wednesday, Name: "调休"},
	} {
		if err := f.store.SetHoliday(ctx, &h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.d.CreateRotation(ctx, f.by, models.RotationSpec{Name: "night", Members: []string{"E1001", "E1002", "E1003"},
		Start: "2026-09-01", TurnDays: 1, Covers: models.CoversWorkdays}); err != nil {
		t.Fatal(err)
	}
	f.policy(t, models.EscalationPolicy{Name: "all", Steps: []models.PolicyStep{
		{Targets: []string{"on_duty"}, Wait: "10m"},
		{Targets: []string{"rotation:night", "rotation:night+1"}, Wait: "10m"},
		{Targets: []string{"department:Counter"}, Wait: "10m"},
		{Targets: []string{"E1004"}, Wait: "10m"},
	}})
	for _, tc := range []struct {
		name string
		at   time.Time
		want []string
	}{
		// 国庆, a day off nobody is on duty and the workday rotation has no turn: steps 1
		// and 2 are recorded with their reasons, and step 3 fires at once.
		{"holiday", time.Date(2026, 10, 1, 2, 0, 0, 0, time.UTC),
			[]string{"1.1 (holiday)", "1.2 (rotation_off)", "1.3 E2001,E2002", "1.4 E1004"}},
		// A Saturday worked as a Wednesday: Wednesday's roster (E1003, E1004) and the
		// rotation's turn, its 29th workday: E1002, then E1003.
		{"make-up workday", time.Date(2026, 10, 10, 2, 0, 0, 0, time.UTC),
			[]string{"1.1 E1002,E1003,E1004", "1.2 E1002,E1003", "1.3 E2001,E2002", "1.4 E1004"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.mu.Lock()
			f.now = tc.at
			f.mu.Unlock()
			a := f.open(t, "all")
			for range 3 {
				f.advance(t, 10*time.Minute)
			}
			if diff := cmp.Diff(tc.want, f.steps(t, a.ID)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
