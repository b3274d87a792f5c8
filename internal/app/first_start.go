package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"herald/access"
	"herald/audit"
	"herald/config"
	"herald/dispatch"
	"herald/duty"
	"herald/kernel"
	"herald/models"
)

// Prepare runs the first-start steps under the database's start lock, so any number of
// processes of any roles started at once on a fresh database come up: the first to take
// the lock migrates (and seeds the demo into a new database when asked), the others find
// the work done. Only roles that serve the console create the first admin; workers and
// schedulers never create users. The command line's admin and apikey commands migrate
// through Migrate, under the same lock.
func Prepare(ctx context.Context, store *models.Store, cfg *config.Config, role string, log *slog.Logger, stdout io.Writer) error {
	return store.WithStartLock(ctx, func() error {
		_, fresh, err := migrate(ctx, store, cfg.Location)
		if err != nil {
			return err
		}
		demo := cfg.Demo
		if !cfg.DemoSet {
			demo = cfg.Embedded()
		}
		if fresh && demo {
			if err := store.SeedDemoWith(ctx, demoOptions(cfg)); err != nil {
				return err
			}
			log.Info("seeded demo data: sandbox account, sample staff, a duty week and a template")
		}
		if role != "all" && role != "web" {
			return nil
		}
		return ensureAdmin(ctx, store, cfg, stdout)
	})
}

// demoOptions make the demo in the console's default language, with accounts on the
// in-process simulator's platforms when serve runs it.
func demoOptions(cfg *config.Config) models.DemoOptions {
	o := models.DemoOptions{Chinese: cfg.DefaultLanguage == "zh-CN", SimulatorSMTP: cfg.SimulatorSMTPAddr}
	if cfg.SimulatorAddr != "" {
		o.SimulatorURL = "http://" + cfg.SimulatorAddr
	}
	return o
}

// migrate is the one migration step of every way Herald migrates (serve's first start,
// `herald migrate up`, the admin and apikey commands): it applies pending migrations
// and, on a new database, puts the national holiday calendars Herald ships in force, so
// that an install migrated before it first serves knows them too.
func migrate(ctx context.Context, store *models.Store, loc *time.Location) (applied int, fresh bool, err error) {
	applied, fresh, err = store.MigrateUp(ctx)
	if err != nil || !fresh {
		return applied, fresh, err
	}
	return applied, fresh, loadNationalCalendars(ctx, store, loc)
}

// loadNationalCalendars puts the national holiday calendars Herald ships in force on a
// new database, so that a fresh install knows 春节 and 国庆 without an import. Each year
// is written and audited as an import would be; an operator may change any day later.
func loadNationalCalendars(ctx context.Context, store *models.Store, loc *time.Location) error {
	svc := dispatch.NewStoreOnly(store, loc)
	for _, year := range duty.BuiltinNationalYears() {
		days, _, ok := duty.BuiltinNationalCalendar(year)
		if !ok {
			continue
		}
		if err := svc.Duty().ImportHolidays(ctx, audit.System("first-start"), duty.NationalHolidays(days, nil), duty.HolidaysFromNational); err != nil {
			return fmt.Errorf("national holiday calendar %d: %w", year, err)
		}
	}
	return nil
}

// Migrate applies pending migrations under the start lock, with the national calendars
// on a new database (migrate), and reports how many it applied. loc is the duty rule's
// time zone (HERALD_TIMEZONE).
func Migrate(ctx context.Context, store *models.Store, loc *time.Location) (applied int, err error) {
	err = store.WithStartLock(ctx, func() error {
		applied, _, err = migrate(ctx, store, loc)
		return err
	})
	return applied, err
}

// ensureAdmin creates the first console user while none exists, printing a generated
// password once if HERALD_ADMIN_PASSWORD is not set.
func ensureAdmin(ctx context.Context, store *models.Store, cfg *config.Config, stdout io.Writer) error {
	n, err := store.Access().CountUsers(ctx)
	if err != nil || n > 0 {
		return err
	}
	password, generated := cfg.AdminPassword, false
	if password == "" {
		b := make([]byte, 15)
		_, _ = rand.Read(b)
		password, generated = base64.RawURLEncoding.EncodeToString(b), true
	}
	svc := dispatch.NewStoreOnly(store, cfg.Location)
	u, err := svc.Access().CreateUser(ctx, audit.System("system"), cfg.AdminUser, password, access.RoleAdmin)
	if err != nil {
		// Lost a race with `herald admin create`: not an error.
		if n, cerr := store.Access().CountUsers(ctx); cerr == nil && n > 0 {
			return nil
		}
	}
	var fe *kernel.FieldError
	if errors.As(err, &fe) {
		env := map[string]string{"username": "HERALD_ADMIN_USER", "password": "HERALD_ADMIN_PASSWORD"}[fe.Field]
		return &config.Error{Var: env, Msg: fe.Message}
	}
	if err != nil {
		return err
	}
	if generated {
		fmt.Fprintf(stdout, "\nCreated the first console user.\n  username: %s\n  password: %s\nThis password is shown only once.\n\n", u.Username, password)
	} else {
		fmt.Fprintf(stdout, "Created the first console user %s.\n", u.Username)
	}
	return nil
}
