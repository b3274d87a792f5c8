package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"herald/alert"
	"herald/audit"
	"herald/dispatch"
	"herald/duty"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
	"herald/tasks"
	"herald/templates"
)

// alertFixture is the intake fixture with a clock the test moves, on Wednesday
// 2026-11-25 at 10:00 UTC (demo week: Wednesday E1003 and E1004 on duty).
type alertFixture struct {
	*intakeFixture
	by  audit.Actor
	now time.Time
	mu  sync.Mutex
}

func newAlertFixture(t *testing.T) *alertFixture {
	f := &alertFixture{intakeFixture: newIntakeFixture(t), now: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC),
		by: audit.Actor{Name: "admin1", Type: audit.ActorUser, Person: "admin1"}}
	dispatch.SetClock(f.d, f.clock)
	dispatch.SetAckLink(f.d, func(messageID string, recipientID int64) string {
		return "https://herald.example/ack/" + messageID
	})
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
	n, err := f.d.Alerts().FireDueAlertSteps(context.Background(), f.clock())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *alertFixture) policy(t *testing.T, p alert.EscalationPolicy) {
	t.Helper()
	if _, err := f.d.Alerts().CreatePolicy(context.Background(), f.by, p); err != nil {
		t.Fatal(err)
	}
}

// open sends an alert under policy to people (none: the policy calls first).
func (f *alertFixture) open(t *testing.T, policy string, people ...string) *alert.Alert {
	t.Helper()
	return f.openFrom(t, "api", policy, people...)
}

// openFrom opens an alert as open does, from source (api, inbound …).
func (f *alertFixture) openFrom(t *testing.T, source, policy string, people ...string) *alert.Alert {
	t.Helper()
	req := dispatch.Request{Source: source, Actor: "apikey:intake", APIKeyID: &f.keyID, CallbackKeyID: &f.keyID, Platform: "sandbox",
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
	_, steps, err := f.d.Alerts().Alert(context.Background(), f.by, id)
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

func (f *alertFixture) alert(t *testing.T, id int64) *alert.Alert {
	t.Helper()
	a, err := alert.Of(f.store).AlertByID(context.Background(), id)
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
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, alert.EscalationPolicy{Name: "core", Repeat: 1, Steps: []alert.PolicyStep{
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
	if st := f.alert(t, a.ID).State; st != alert.AlertOpen {
		t.Fatalf("state %s before the last wait ended", st)
	}
	f.advance(t, 5*time.Minute)
	got := f.alert(t, a.ID)
	if got.State != alert.AlertExhausted || got.EndedAt == nil {
		t.Fatalf("alert %+v, want exhausted", got)
	}
	notices := f.noticesTo(t, a.ID)
	if len(notices["E2001"]) != 3 || !strings.Contains(notices["E2001"][2], "无人响应") {
		t.Errorf("E2001 got %q, want two calls and the nobody-answered notice", notices["E2001"])
	}
	if !strings.Contains(notices["E1003"][0], "https://herald.example/ack/") {
		t.Errorf("a notice without its link: %q", notices["E1003"][0])
	}
	if _, err := f.d.Alerts().AcknowledgeAlert(ctx, f.by, a.ID, "E1003", alert.AckViaAPI, ""); !errors.Is(err, alert.ErrAlertEnded) {
		t.Errorf("acknowledging an exhausted alert: %v", err)
	}
}

func TestAcknowledgeStopsEscalation(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, alert.EscalationPolicy{Name: "core", NotifyOnAck: true, Steps: []alert.PolicyStep{
		{Targets: []string{"E1001"}, Wait: "10m"}, {Targets: []string{"E2001"}, Wait: "10m"}}})
	a := f.open(t, "core", "E2002")
	// The people named were told first; step 1 waits its wait.
	if got := f.steps(t, a.ID); len(got) != 0 {
		t.Fatalf("steps fired at once: %v", got)
	}
	f.advance(t, 10*time.Minute)
	f.advance(t, 2*time.Minute)
	res, err := f.d.Alerts().AcknowledgeAlert(ctx, f.by, a.ID, "E1001", alert.AckViaAPI, "on it")
	if err != nil || res.Already || res.State() != alert.AlertAcknowledged {
		t.Fatalf("ack: %+v %v", res, err)
	}
	again, err := f.d.Alerts().AcknowledgeAlert(ctx, f.by, a.ID, "E2002", alert.AckViaLink, "")
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
	res, err = f.d.Alerts().ResolveAlert(ctx, f.by, a.ID, "", alert.AckViaConsole, "")
	if err != nil || res.State() != alert.AlertResolved || res.Alert.ResolvedBy != "admin1" || res.Alert.EndedAt == nil {
		t.Fatalf("resolve: %+v %v", res.Alert, err)
	}
	entries, err := f.store.AuditLog().List(ctx, audit.Filter{Action: "alert."}, 100)
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
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, alert.EscalationPolicy{Name: "core", Steps: []alert.PolicyStep{
		{Targets: []string{"E1001"}, Wait: "10m"}, {Targets: []string{"E2001"}, Wait: "10m"}}})
	a := f.open(t, "core", "E2002")
	f.mu.Lock()
	f.now = f.now.Add(10 * time.Minute)
	f.mu.Unlock()
	steps, err := alert.Of(f.store).AlertSteps(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	// A firing that fails after claiming the step rolls back, and the step fires again
	// (a worker process killed mid-step: TestKilledWorkerFiresEveryStepOnce).
	dispatch.FailAfterClaim(f.d, errors.New("killed"))
	if _, err := f.d.Alerts().FireAlertStep(ctx, steps[0].ID, f.clock()); err == nil {
		t.Fatal("the failed firing reported no error")
	}
	dispatch.FailAfterClaim(f.d, nil)
	var wg sync.WaitGroup
	fired := make(chan bool, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := f.d.Alerts().FireAlertStep(ctx, steps[0].ID, f.clock())
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
	if ok, err := f.d.Alerts().FireAlertStep(ctx, steps[0].ID, f.clock().Add(time.Hour)); ok || err != nil {
		t.Fatalf("a fired step fired again: %v %v", ok, err)
	}
}

// TestStepTargets resolves each kind of target when its step fires: the people on duty
// (none on a holiday, Wednesday's on a make-up workday standing for a Wednesday), a
// rotation's turn and the next in turn, a department, a person.
func TestStepTargets(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	wednesday := 3
	for _, h := range []duty.Holiday{
		{Date: "2026-10-01", Kind: duty.HolidayOff, Name: "国庆"},
		{Date: "2026-10-10", Kind: duty.HolidayWorkday, AsWeekday: &wednesday, Name: "调休"},
	} {
		if err := f.store.Duty().SetHoliday(ctx, &h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.d.Duty().CreateRotation(ctx, f.by, duty.RotationSpec{Name: "night", Members: []string{"E1001", "E1002", "E1003"},
		Start: "2026-09-01", TurnDays: 1, Covers: duty.CoversWorkdays}); err != nil {
		t.Fatal(err)
	}
	f.policy(t, alert.EscalationPolicy{Name: "all", Steps: []alert.PolicyStep{
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
		// and 2 are recorded with their reasons, and step 3 fires at once. (An alert a
		// monitor raises opens so; one asked for through the API is refused, see
		// TestAlertNobodyHearsOfIsRefused.)
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
			a := f.openFrom(t, dispatch.SourceInbound, "all")
			for range 3 {
				f.advance(t, 10*time.Minute)
			}
			if diff := cmp.Diff(tc.want, f.steps(t, a.ID)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// An alert asked for through the API or the console whose first step would notify
// nobody now (国庆: nobody on duty) is refused naming ack.policy, and nothing is
// written; naming a recipient opens it.
func TestAlertNobodyHearsOfIsRefused(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	if err := f.store.Duty().SetHoliday(ctx, &duty.Holiday{Date: "2026-10-01", Kind: duty.HolidayOff, Name: "国庆"}); err != nil {
		t.Fatal(err)
	}
	f.policy(t, alert.EscalationPolicy{Name: "duty-first", Steps: []alert.PolicyStep{
		{Targets: []string{"on_duty"}, Wait: "10m"}, {Targets: []string{"E1004"}, Wait: "10m"}}})
	f.mu.Lock()
	f.now = time.Date(2026, 10, 1, 2, 0, 0, 0, time.UTC)
	f.mu.Unlock()
	count := func() (n int) {
		if err := f.store.SQL().QueryRow("SELECT COUNT(*) FROM alerts").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	for _, source := range []string{"api", "console"} {
		_, err := f.d.Submit(ctx, dispatch.Request{Source: source, Actor: "admin1", Platform: "sandbox", Text: "核心系统告警",
			Ack: &dispatch.AckRequest{Policy: "duty-first"}})
		var fe *kernel.FieldError
		if !errors.As(err, &fe) || fe.Field != "ack.policy" || fe.Key != "alerts.invalid.first_step_nobody" {
			t.Fatalf("%s: %v, want the field error of ack.policy: nobody at the first step", source, err)
		}
	}
	if n := count(); n != before {
		t.Fatalf("%d alerts written by refused requests", n-before)
	}
	if a := f.open(t, "duty-first", "E1004"); a.State != alert.AlertOpen {
		t.Fatalf("alert with a recipient: %s", a.State)
	}
}

// alertEvents are the alert.* status events written for the fixture's key, oldest
// first, as their receiver gets them; each body is checked against the CallbackEvent
// schema of docs/openapi.json.
func (f *alertFixture) alertEvents(t *testing.T) []alertEvent {
	t.Helper()
	pending, err := f.store.Outbox().PendingCallbackEvents(context.Background(), f.keyID, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []alertEvent
	for _, e := range pending {
		if !strings.HasPrefix(e.Type, "alert.") {
			continue
		}
		body := tasks.EventBody(e)
		testenv.CheckSchema(t, "CallbackEvent", body)
		var got alertEvent
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		out = append(out, got)
	}
	return out
}

// alertEvent is what a receiver reads of an alert's status event.
type alertEvent struct {
	Type      string  `json:"type"`
	AlertID   int64   `json:"alert_id"`
	Status    string  `json:"status"`
	Step      int     `json:"step"`
	Repeat    int     `json:"repeat"`
	By        string  `json:"by"`
	MessageID *string `json:"message_id"`
	Recipient *string `json:"recipient"`
}

// Every alert event names its alert, the state it left it in, the step and round it
// had reached, and for an acknowledgment or resolution who it was.
func TestAlertEventsNameTheAlert(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, alert.EscalationPolicy{Name: "two", Repeat: 1, Steps: []alert.PolicyStep{
		{Targets: []string{"E1001"}, Wait: "10m"}, {Targets: []string{"E2001"}, Wait: "10m"}}})
	f.policy(t, alert.EscalationPolicy{Name: "one", Steps: []alert.PolicyStep{{Targets: []string{"E1001"}, Wait: "10m"}}})
	taken := f.open(t, "two")
	f.advance(t, 10*time.Minute)
	f.advance(t, 10*time.Minute) // round 2, step 1
	if _, err := f.d.Alerts().AcknowledgeAlert(ctx, f.by, taken.ID, "E2001", alert.AckViaAPI, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.Alerts().ResolveAlert(ctx, f.by, taken.ID, "", alert.AckViaConsole, ""); err != nil {
		t.Fatal(err)
	}
	unanswered := f.open(t, "one")
	f.advance(t, 10*time.Minute)
	want := []alertEvent{
		{Type: alert.EventAlertEscalated, AlertID: taken.ID, Status: "open", Step: 1},
		{Type: alert.EventAlertEscalated, AlertID: taken.ID, Status: "open", Step: 2},
		{Type: alert.EventAlertEscalated, AlertID: taken.ID, Status: "open", Step: 1, Repeat: 1},
		{Type: alert.EventAlertAcknowledged, AlertID: taken.ID, Status: "acknowledged", Step: 1, Repeat: 1, By: "E2001"},
		{Type: alert.EventAlertResolved, AlertID: taken.ID, Status: "resolved", Step: 1, Repeat: 1, By: "admin1"},
		{Type: alert.EventAlertEscalated, AlertID: unanswered.ID, Status: "open", Step: 1},
		{Type: alert.EventAlertExhausted, AlertID: unanswered.ID, Status: "exhausted", Step: 1},
	}
	if diff := cmp.Diff(want, f.alertEvents(t)); diff != "" {
		t.Errorf("alert events (-want +got):\n%s", diff)
	}
}

// A send that waits for approval calls nobody, however long it waits: its alert's clock
// starts when the batch is approved. A rejected batch, or one nobody decided on in
// time, resolves its alert (via rejection) and calls nobody.
func TestAlertWaitsForItsBatchApproval(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, alert.EscalationPolicy{Name: "core", Steps: []alert.PolicyStep{{Targets: []string{"E1001"}, Wait: "10m"}}})
	if err := f.d.SetApprovalThreshold(ctx, f.by, 1); err != nil {
		t.Fatal(err)
	}
	checker := audit.Actor{Name: "checker", Type: audit.ActorUser, Person: "checker"}
	approved := f.open(t, "core", "E2001", "E2002")
	rejected := f.open(t, "core", "E2001", "E2002")
	expired := f.open(t, "core", "E2001", "E2002")
	if n := f.advance(t, 2*time.Hour); n != 0 {
		t.Fatalf("%d steps fired while their batches awaited approval", n)
	}
	for _, a := range []*alert.Alert{approved, rejected, expired} {
		if got := f.alert(t, a.ID); got.State != alert.AlertOpen || len(f.steps(t, a.ID)) != 0 {
			t.Fatalf("alert %d awaiting approval: %+v, steps %v", a.ID, got, f.steps(t, a.ID))
		}
	}
	batch := func(a *alert.Alert) *models.Batch {
		b, err := f.store.BatchByID(ctx, a.BatchID)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	if err := f.d.Approve(ctx, checker, batch(approved)); err != nil {
		t.Fatal(err)
	}
	if got := f.alert(t, approved.ID); !got.OpenedAt.Equal(f.clock()) {
		t.Errorf("opened_at %v after the approval at %v: the clock starts then", got.OpenedAt, f.clock())
	}
	if n := f.advance(t, 9*time.Minute); n != 0 {
		t.Fatalf("step 1 fired %s after the approval, before its wait", 9*time.Minute)
	}
	f.advance(t, time.Minute)
	if diff := cmp.Diff([]string{"1.1 E1001"}, f.steps(t, approved.ID)); diff != "" {
		t.Errorf("after the approval (-want +got):\n%s", diff)
	}

	if _, err := f.d.Reject(ctx, checker, batch(rejected), "不是事故"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Intake().ExpireApprovals(ctx, time.Now().Add(365*24*time.Hour), f.clock(), alert.EndExpiredBatch); err != nil {
		t.Fatal(err)
	}
	f.advance(t, time.Hour)
	for _, tc := range []struct {
		a  *alert.Alert
		by string
	}{{rejected, "checker"}, {expired, "herald"}} {
		got := f.alert(t, tc.a.ID)
		if got.State != alert.AlertResolved || got.ResolvedBy != tc.by || got.ResolvedVia != alert.AckViaRejection || got.EndedAt == nil {
			t.Errorf("alert %d after its batch was rejected: %+v; want resolved by %s via rejection", tc.a.ID, got, tc.by)
		}
		if steps, notices := f.steps(t, tc.a.ID), f.noticesTo(t, tc.a.ID); len(steps) != 0 || len(notices["E1001"]) != 0 {
			t.Errorf("alert %d of a rejected batch called people: steps %v, notices %v", tc.a.ID, steps, notices)
		}
	}
	var resolved []alertEvent
	for _, e := range f.alertEvents(t) {
		if e.Type == alert.EventAlertResolved {
			resolved = append(resolved, e)
		}
	}
	want := []alertEvent{{Type: alert.EventAlertResolved, AlertID: rejected.ID, Status: "resolved", By: "checker"},
		{Type: alert.EventAlertResolved, AlertID: expired.ID, Status: "resolved", By: "herald"}}
	if diff := cmp.Diff(want, resolved); diff != "" {
		t.Errorf("events of the rejected alerts (-want +got):\n%s", diff)
	}
	entries, err := f.store.AuditLog().List(ctx, audit.Filter{Action: "alert.resolve"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("%d audit entries of resolved alerts, want one per rejected batch", len(entries))
	}
}

// A template that places {{.ack_url}} gets each notice's own link there, in the first
// notices and in a step's, and no line is appended; the request need not give ack_url.
func TestAckLinkWhereTheTemplatePlacesIt(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	if err := f.store.Templates().CreateTemplate(ctx, &templates.Template{Name: "incident", MsgType: "text",
		Body: "故障：{{.system}}\n接手：{{.ack_url}}", Variables: templates.StringList{"system", "ack_url"}}); err != nil {
		t.Fatal(err)
	}
	f.policy(t, alert.EscalationPolicy{Name: "core", Steps: []alert.PolicyStep{{Targets: []string{"E1001"}, Wait: "10m"}}})
	res, err := f.d.Submit(ctx, dispatch.Request{Source: "api", Actor: "apikey:intake", APIKeyID: &f.keyID, Platform: "sandbox",
		Recipients: []string{"E2001"}, Template: "incident", Variables: map[string]string{"system": "核心系统"},
		Ack: &dispatch.AckRequest{Policy: "core"}})
	if err != nil {
		t.Fatal(err)
	}
	f.advance(t, 10*time.Minute)
	rows, err := f.store.SQL().Query("SELECT id, content FROM messages WHERE alert_id = ? ORDER BY created_at, id", res.Alert.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id, content string
		if err := rows.Scan(&id, &content); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.ReplaceAll(content, id, "<id>"))
	}
	placed := "故障：核心系统\n接手：https://herald.example/ack/<id>\n\n确认接手：https://herald.example/ack/<id>"
	want := []string{placed, placed}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notices (-want +got):\n%s", diff)
	}
}

// The placeholder that stands for the link while a notice is rendered is no string a
// caller can know: a caller's text or variable that spells the placeholder of earlier
// versions inside a URL of its own keeps it as written (no recipient's link inside the
// caller's URL), and every notice, the first ones and a step's, ends with the genuine
// link on a line of its own, even where the template placed the link too.
func TestAckLinkPlaceholderInCallerText(t *testing.T) {
	f := newAlertFixture(t)
	ctx := context.Background()
	const trap = "https://evil.example/collect?u=HERALDACKURL7f3c9"
	if err := f.store.Templates().CreateTemplate(ctx, &templates.Template{Name: "incident", MsgType: "text",
		Body: "故障：{{.system}}\n接手：{{.ack_url}}", Variables: templates.StringList{"system", "ack_url"}}); err != nil {
		t.Fatal(err)
	}
	f.policy(t, alert.EscalationPolicy{Name: "core", Steps: []alert.PolicyStep{{Targets: []string{"E1001"}, Wait: "10m"}}})
	for _, req := range []dispatch.Request{
		{Text: "详情见 " + trap},
		{Template: "incident", Variables: map[string]string{"system": trap}},
	} {
		req.Source, req.Actor, req.APIKeyID, req.Platform = "api", "apikey:intake", &f.keyID, "sandbox"
		req.Recipients, req.Ack = []string{"E2001"}, &dispatch.AckRequest{Policy: "core"}
		res, err := f.d.Submit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		f.advance(t, 10*time.Minute)
		rows, err := f.store.SQL().Query("SELECT id, content FROM messages WHERE alert_id = ? ORDER BY created_at, id", res.Alert.ID)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var id, content string
			if err := rows.Scan(&id, &content); err != nil {
				t.Fatal(err)
			}
			n++
			if !strings.Contains(content, trap) {
				t.Errorf("the caller's URL was changed:\n%s", content)
			}
			if want := "\n\n确认接手：https://herald.example/ack/" + id; !strings.HasSuffix(content, want) {
				t.Errorf("the notice does not end with its genuine link line %q:\n%s", want, content)
			}
		}
		rows.Close()
		if n != 2 {
			t.Errorf("%d notices, want the first and step 1's", n)
		}
	}
}

// herald_alert_ack_seconds observes how long each alert waited for its first
// acknowledgment (not a resolution after it), and herald_alerts counts alerts by state.
func TestAlertMetrics(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	dispatch.SetAckObserver(f.d, tasks.NewAlertMetrics(reg, f.store))
	f.policy(t, alert.EscalationPolicy{Name: "core", Steps: []alert.PolicyStep{{Targets: []string{"E1001"}, Wait: "10m"}}})
	taken := f.open(t, "core")
	f.open(t, "core")
	f.advance(t, 7*time.Minute)
	if _, err := f.d.Alerts().AcknowledgeAlert(ctx, f.by, taken.ID, "E1001", alert.AckViaAPI, ""); err != nil {
		t.Fatal(err)
	}
	f.advance(t, time.Minute)
	if _, err := f.d.Alerts().ResolveAlert(ctx, f.by, taken.ID, "E1001", alert.AckViaAPI, ""); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "herald_alert_ack_seconds":
				got["ack_count"] = float64(m.GetHistogram().GetSampleCount())
				got["ack_sum"] = m.GetHistogram().GetSampleSum()
			case "herald_alerts":
				got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	wantValues := map[string]float64{"ack_count": 1, "ack_sum": 420, "open": 1, "acknowledged": 0, "resolved": 1, "exhausted": 0}
	if diff := cmp.Diff(wantValues, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

// An acknowledgment is decided on the alert as it was read and written only if the
// alert is still as read (state, step and round): a step that fired in between makes
// the write miss, and it is decided again on the alert as it is. What it answers is
// what the database then holds.
func TestAcknowledgmentIsWrittenOnTheAlertAsRead(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, alert.EscalationPolicy{Name: "core", Steps: []alert.PolicyStep{
		{Targets: []string{"E1001"}, Wait: "10m"}, {Targets: []string{"E2001"}, Wait: "10m"}}})
	a := f.open(t, "core", "E2002")
	stale := f.alert(t, a.ID)
	f.advance(t, 10*time.Minute) // step 1 fires: the alert moves on to step 1
	moved, err := alert.Of(f.store).MoveAlertAsRead(ctx, stale, map[string]any{"state": alert.AlertAcknowledged})
	if err != nil || moved {
		t.Fatalf("a write on the alert as it was before step 1 fired: moved %v, %v", moved, err)
	}
	res, err := f.d.Alerts().AcknowledgeAlert(ctx, f.by, a.ID, "E1001", alert.AckViaAPI, "")
	if err != nil || res.State() != alert.AlertAcknowledged {
		t.Fatalf("ack: %+v %v", res, err)
	}
	stored := f.alert(t, a.ID)
	if stored.Step != 1 || res.Alert.Step != stored.Step || res.Alert.AcknowledgedBy != stored.AcknowledgedBy ||
		!res.Alert.AcknowledgedAt.Equal(*stored.AcknowledgedAt) || res.Alert.State != stored.State {
		t.Errorf("answered %+v, stored %+v", res.Alert, stored)
	}
}
