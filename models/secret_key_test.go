package models_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"herald/access"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
	"herald/sending"
)

// otherKey is a second HERALD_SECRET_KEY, as after a rotation.
var otherKey = []byte("another-secret-key-another-secret-key-9876")

// openWith opens and migrates a store on opts' database with the given keys.
func openWith(t *testing.T, opts kernel.Options, current, previous []byte) *models.Store {
	t.Helper()
	opts.SecretKey, opts.PreviousSecretKey = current, previous
	s, err := models.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// After HERALD_SECRET_KEY is rotated with the old key in HERALD_SECRET_KEY_PREVIOUS, the
// credentials sealed with the old key still open, and one start re-seals them (and
// callback secrets) with the new key, so the previous key can then be dropped.
func TestRotatedSecretKeyResealsAtStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	opts := testenv.FreshOptions(t)
	old := openWith(t, opts, testenv.SecretKey, nil)
	a := &sending.Account{Name: "ty-rotated", Platform: "tianyuan", Enabled: true,
		Config: map[string]string{"base_url": "https://im.example.com", "token": "rotated-token"}}
	if err := old.Sending().CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	key, _, err := old.Access().CreateCallbackAPIKey(ctx, "erp", access.ScopeSend, "admin", access.KeyLimits{},
		&access.CallbackSetting{URL: "https://erp.example.com/hook", Secret: "callback-secret-0123456789"})
	if err != nil {
		t.Fatal(err)
	}

	// Before the restart, the new key alone opens nothing.
	opts.SecretKey = otherKey
	newOnly, err := models.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { newOnly.Close() })
	if _, err := newOnly.Sending().AccountByID(ctx, a.ID); !errors.Is(err, kernel.ErrUnreadable) {
		t.Fatalf("new key alone before the re-seal: %v, want ErrUnreadable", err)
	}

	rotating := openWith(t, opts, otherKey, testenv.SecretKey)
	for _, s := range []*models.Store{rotating, newOnly} {
		got, err := s.Sending().AccountByID(ctx, a.ID)
		if err != nil || got.Config["token"] != "rotated-token" {
			t.Fatalf("account after the rotation: %v, %v", got, err)
		}
		target, err := s.Access().CallbackTargetOf(ctx, key.ID)
		if err != nil || target.Secret != "callback-secret-0123456789" {
			t.Fatalf("callback after the rotation: %v, %v", target, err)
		}
	}
	if names, err := newOnly.Sending().UnreadableAccounts(ctx); err != nil || len(names) > 0 {
		t.Errorf("unreadable accounts after the rotation: %v, %v", names, err)
	}
	// The old key no longer opens them.
	if _, err := old.Sending().AccountByID(ctx, a.ID); !errors.Is(err, kernel.ErrUnreadable) {
		t.Errorf("old key after the re-seal: %v, want ErrUnreadable", err)
	}
}

// An account no key opens is listed and can be read for editing (marked Unreadable,
// with an empty config), overwritten with new settings, and deleted; it is not sent
// through, and UnreadableAccounts names it.
func TestUnreadableAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	opts := testenv.FreshOptions(t)
	old := openWith(t, opts, testenv.SecretKey, nil)
	for _, name := range []string{"ty-lost", "ty-lost-too"} {
		a := &sending.Account{Name: name, Platform: "tianyuan", Enabled: true,
			Config: map[string]string{"base_url": "https://im.example.com", "token": "lost-token"}}
		if err := old.Sending().CreateAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	s := openWith(t, opts, otherKey, nil) // the start does not fail

	names, err := s.Sending().UnreadableAccounts(ctx)
	if err != nil || !slices.Equal(names, []string{"ty-lost", "ty-lost-too"}) {
		t.Fatalf("UnreadableAccounts: %v, %v", names, err)
	}
	list, err := s.Sending().Accounts(ctx)
	if err != nil || len(list) != 2 || !list[0].Unreadable || len(list[0].Config) > 0 {
		t.Fatalf("Accounts: %+v, %v", list, err)
	}
	a, err := s.Sending().AccountByName(ctx, "ty-lost")
	if err != nil || !a.Unreadable {
		t.Fatalf("AccountByName: %+v, %v", a, err)
	}
	if _, err := s.Sending().NewAccountCache(0).ByName(ctx, "ty-lost"); !errors.Is(err, kernel.ErrUnreadable) {
		t.Errorf("sending through it: %v, want ErrUnreadable", err)
	}

	a.Config = map[string]string{"base_url": "https://im.example.com", "token": "new-token"}
	if err := s.Sending().SaveAccount(ctx, a); err != nil {
		t.Fatalf("overwriting the settings: %v", err)
	}
	if got, err := s.Sending().AccountByID(ctx, a.ID); err != nil || got.Config["token"] != "new-token" {
		t.Errorf("after overwriting: %v, %v", got, err)
	}
	other, _ := s.Sending().AccountByName(ctx, "ty-lost-too")
	if err := s.Sending().DeleteAccount(ctx, other.ID); err != nil {
		t.Errorf("deleting it: %v", err)
	}
	if names, err := s.Sending().UnreadableAccounts(ctx); err != nil || len(names) > 0 {
		t.Errorf("unreadable accounts at the end: %v, %v", names, err)
	}
}
