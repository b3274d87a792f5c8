package models_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/access"
	"herald/directory"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
	"herald/sending"
)

// fixture is a migrated store with one recipient and one account to hang messages on.
type fixture struct {
	store     *models.Store
	recipient *directory.Recipient
	account   *sending.Account
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	s := testenv.Store(t)
	ctx := context.Background()
	r := &directory.Recipient{ExternalID: "E1001", Name: "Li Wei", OrgType: directory.Branch, TianyuanID: "ty_E1001", Active: true}
	if err := s.Directory().CreateRecipient(ctx, r); err != nil {
		t.Fatal(err)
	}
	a := &sending.Account{Name: "ty-main", Platform: "tianyuan", Enabled: true, Healthy: true,
		Config: map[string]string{"base_url": "http://127.0.0.1:9900/tianyuan", "token": "tok"}}
	if err := s.Sending().CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	return &fixture{store: s, recipient: r, account: a}
}

// batch returns a new, unsaved batch on the fixture's account.
func (f *fixture) batch() *models.Batch {
	return &models.Batch{ID: models.NewID(), Source: "api", Platform: f.account.Platform,
		AccountID: f.account.ID, Priority: "normal"}
}

// message returns a new, unsaved message of a batch for the fixture's recipient.
func (f *fixture) message(batchID string, status models.Status, nextAttemptAt time.Time) models.Message {
	return f.messageTo(f.recipient, batchID, status, nextAttemptAt)
}

func (f *fixture) messageTo(r *directory.Recipient, batchID string, status models.Status, nextAttemptAt time.Time) models.Message {
	return models.Message{ID: models.NewID(), BatchID: batchID, RecipientID: r.ID, AccountID: f.account.ID,
		Platform: f.account.Platform, Address: r.Address(f.account.Platform), MsgType: "text",
		Content: "Overdue: ledger 42", Priority: "normal", Status: status,
		MaxAttempts: sending.DefaultMaxAttempts, SendAt: nextAttemptAt, NextAttemptAt: &nextAttemptAt}
}

// createMessages stores a batch holding msgs and returns the batch id.
func (f *fixture) createMessages(t *testing.T, msgs ...models.Message) string {
	t.Helper()
	b := f.batch()
	for i := range msgs {
		msgs[i].BatchID = b.ID
	}
	if err := f.store.CreateBatch(context.Background(), b, msgs, nil); err != nil {
		t.Fatal(err)
	}
	return b.ID
}

func TestAccountConfigSealedAtRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	opts := testenv.FreshOptions(t)
	s, err := models.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}

	const token = "tk-7f3a9c-very-secret-token"
	cfg := map[string]string{"base_url": "https://im.example.com", "token": token}
	a := &sending.Account{Name: "ty-main", Platform: "tianyuan", Enabled: true, Healthy: true,
		Config: cfg, Limits: sending.Limits{PerSecond: 20, PerRecipientPerDay: 100}}
	if err := s.Sending().CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}

	var raw string
	if err := s.SQL().QueryRow("SELECT config_enc FROM accounts WHERE id = ?", a.ID).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(raw, token) {
		t.Errorf("config_enc holds the token in clear: %q", raw)
	}
	if !strings.HasPrefix(raw, "v1:") {
		t.Errorf("config_enc = %q, want the v1: sealed format", raw)
	}

	got, err := s.Sending().AccountByID(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cfg, got.Config); diff != "" {
		t.Errorf("account config after a round trip (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(a.Limits, got.Limits); diff != "" {
		t.Errorf("account limits after a round trip (-want +got):\n%s", diff)
	}
	if got.MaxAttempts != sending.DefaultMaxAttempts {
		t.Errorf("MaxAttempts = %d, want the default %d", got.MaxAttempts, sending.DefaultMaxAttempts)
	}

	// Another process with a different HERALD_SECRET_KEY on the same database.
	opts.SecretKey = []byte("another-secret-key-another-secret-key-000000")
	other, err := models.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if acct, err := other.Sending().AccountByID(ctx, a.ID); err == nil {
		t.Errorf("AccountByID with another secret key succeeded with config %v, want an error", acct.Config)
	} else if errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("AccountByID with another secret key: %v, want a decryption error, not not-found", err)
	}
	// Listing does not fail: the account is marked Unreadable, its config not opened.
	if list, err := other.Sending().EnabledAccounts(ctx); err != nil || len(list) != 1 || !list[0].Unreadable || len(list[0].Config) > 0 {
		t.Errorf("EnabledAccounts with another secret key: %+v, %v; want the account marked Unreadable, config empty", list, err)
	}
}

func TestCreateAccountDuplicateName(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	err := f.store.Sending().CreateAccount(context.Background(), &sending.Account{Name: f.account.Name, Platform: "zhaohu"})
	var fe *kernel.FieldError
	if !errors.As(err, &fe) || fe.Field != "name" {
		t.Errorf("second account named %s: error %v, want a FieldError on name", f.account.Name, err)
	}
}

func TestAccountByIDNotFound(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	_, err := s.Sending().AccountByID(context.Background(), 4242)
	if !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("AccountByID(4242) on an empty database: %v, want ErrNotFound", err)
	}
}

// A time.Time is an instant whatever its location: the store must give the same answer
// for the same instant expressed in any zone (callers hold times in HERALD_TIMEZONE too).
func TestStoreComparesInstantsNotZones(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	now := kernel.Now()
	due := f.message("", models.StatusPending, now.Add(-time.Minute))
	later := f.message("", models.StatusPending, now.Add(3*time.Hour))
	f.createMessages(t, due, later)
	// A wrong guess opens this minute's throttle windows for the username and the address.
	if _, err := f.store.Access().Authenticate(ctx, "alice", "wrong-password", "10.0.0.1"); !errors.Is(err, access.ErrBadCredentials) {
		t.Fatalf("Authenticate of an unknown user: %v, want ErrBadCredentials", err)
	}

	for _, zone := range []string{"UTC", "Asia/Shanghai", "America/New_York"} {
		t.Run(zone, func(t *testing.T) {
			loc, err := time.LoadLocation(zone)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.store.DB().DeleteThrottleWindowsBefore(ctx, now.Add(-time.Hour).In(loc)); err != nil {
				t.Fatal(err)
			}
			if n := testenv.Count(t, f.store, "SELECT COUNT(*) FROM throttle_windows"); n != 2 {
				t.Errorf("throttle windows left after pruning those older than an hour ago in %s: %d, want the current 2", zone, n)
			}

			page, err := f.store.DueMessages(ctx, kernel.Now().In(loc), models.DueCursor{}, 10)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range page {
				got = append(got, m.ID)
			}
			if diff := cmp.Diff([]string{due.ID}, got); diff != "" {
				t.Errorf("DueMessages due by now in %s (-want +got):\n%s", zone, diff)
			}
		})
	}
}
