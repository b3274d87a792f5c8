package app

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"herald/audit"
	"herald/config"
	"herald/duty"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
)

// TestFirstStartPutsTheNationalCalendarsInForce: a new database knows the national
// holidays Herald ships from its first start (国庆 2026 is a day off, the Sunday before it
// a make-up workday), each year audited as an import; a second start adds nothing.
func TestFirstStartPutsTheNationalCalendarsInForce(t *testing.T) {
	ctx := context.Background()
	s, err := models.Open(kernel.Options{MySQLDSN: testenv.MySQLDSN(t), DataDir: t.TempDir(), SecretKey: testenv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cfg := &config.Config{Location: time.UTC, AdminUser: "admin", AdminPassword: "a long enough password 1", Demo: false, DemoSet: true}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for range 2 {
		if err := Prepare(ctx, s, cfg, "worker", log, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	years, err := s.Duty().HolidayYears(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := duty.BuiltinNationalYears(); !equalInts(years, want) {
		t.Errorf("holiday years in force %v, want the shipped %v", years, want)
	}
	want := 0
	for _, y := range duty.BuiltinNationalYears() {
		days, _, _ := duty.BuiltinNationalCalendar(y)
		want += len(days)
	}
	all, err := s.Duty().HolidaysBetween(ctx, "2000-01-01", "2100-12-31")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != want {
		t.Errorf("%d holiday entries after two starts, want %d", len(all), want)
	}
	kinds := map[string]string{}
	for _, h := range all {
		kinds[h.Date] = h.Kind
	}
	if kinds["2026-10-01"] != duty.HolidayOff || kinds["2026-09-20"] != duty.HolidayWorkday {
		t.Errorf("国庆 2026: 10-01 %q, 09-20 %q", kinds["2026-10-01"], kinds["2026-09-20"])
	}
	entries, err := s.AuditLog().List(ctx, audit.Filter{Action: "duty.holidays.import"}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(duty.BuiltinNationalYears()) {
		t.Errorf("%d import entries, want one a shipped year", len(entries))
	}
}

// TestMigrateUpPutsTheNationalCalendarsInForce: an install started the way README's
// production section says, `herald migrate up` and then `herald serve`, knows the
// national holidays as one started by serve alone does; migrating again adds nothing.
func TestMigrateUpPutsTheNationalCalendarsInForce(t *testing.T) {
	ctx := context.Background()
	s, err := models.Open(kernel.Options{MySQLDSN: testenv.MySQLDSN(t), DataDir: t.TempDir(), SecretKey: testenv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for range 2 {
		if _, err := Migrate(ctx, s, time.UTC); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &config.Config{Location: time.UTC, AdminUser: "admin", AdminPassword: "a long enough password 1", Demo: false, DemoSet: true}
	if err := Prepare(ctx, s, cfg, "all", slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard); err != nil {
		t.Fatal(err)
	}
	years, err := s.Duty().HolidayYears(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := duty.BuiltinNationalYears(); !equalInts(years, want) {
		t.Errorf("holiday years in force after migrate up and serve %v, want the shipped %v", years, want)
	}
	entries, err := s.AuditLog().List(ctx, audit.Filter{Action: "duty.holidays.import"}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(duty.BuiltinNationalYears()) {
		t.Errorf("%d import entries, want one a shipped year", len(entries))
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
