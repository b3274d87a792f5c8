package directory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"herald/directory"
	"herald/internal/testenv"
	"herald/models"
)

// lookUp returns the person with external id ext as both cached lookups see it, and
// fails the test when the two disagree; nil when neither finds one.
func lookUp(t *testing.T, s *models.Store, ext string, id int64) *directory.Recipient {
	t.Helper()
	ctx := context.Background()
	byExt, err := s.Directory().CachedRecipientsByExternalIDs(ctx, []string{ext})
	if err != nil {
		t.Fatal(err)
	}
	byID, err := s.Directory().CachedRecipientsByIDs(ctx, []int64{id})
	if err != nil {
		t.Fatal(err)
	}
	if len(byExt) != len(byID) || len(byExt) > 1 {
		t.Fatalf("%s: %d found by external id, %d by id", ext, len(byExt), len(byID))
	}
	if len(byExt) == 0 {
		return nil
	}
	if byExt[0] != byID[0] {
		t.Fatalf("%s: by external id %+v, by id %+v", ext, byExt[0], byID[0])
	}
	return &byExt[0]
}

// wantName fails the test unless the cached lookups give the person the name want.
func wantName(t *testing.T, when string, s *models.Store, r *directory.Recipient, want string) {
	t.Helper()
	got := lookUp(t, s, r.ExternalID, r.ID)
	if got == nil {
		t.Fatalf("%s: %s not found", when, r.ExternalID)
	}
	if got.Name != want {
		t.Errorf("%s: name %q, want %q", when, got.Name, want)
	}
}

// newPerson adds an active branch employee with a Tianyuan address.
func newPerson(t *testing.T, s *models.Store, ext, name string) *directory.Recipient {
	t.Helper()
	r := &directory.Recipient{ExternalID: ext, Name: name, OrgType: directory.Branch, TianyuanID: "ty_" + ext, Active: true}
	if err := s.Directory().CreateRecipient(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCachedRecipientsSeeThisStoresChangesAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testenv.Store(t)
	s.Directory().UseRecipientClock(testenv.NewStepClock().Now) // the clock never moves: no check comes due
	r := newPerson(t, s, "C1001", "Li Wei")
	wantName(t, "created", s, r, "Li Wei")

	r.Name = "Li Wei (Treasury)"
	if err := s.Directory().UpdateRecipient(ctx, r); err != nil {
		t.Fatal(err)
	}
	wantName(t, "updated", s, r, "Li Wei (Treasury)")

	if err := s.Directory().SetRecipientActive(ctx, r.ExternalID, false); err != nil {
		t.Fatal(err)
	}
	if got := lookUp(t, s, r.ExternalID, r.ID); got == nil || got.Active {
		t.Errorf("deactivated: %+v, want an inactive person", got)
	}

	changed := *r
	changed.Name, changed.Active = "Li Wei (Audit)", true
	if _, err := s.Directory().UpsertRecipients(ctx, []directory.Recipient{changed}); err != nil {
		t.Fatal(err)
	}
	wantName(t, "imported", s, r, "Li Wei (Audit)")
}

func TestCachedRecipientsSeeOtherProcessesChangesWithinACheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	here, there := testenv.TwoProcesses(t)
	clock := testenv.NewStepClock()
	here.Directory().UseRecipientClock(clock.Now)

	r := newPerson(t, there, "C2001", "Wang Fang")
	wantName(t, "created elsewhere", here, r, "Wang Fang")

	changed := *r
	changed.Name = "Wang Fang (Retail)"
	if err := there.Directory().UpdateRecipient(ctx, &changed); err != nil {
		t.Fatal(err)
	}
	clock.Advance(directory.RecipientCacheCheck / 2)
	wantName(t, "changed elsewhere, before the check", here, r, "Wang Fang")
	clock.Advance(directory.RecipientCacheCheck / 2)
	wantName(t, "changed elsewhere, at the check", here, r, "Wang Fang (Retail)")

	// Nobody unknown is remembered: a person added elsewhere is found at once.
	if got := lookUp(t, here, "C2002", 0); got != nil {
		t.Fatalf("C2002 before it exists: %+v", got)
	}
	added := newPerson(t, there, "C2002", "Zhao Min")
	wantName(t, "added elsewhere", here, added, "Zhao Min")

	// A change that does not count itself (written to the table by hand) is seen once
	// the entries are RecipientCacheMaxAge old. First the check that takes in the
	// counted addition above.
	clock.Advance(directory.RecipientCacheCheck)
	wantName(t, "after the addition's check", here, r, "Wang Fang (Retail)")
	if _, err := there.SQL().ExecContext(ctx, "UPDATE recipients SET name = 'Wang Fang (Audit)' WHERE external_id = 'C2001'"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(directory.RecipientCacheCheck)
	wantName(t, "changed by hand, the counter unmoved", here, r, "Wang Fang (Retail)")
	clock.Advance(directory.RecipientCacheMaxAge)
	wantName(t, "changed by hand, entries too old", here, r, "Wang Fang (Audit)")
}

// Lookups that keep missing fill the cache with the whole directory, so a steady flow of
// requests reads it at once instead of person by person; fewer misses fill nothing.
func TestCachedRecipientsFillAfterManyMisses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testenv.Store(t)
	s.Directory().UseRecipientClock(testenv.NewStepClock().Now) // the clock never moves: no entry expires
	people := make([]directory.Recipient, directory.FillAfterMisses+50)
	for i := range people {
		ext := fmt.Sprintf("F%04d", i)
		people[i] = directory.Recipient{ExternalID: ext, Name: ext, OrgType: directory.Branch, TianyuanID: "ty_" + ext, Active: true}
	}
	if _, err := s.Directory().UpsertRecipients(ctx, people); err != nil {
		t.Fatal(err)
	}
	everyone, err := s.Directory().CountRecipients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range people[:directory.FillAfterMisses-1] {
		if got, err := s.Directory().CachedRecipientsByExternalIDs(ctx, []string{p.ExternalID}); err != nil || len(got) != 1 {
			t.Fatalf("%s: %v, %v", p.ExternalID, got, err)
		}
	}
	if held, filling := s.Directory().RecipientCacheHeld(); filling || held != directory.FillAfterMisses-1 {
		t.Fatalf("after %d misses: %d held (filling: %t), want those looked up only", directory.FillAfterMisses-1, held, filling)
	}
	if _, err := s.Directory().CachedRecipientsByExternalIDs(ctx, []string{people[directory.FillAfterMisses-1].ExternalID}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		held, filling := s.Directory().RecipientCacheHeld()
		if !filling && held == int(everyone) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d misses: %d held (filling: %t), want the whole directory (%d)", directory.FillAfterMisses, held, filling, everyone)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
