package dispatch_test

import (
	"context"
	"errors"
	"testing"

	"herald/audit"
	"herald/duty"
	"herald/kernel"
	"herald/models"
)

// TestRotationService checks the rotation writes' rules once for the console and the
// API: a good change leaves its row and its audit entry, a bad one neither, and an audit
// log that cannot be written rolls the change back.
func TestRotationService(t *testing.T) {
	t.Parallel()
	f := newIntakeFixture(t)
	ctx := context.Background()
	by := audit.Actor{Name: "ops1", Type: audit.ActorUser, Person: "ops1", IP: "192.0.2.1"}
	good := duty.RotationSpec{Name: "night", Members: []string{"E1001", "E1002"}, Start: "2026-12-01", TurnDays: 7, Covers: duty.CoversEveryDay}

	for _, tc := range []struct {
		name  string
		spec  duty.RotationSpec
		field string
	}{
		{"no name", duty.RotationSpec{Members: good.Members, Start: good.Start, TurnDays: 1, Covers: good.Covers}, "name"},
		{"no members", duty.RotationSpec{Name: "x", Start: good.Start, TurnDays: 1, Covers: good.Covers}, "members"},
		{"branch staff", duty.RotationSpec{Name: "x", Members: []string{"E2001"}, Start: good.Start, TurnDays: 1, Covers: good.Covers}, "members[0]"},
		{"bad start", duty.RotationSpec{Name: "x", Members: good.Members, Start: "tomorrow", TurnDays: 1, Covers: good.Covers}, "start"},
		{"turn of 0 days", duty.RotationSpec{Name: "x", Members: good.Members, Start: good.Start, Covers: good.Covers}, "turn_days"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.d.Duty().CreateRotation(ctx, by, tc.spec)
			var fe *kernel.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("got %v, want an error naming %s", err, tc.field)
			}
			if n := auditCount(t, f.store, "duty.rotation.create"); n != 0 {
				t.Errorf("a refused change wrote %d audit entries", n)
			}
		})
	}

	saved, err := f.d.Duty().CreateRotation(ctx, by, good)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Name != "night" || len(saved.Members) != 2 {
		t.Errorf("saved %+v", saved)
	}
	entries, err := f.store.AuditLog().List(ctx, audit.Filter{Action: "duty.rotation.create"}, 10)
	if err != nil || len(entries) != 1 {
		t.Fatalf("audit entries %+v, %v", entries, err)
	}
	e := entries[0]
	if e.Actor != "ops1" || e.IP != "192.0.2.1" || e.TargetID != "night" || e.ParamMap()["members"] != "E1001, E1002" {
		t.Errorf("audit entry %+v params %v", e, e.ParamMap())
	}
	if _, err := f.d.Duty().CreateRotation(ctx, by, good); err == nil {
		t.Error("a second rotation of the same name was saved")
	}

	// An audit log that cannot be written: the change is rolled back with it.
	if _, err := f.store.SQL().ExecContext(ctx, "ALTER TABLE audit_log RENAME TO audit_log_gone"); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Duty().DeleteRotation(ctx, by, "night"); err == nil {
		t.Error("the delete succeeded without its audit entry")
	}
	if _, err := f.store.SQL().ExecContext(ctx, "ALTER TABLE audit_log_gone RENAME TO audit_log"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Duty().RotationByName(ctx, "night"); err != nil {
		t.Errorf("the rotation is gone although its audit entry was not written: %v", err)
	}
	if err := f.d.Duty().DeleteRotation(ctx, by, "night"); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Duty().DeleteRotation(ctx, by, "night"); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("deleting it again: %v", err)
	}
	if n := auditCount(t, f.store, "duty.rotation.delete"); n != 1 {
		t.Errorf("%d delete entries, want 1", n)
	}
}

// auditCount counts the audit entries of an action.
func auditCount(t *testing.T, s *models.Store, action string) int {
	t.Helper()
	entries, err := s.AuditLog().List(context.Background(), audit.Filter{Action: action}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}
