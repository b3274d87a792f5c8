package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/audit"
	"herald/delivery"
	"herald/directory"
	"herald/dispatch"
	"herald/kernel"
	"herald/models"
	"herald/silence"
)

// Breadth is judged by what a silence would hold, whatever its spelling: every regex and
// every negated matcher waits for a second person, and so does an equality matcher that
// would have held more than delivery.MaxUnapprovedHeld of the last day's messages.
func TestSilenceApprovalByReach(t *testing.T) {
	t.Parallel()
	f := newSilenceFixture(t)
	ctx := context.Background()
	hour := time.Now().Add(time.Hour)
	re := func(name, value string) delivery.Matcher {
		return delivery.Matcher{Name: name, Value: value, Regex: true}
	}
	tests := []struct {
		name     string
		matchers []delivery.Matcher
		want     []string
	}{
		{"priority=~.+", []delivery.Matcher{re("priority", ".+")}, []string{delivery.BroadRegex}},
		{"every priority spelled out", []delivery.Matcher{re("priority", "high|normal|low")}, []string{delivery.BroadRegex}},
		{"platform=~[a-z]+", []delivery.Matcher{re("platform", "[a-z]+")}, []string{delivery.BroadRegex}},
		{"all but one recipient", []delivery.Matcher{{Name: "recipient", Value: "E1001", Negate: true}}, []string{delivery.BroadNegated}},
		{"every policy", []delivery.Matcher{re("policy", ".+")}, []string{delivery.BroadRegex}},
		{"one department", []delivery.Matcher{match("department", "Counter")}, nil},
	}
	for _, tt := range tests {
		// Each by a person of its own: their silences do not make one stretch.
		s, err := f.d.Silences().CreateSilence(ctx, user("ops-"+tt.name), silence.SilenceInput{Matchers: tt.matchers, EndsAt: &hour, Comment: tt.name})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, []string(s.ApprovalReasons)); diff != "" {
			t.Errorf("%s: reasons (-want +got):\n%s", tt.name, diff)
		}
		if awaiting := s.Approval == models.ApprovalAwaiting; awaiting != (tt.want != nil) {
			t.Errorf("%s: approval %q", tt.name, s.Approval)
		}
	}
	// An equality matcher that holds much: over the last day's count, it waits too.
	for range (delivery.MaxUnapprovedHeld + 2) / 2 {
		f.send(t, models.PriorityNormal, "E2001", "E2002")
	}
	s, err := f.d.Silences().CreateSilence(ctx, user("ops-many"), silence.SilenceInput{Matchers: []delivery.Matcher{match("platform", "sandbox")},
		EndsAt: &hour, Comment: "sandbox upgrade"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Approval != models.ApprovalAwaiting || !cmp.Equal([]string(s.ApprovalReasons), []string{delivery.BroadHoldsMany}) {
		t.Errorf("a silence that would have held %d messages: %q %v", delivery.MaxUnapprovedHeld+2, s.Approval, s.ApprovalReasons)
	}
	p, err := f.d.Silences().PreviewSilence(ctx, user("ops"), silence.SilenceInput{Matchers: []delivery.Matcher{match("platform", "sandbox")}})
	if err != nil || !cmp.Equal(p.Reasons, []string{delivery.BroadHoldsMany}) {
		t.Errorf("preview: %+v (%v)", p, err)
	}
}

// Back-to-back silences of one creator are one stretch for the 24-hour rule, and no
// silence starts more than silence.MaxSilenceLead ahead.
func TestSilenceStretchAndStart(t *testing.T) {
	t.Parallel()
	f := newSilenceFixture(t)
	ctx := context.Background()
	now := time.Now()
	at := func(h int) *time.Time { t := now.Add(time.Duration(h) * time.Hour); return &t }
	narrow := []delivery.Matcher{match("department", "Counter")}
	create := func(by string, from, to int) *silence.Silence {
		t.Helper()
		s, err := f.d.Silences().CreateSilence(ctx, user(by), silence.SilenceInput{Matchers: narrow, StartsAt: at(from), EndsAt: at(to), Comment: "upgrade"})
		if err != nil {
			t.Fatalf("%s %d–%d h: %v", by, from, to, err)
		}
		return s
	}
	if s := create("ada", 0, 24); s.Approval != "" {
		t.Fatalf("a first day: %q", s.Approval)
	}
	next := create("ada", 24, 48)
	if next.Approval != models.ApprovalAwaiting || !cmp.Equal([]string(next.ApprovalReasons), []string{delivery.BroadAdjacent}) {
		t.Errorf("the next day by the same person: %q %v", next.Approval, next.ApprovalReasons)
	}
	if s := create("bob", 24, 48); s.Approval != "" {
		t.Errorf("the next day by another person: %q %v", s.Approval, s.ApprovalReasons)
	}
	if s := create("ada", 50, 60); s.Approval != "" {
		t.Errorf("a later silence apart from the others: %q %v", s.Approval, s.ApprovalReasons)
	}
	for _, tt := range []struct {
		from, to int
		field    string
	}{
		{24 * 31, 24*31 + 1, "starts_at"},
		{int(time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC).Sub(now).Hours()), int(time.Date(2999, 1, 1, 1, 0, 0, 0, time.UTC).Sub(now).Hours()), "starts_at"},
	} {
		_, err := f.d.Silences().CreateSilence(ctx, user("cy"), silence.SilenceInput{Matchers: narrow, StartsAt: at(tt.from), EndsAt: at(tt.to), Comment: "later"})
		var fe *kernel.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("starting in %d h: %v, want a field error naming %s", tt.from, err, tt.field)
		}
	}
	if s := create("cy", 24*29, 24*29+1); s.State(time.Now()) != delivery.SilencePending {
		t.Errorf("starting in 29 days: %s", s.State(time.Now()))
	}
}

// Live silences are capped per creator and overall; past a cap the silence is refused
// naming silences, and an expired one makes room.
func TestSilenceCaps(t *testing.T) {
	t.Parallel()
	f := newSilenceFixture(t)
	ctx := context.Background()
	hour := time.Now().Add(time.Hour)
	// Each silence holds a person of its own, who must exist for it to hold anything.
	for i := range silence.MaxLiveSilences {
		p := &directory.Recipient{ExternalID: fmt.Sprintf("E%d", 3000+i), Name: "Cap", OrgType: directory.Branch, Active: true}
		if err := f.store.Directory().CreateRecipient(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	create := func(by string, i int) (*silence.Silence, error) {
		return f.d.Silences().CreateSilence(ctx, user(by), silence.SilenceInput{Matchers: []delivery.Matcher{match("recipient", fmt.Sprintf("E%d", 3000+i))},
			EndsAt: &hour, Comment: "upgrade"})
	}
	var first *silence.Silence
	for i := range silence.MaxCreatorSilences {
		s, err := create("ada", i)
		if err != nil {
			t.Fatalf("silence %d: %v", i, err)
		}
		if first == nil {
			first = s
		}
	}
	_, err := create("ada", 99)
	var fe *kernel.FieldError
	if !errors.As(err, &fe) || fe.Field != "silences" {
		t.Fatalf("one past the cap: %v, want a field error naming silences", err)
	}
	if _, err := create("bob", 0); err != nil {
		t.Fatalf("another person: %v", err)
	}
	if _, err := f.d.Silences().ExpireSilence(ctx, user("ada"), first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := create("ada", 99); err != nil {
		t.Errorf("after expiring one: %v", err)
	}
	// Overall: fill up to the cap with people of their own.
	_, all, err := silence.Of(f.store).LiveSilenceCounts(ctx, 0, "nobody")
	if err != nil {
		t.Fatal(err)
	}
	for i := all; i < silence.MaxLiveSilences; i++ {
		if _, err := create(fmt.Sprintf("p%d", i/10), i); err != nil {
			t.Fatalf("silence %d of all: %v", i, err)
		}
	}
	_, err = create("zed", 0)
	if !errors.As(err, &fe) || fe.Field != "silences" {
		t.Errorf("one past the overall cap: %v, want a field error naming silences", err)
	}
}

// A send key's silence holds only the key's own messages, through the worker's own
// path; an admin key's holds anyone's.
func TestSendKeySilenceHoldsOnlyItsOwn(t *testing.T) {
	t.Parallel()
	f := newMeetFixture(t)
	ctx := context.Background()
	other, _, err := f.store.Access().CreateAPIKey(ctx, "prometheus", "send", "ops")
	if err != nil {
		t.Fatal(err)
	}
	sendAs := func(keyID int64, name, who string) string {
		t.Helper()
		res, err := f.d.Submit(ctx, dispatch.Request{Source: "api", Actor: "apikey:" + name, APIKeyID: &keyID, Platform: "sandbox",
			Recipients: []string{who}, Text: "disk full"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Messages[0].ID
	}
	start, end := f.clock().Add(-time.Minute), f.clock().Add(time.Hour)
	zabbix := audit.Actor{Name: "apikey:zabbix", Type: audit.ActorAPIKey, APIKeyID: f.keyID, OwnOnly: true}
	s, err := f.d.Silences().CreateSilence(ctx, zabbix, silence.SilenceInput{Matchers: []delivery.Matcher{match("platform", "sandbox")},
		StartsAt: &start, EndsAt: &end, Comment: "zabbix maintenance", OnEnd: delivery.OnEndCancel})
	if err != nil {
		t.Fatal(err)
	}
	if s.HoldsKeyID == nil || *s.HoldsKeyID != f.keyID {
		t.Errorf("a send key's silence holds %v, want key %d", s.HoldsKeyID, f.keyID)
	}
	own, others := sendAs(f.keyID, "zabbix", "E2001"), sendAs(other.ID, "prometheus", "E2002")
	f.run(t, f.worker(t, time.Time{}), own, others)
	if got := f.statuses(t, map[string]string{"own": own, "other": others}); got["own"] != models.StatusHeld || got["other"] != models.StatusSent {
		t.Errorf("after the send key's silence: %v, want own held and the other key's sent", got)
	}
	f.end(t, s.ID)
	if got := f.status(t, others); got != models.StatusSent {
		t.Errorf("the other key's message after the silence cancelled what it held: %s", got)
	}
	// An admin key reaches every key's messages.
	admin := audit.Actor{Name: "apikey:ops-admin", Type: audit.ActorAPIKey, APIKeyID: f.keyID + 1000}
	if _, err := f.d.Silences().CreateSilence(ctx, admin, silence.SilenceInput{Matchers: []delivery.Matcher{match("platform", "sandbox")},
		StartsAt: &start, EndsAt: &end, Comment: "all maintenance"}); err != nil {
		t.Fatal(err)
	}
	later := sendAs(other.ID, "prometheus", "E2003")
	f.run(t, f.worker(t, time.Time{}), later)
	if got := f.status(t, later); got != models.StatusHeld {
		t.Errorf("under an admin key's silence another key's message is %s, want held", got)
	}
}
