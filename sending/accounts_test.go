package sending_test

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
	"herald/sending"
)

// Sealed credentials open only as the account they were sealed for: a value copied
// into another account's row (by anyone who can write the table) does not open there.
func TestSealedConfigIsBoundToItsAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testenv.Store(t)
	first := &sending.Account{Name: "ty-first", Platform: "tianyuan", Enabled: true,
		Config: map[string]string{"base_url": "https://im.example.com", "token": "first-token"}}
	second := &sending.Account{Name: "ty-second", Platform: "tianyuan", Enabled: true,
		Config: map[string]string{"base_url": "https://attacker.example.com", "token": "second-token"}}
	for _, a := range []*sending.Account{first, second} {
		if err := s.Sending().CreateAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	var sealed string
	if err := s.SQL().QueryRow("SELECT config_enc FROM accounts WHERE id = ?", first.ID).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SQL().Exec("UPDATE accounts SET config_enc = ? WHERE id = ?", sealed, second.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Sending().AccountByID(ctx, second.ID); err == nil {
		t.Errorf("account 2 opened account 1's sealed config: %v", got.Config)
	} else if errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("AccountByID: %v, want a decryption error", err)
	}
	got, err := s.Sending().AccountByID(ctx, first.ID)
	if err != nil || got.Config["token"] != "first-token" {
		t.Errorf("account 1 after the copy: %v, %v", got, err)
	}
}

// sealUnbound seals plain as Herald did before credentials were bound to their account:
// AES-256-GCM under the same key, no associated data.
func sealUnbound(t *testing.T, plain []byte) string {
	t.Helper()
	key := sha256.Sum256(append([]byte("herald credentials v1\x00"), testenv.SecretKey...))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	return "v1:" + base64.StdEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, nil))
}

// Rows sealed before binding are re-sealed by Migrate, once, however many processes
// start at once, and then open as before; a later Migrate leaves them alone.
func TestMigrateResealsUnboundRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	opts := testenv.FreshOptions(t)
	stores := make([]*models.Store, 4)
	for i := range stores {
		s, err := models.Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	if _, err := stores[0].Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	configs := map[string]map[string]string{
		"ty-old":    {"base_url": "https://im.example.com", "token": "old-token"},
		"hook-old":  {"url": "https://hooks.example.com/x", "secret": "old-hmac"},
		"email-old": {"host": "smtp.example.com", "from": "h@example.com", "username": "u", "password": "old-pw"},
	}
	platforms := map[string]string{"ty-old": "tianyuan", "hook-old": "webhook", "email-old": "email"}
	unbound := map[string]string{}
	now := time.Now().UTC()
	for name, cfg := range configs {
		plain, _ := json.Marshal(cfg)
		unbound[name] = sealUnbound(t, plain)
		// As an upgraded database holds it: migration 00004 gave the row seal_version 1.
		_, err := stores[0].SQL().Exec("INSERT INTO accounts (name, platform, config_enc, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
			name, platforms[name], unbound[name], now, now)
		if err != nil {
			t.Fatal(err)
		}
	}
	if a, err := stores[0].Sending().AccountByName(ctx, "ty-old"); err == nil && (!a.Unreadable || len(a.Config) > 0) {
		t.Error("an unbound row opened before re-sealing; binding would be optional")
	}
	if _, err := stores[0].Sending().AccountByID(ctx, 1); err == nil {
		t.Error("an unbound row opened by id before re-sealing")
	}

	var wg sync.WaitGroup
	errs := make([]error, len(stores))
	for i, s := range stores {
		wg.Go(func() { _, errs[i] = s.Migrate(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Migrate from several processes at once: %v", err)
	}

	resealed := map[string]string{}
	for name, cfg := range configs {
		var enc string
		var version int
		if err := stores[0].SQL().QueryRow("SELECT config_enc, seal_version FROM accounts WHERE name = ?", name).Scan(&enc, &version); err != nil {
			t.Fatal(err)
		}
		if enc == unbound[name] || version != 2 {
			t.Errorf("%s: seal_version %d, config_enc unchanged %t; want re-sealed as version 2", name, version, enc == unbound[name])
		}
		resealed[name] = enc
		for i, s := range stores {
			a, err := s.Sending().AccountByName(ctx, name)
			if err != nil {
				t.Fatalf("store %d: %v", i, err)
			}
			if diff := cmp.Diff(cfg, a.Config); diff != "" {
				t.Errorf("%s after re-sealing (-want +got):\n%s", name, diff)
			}
		}
	}

	if _, err := stores[1].Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for name, enc := range resealed {
		var now string
		stores[0].SQL().QueryRow("SELECT config_enc FROM accounts WHERE name = ?", name).Scan(&now)
		if now != enc {
			t.Errorf("%s was re-sealed again by a later Migrate", name)
		}
	}
}

// An update applies only to the account as the caller read it, so secrets kept from a
// stale read never overwrite a newer save.
func TestSaveAccountIsCompareAndSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, acct := newAccount(t)
	mine, err := s.Sending().AccountByID(ctx, acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := s.Sending().AccountByID(ctx, acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	theirs.Config["token"] = "their-token"
	if err := s.Sending().SaveAccount(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	mine.Config["base_url"] = "https://elsewhere.example.com"
	if err := s.Sending().SaveAccount(ctx, mine); !errors.Is(err, kernel.ErrStateChanged) {
		t.Errorf("save of a stale read: %v, want ErrStateChanged", err)
	}
	got, _ := s.Sending().AccountByID(ctx, acct.ID)
	if got.Config["token"] != "their-token" || got.Config["base_url"] != acct.Config["base_url"] {
		t.Errorf("after the refused save: %v", got.Config)
	}
	// Saving again what was just saved works: the caller holds the current seal.
	theirs.MaxAttempts = 5
	if err := s.Sending().SaveAccount(ctx, theirs); err != nil {
		t.Errorf("second save of a fresh read: %v", err)
	}
}

// A name already taken is a field error on name that is also ErrDuplicate, for an
// account created or renamed.
func TestAccountNameTaken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, acct := newAccount(t)
	other := &sending.Account{Name: "zh-main", Platform: "zhaohu", Enabled: true,
		Config: map[string]string{"base_url": "https://zh.example.com", "token": "t"}}
	if err := s.Sending().SaveAccount(ctx, other); err != nil {
		t.Fatal(err)
	}
	err := s.Sending().SaveAccount(ctx, &sending.Account{Name: acct.Name, Platform: "zhaohu", MaxAttempts: 3})
	var fe *kernel.FieldError
	if !errors.As(err, &fe) || fe.Field != "name" || !errors.Is(err, kernel.ErrDuplicate) {
		t.Errorf("create with a taken name: %v, want a FieldError on name wrapping ErrDuplicate", err)
	}
	other.Name = acct.Name
	err = s.Sending().SaveAccount(ctx, other)
	if !errors.As(err, &fe) || fe.Field != "name" || !errors.Is(err, kernel.ErrDuplicate) {
		t.Errorf("rename to a taken name: %v, want a FieldError on name wrapping ErrDuplicate", err)
	}
}

// newAccount opens a migrated store holding one enabled tianyuan account.
func newAccount(t *testing.T) (*models.Store, *sending.Account) {
	t.Helper()
	s := testenv.Store(t)
	a := &sending.Account{Name: "ty-main", Platform: "tianyuan", Enabled: true, Healthy: true,
		Config: map[string]string{"base_url": "http://127.0.0.1:9900/tianyuan", "token": "tok"}}
	if err := s.Sending().CreateAccount(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return s, a
}
