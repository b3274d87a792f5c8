package sending

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"gorm.io/gorm"

	"herald/channels"
	"herald/delivery"
	"herald/kernel"
)

// Limits are an account's send limits (delivery.Limits, where their rules live),
// kept as columns of the account.
type Limits = delivery.Limits

// Account is one sending identity on a platform, with its credentials (encrypted at rest),
// limits and retry settings.
type Account struct {
	ID                  int64
	Name                string
	Platform            string
	IsDefault           bool
	Enabled             bool
	AllowPrivateNetwork bool
	MaxAttempts         int
	// ConfigEnc is the sealed config as last read or written; an update applies only
	// while the row still holds it (see SaveAccount).
	ConfigEnc string `gorm:"column:config_enc"`
	// SealVersion says what ConfigEnc is bound to: sealBound for this account's id and
	// the config field, sealUnbound for a value sealed before binding existed.
	SealVersion int
	Config      map[string]string `gorm:"-"`
	// Unreadable says the sealed config opened with no key Herald holds (ErrUnreadable):
	// Config is empty, and the account's settings must be entered again.
	Unreadable  bool        `gorm:"-"`
	Limits      Limits      `gorm:"embedded"`
	RetryPolicy RetryPolicy `gorm:"type:text"`
	// QuietHours hold normal and low messages in a daily window (quiet_hours.go).
	QuietHours QuietHours
	Healthy    bool
	HealthNote string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// DefaultMaxAttempts is how many provider calls a message gets unless its account says otherwise.
const DefaultMaxAttempts = 3

// Seal versions of accounts.config_enc. Migration 00004 marks the rows it finds
// sealUnbound; Migrate re-seals them (ResealAccounts), and every write seals bound.
const (
	sealUnbound = 1
	sealBound   = 2
)

// configField names the sealed config in its associated data.
const configField = "config"

// Channel is what the account's adapter needs of it.
func (a *Account) Channel() channels.Account {
	return channels.Account{ID: a.ID, Name: a.Name, Platform: a.Platform, Config: a.Config,
		AllowPrivateNetwork: a.AllowPrivateNetwork, UpdatedAt: a.UpdatedAt}
}

// sealConfig seals a.Config for a.ID, which must be set: the id is part of the seal.
func (s *AccountBook) sealConfig(a *Account) error {
	cfg := a.Config
	if cfg == nil {
		cfg = map[string]string{}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	a.ConfigEnc, a.SealVersion = s.k.Sealer().Seal(b, sealedFor(a.ID, configField)), sealBound
	return nil
}

func (s *AccountBook) openConfig(a *Account) error {
	if a.SealVersion != sealBound {
		return fmt.Errorf("account %s: credentials sealed by an older Herald; run `herald migrate up` to re-seal them: %w", a.Name, kernel.ErrUnreadable)
	}
	plain, err := s.k.Sealer().Open(a.ConfigEnc, sealedFor(a.ID, configField))
	if err != nil {
		return fmt.Errorf("account %s: %w", a.Name, err)
	}
	return json.Unmarshal(plain, &a.Config)
}

// openOrFlag opens a's config, or marks it Unreadable (with an empty config) when no
// key opens it, so that the account can still be listed, shown, edited and deleted.
func (s *AccountBook) openOrFlag(a *Account) error {
	err := s.openConfig(a)
	if errors.Is(err, kernel.ErrUnreadable) {
		a.Config, a.Unreadable = map[string]string{}, true
		return nil
	}
	return err
}

// CreateAccount stores a new account, sealing its credentials.
func (s *AccountBook) CreateAccount(ctx context.Context, a *Account) error {
	if a.MaxAttempts == 0 {
		a.MaxAttempts = DefaultMaxAttempts
	}
	err := s.k.Tx(ctx, func(tx *gorm.DB) error { return s.insertAccount(tx, a) })
	if err != nil {
		a.ID = 0 // rolled back: the id the insert returned does not exist
	}
	return err
}

// insertAccount inserts a new account in tx. The database chooses the id the seal is
// bound to, so the row goes in first and its config is sealed and written after, in
// the same transaction.
func (s *AccountBook) insertAccount(tx *gorm.DB, a *Account) error {
	a.ConfigEnc, a.SealVersion = "", sealBound
	if err := tx.Create(a).Error; err != nil {
		if kernel.IsDuplicate(err) {
			return kernel.DuplicateField("name", "validation.name_taken_account")
		}
		return fmt.Errorf("sending: create account %s: %w", a.Name, err)
	}
	if err := s.sealConfig(a); err != nil {
		return fmt.Errorf("sending: seal account %s: %w", a.Name, err)
	}
	if err := tx.Model(&Account{}).Where("id = ?", a.ID).UpdateColumn("config_enc", a.ConfigEnc).Error; err != nil {
		return fmt.Errorf("sending: seal account %s: %w", a.Name, err)
	}
	return nil
}

// AccountByID returns an account with its credentials opened.
func (s *AccountBook) AccountByID(ctx context.Context, id int64) (*Account, error) {
	var a Account
	if err := s.k.Reader(ctx).First(&a, id).Error; err != nil {
		return nil, fmt.Errorf("sending: account %d: %w", id, kernel.NotFound(err))
	}
	if err := s.openConfig(&a); err != nil {
		return nil, fmt.Errorf("sending: %w", err)
	}
	return &a, nil
}

// EnabledAccounts lists enabled accounts by name, credentials opened (or the account
// marked Unreadable).
func (s *AccountBook) EnabledAccounts(ctx context.Context) ([]Account, error) {
	var out []Account
	if err := s.k.Reader(ctx).Where("enabled = ?", true).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("sending: list accounts: %w", err)
	}
	for i := range out {
		if err := s.openOrFlag(&out[i]); err != nil {
			return nil, fmt.Errorf("sending: %w", err)
		}
	}
	return out, nil
}

// AccountByName returns an account with its credentials opened, or marked Unreadable
// when no key opens them.
func (s *AccountBook) AccountByName(ctx context.Context, name string) (*Account, error) {
	var a Account
	if err := s.k.Reader(ctx).Where("name = ?", name).First(&a).Error; err != nil {
		return nil, fmt.Errorf("sending: account %s: %w", name, kernel.NotFound(err))
	}
	if err := s.openOrFlag(&a); err != nil {
		return nil, fmt.Errorf("sending: %w", err)
	}
	return &a, nil
}

// DefaultAccount returns the default account of a platform.
func (s *AccountBook) DefaultAccount(ctx context.Context, platform string) (*Account, error) {
	var a Account
	err := s.k.Reader(ctx).Where("platform = ? AND is_default = ?", platform, true).Order("id").First(&a).Error
	if err != nil {
		return nil, fmt.Errorf("sending: default account of %s: %w", platform, kernel.NotFound(err))
	}
	if err := s.openConfig(&a); err != nil {
		return nil, fmt.Errorf("sending: %w", err)
	}
	return &a, nil
}

var accountNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidateAccount checks an account's own fields; its platform config is checked by the
// channels package, which knows each platform.
func ValidateAccount(a *Account) error {
	switch {
	case !accountNameRe.MatchString(a.Name):
		return kernel.Invalid("name", "accounts.error.name")
	case a.MaxAttempts < 1 || a.MaxAttempts > 20:
		return kernel.Invalid("max_attempts", "accounts.error.max_attempts", "Min", 1, "Max", 20)
	}
	if err := a.RetryPolicy.Validate(); err != nil {
		return err
	}
	if err := a.QuietHours.Validate(); err != nil {
		return err
	}
	if err := a.Limits.Validate(); err != nil {
		return limitInvalid(err)
	}
	return nil
}

// limitInvalid returns a problem with a limit as the failure of its field, else err.
func limitInvalid(err error) error {
	if p, ok := errors.AsType[*delivery.LimitProblem](err); ok {
		return kernel.Invalid(p.Field, p.Key, p.Args...)
	}
	return err
}

// Accounts lists every account by name, credentials opened (or the account marked
// Unreadable).
func (s *AccountBook) Accounts(ctx context.Context) ([]Account, error) {
	var out []Account
	if err := s.k.Reader(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("sending: list accounts: %w", err)
	}
	for i := range out {
		if err := s.openOrFlag(&out[i]); err != nil {
			return nil, fmt.Errorf("sending: %w", err)
		}
	}
	return out, nil
}

// SaveAccount creates (ID 0) or updates an account, sealing its credentials for it.
// An update is a compare-and-set on the sealed config the caller read (a.ConfigEnc):
// if the account was saved since, nothing is written and the error is ErrStateChanged,
// so secrets kept from an older read never overwrite newer ones. When the account is
// its platform's default, any other default of the platform stops being one.
func (s *AccountBook) SaveAccount(ctx context.Context, a *Account) error {
	read, created := a.ConfigEnc, a.ID == 0
	err := s.k.Tx(ctx, func(tx *gorm.DB) error {
		if a.IsDefault {
			err := tx.Model(&Account{}).Where("platform = ? AND is_default = ? AND id <> ?", a.Platform, true, a.ID).
				Update("is_default", false).Error
			if err != nil {
				return fmt.Errorf("sending: clear default account: %w", err)
			}
		}
		if created {
			return s.insertAccount(tx, a)
		}
		if err := s.sealConfig(a); err != nil {
			return fmt.Errorf("sending: seal account %s: %w", a.Name, err)
		}
		a.UpdatedAt = kernel.Now()
		// Every column but the key and the creation time; the new seal always differs
		// from the old, so a matched row is always a changed row, on MySQL too.
		res := tx.Model(&Account{}).Where("id = ? AND config_enc = ?", a.ID, read).
			Select("*").Omit("id", "created_at").Updates(a)
		if kernel.IsDuplicate(res.Error) {
			return kernel.DuplicateField("name", "validation.name_taken_account")
		}
		if res.Error != nil {
			return fmt.Errorf("sending: save account %s: %w", a.Name, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("sending: save account %s: %w", a.Name, kernel.ErrStateChanged)
		}
		return nil
	})
	if err != nil {
		// The caller's account stays as it was: unsaved, or as last read.
		if created {
			a.ID = 0
		} else {
			a.ConfigEnc = read
		}
	}
	return err
}

// SetAccountEnabled enables or disables an account; its credentials are untouched.
func (s *AccountBook) SetAccountEnabled(ctx context.Context, id int64, enabled bool) error {
	res := s.k.Writer(ctx).Model(&Account{}).Where("id = ?", id).
		Updates(map[string]any{"enabled": enabled, "updated_at": kernel.Now()})
	if res.Error != nil {
		return fmt.Errorf("sending: enable account %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("sending: account %d: %w", id, kernel.ErrNotFound)
	}
	return nil
}

// ResealAccounts binds credentials sealed before binding existed to their account and,
// while a previous key is set, seals again with the current key the credentials only the
// previous one opens, so that after one start the previous key can be dropped. Each row
// is a compare-and-set on the value read, so processes starting at once re-seal every
// row exactly once and a later run finds nothing to do. Credentials no key opens are
// left as they are: the account is marked Unreadable until its settings are entered
// again. It reports how many rows it re-sealed.
func (s *AccountBook) ResealAccounts(ctx context.Context) (int, error) {
	q := s.k.Writer(ctx).Select("id", "name", "config_enc", "seal_version")
	if !s.k.Sealer().HasPrevious() {
		q = q.Where("seal_version = ?", sealUnbound)
	}
	var rows []Account
	if err := q.Find(&rows).Error; err != nil {
		return 0, fmt.Errorf("sending: list accounts to re-seal: %w", err)
	}
	n := 0
	for _, a := range rows {
		var associated []byte
		if a.SealVersion == sealBound {
			associated = sealedFor(a.ID, configField)
		}
		plain, stale, err := s.k.Sealer().OpenAny(a.ConfigEnc, associated)
		if err != nil || (a.SealVersion == sealBound && !stale) {
			continue
		}
		res := s.k.Writer(ctx).Model(&Account{}).
			Where("id = ? AND seal_version = ? AND config_enc = ?", a.ID, a.SealVersion, a.ConfigEnc).
			UpdateColumns(map[string]any{"config_enc": s.k.Sealer().Seal(plain, sealedFor(a.ID, configField)), "seal_version": sealBound})
		if res.Error != nil {
			return n, fmt.Errorf("sending: re-seal account %s: %w", a.Name, res.Error)
		}
		n += int(res.RowsAffected)
	}
	return n, nil
}

// UnreadableAccounts names the accounts whose credentials no key opens, by name.
func (s *AccountBook) UnreadableAccounts(ctx context.Context) ([]string, error) {
	var rows []Account
	if err := s.k.Reader(ctx).Select("id", "name", "config_enc", "seal_version").Order("name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("sending: list accounts: %w", err)
	}
	var names []string
	for i := range rows {
		if errors.Is(s.openConfig(&rows[i]), kernel.ErrUnreadable) {
			names = append(names, rows[i].Name)
		}
	}
	return names, nil
}

// ErrInUse means a resource cannot be removed while something depends on it: an
// account with undelivered messages, the one resource it refuses today, whose message
// it carries.
var ErrInUse = kernel.Declare(kernel.DomainError{Kind: kernel.KindConflict, Code: "in_use", Key: "api.account_in_use", Text: "in use"})

// DeleteAccount removes an account that has no undelivered messages.
func (s *AccountBook) DeleteAccount(ctx context.Context, id int64) error {
	return s.k.Tx(ctx, func(tx *gorm.DB) error {
		var n int64
		err := tx.Table("messages").Where("account_id = ? AND status IN ?", id,
			[]delivery.Status{delivery.Pending, delivery.Held, delivery.Sending, delivery.Failed}).Count(&n).Error
		if err != nil {
			return fmt.Errorf("sending: count undelivered of account %d: %w", id, err)
		}
		if n > 0 {
			return fmt.Errorf("sending: account %d has %d undelivered messages: %w", id, n, ErrInUse)
		}
		res := tx.Delete(&Account{}, id)
		if res.Error != nil {
			return fmt.Errorf("sending: delete account %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("sending: account %d: %w", id, kernel.ErrNotFound)
		}
		return nil
	})
}

// SetAccountHealth records whether an account's credentials work, and why not.
func (s *AccountBook) SetAccountHealth(ctx context.Context, id int64, healthy bool, note string) error {
	err := s.k.Writer(ctx).Model(&Account{}).Where("id = ? AND healthy <> ?", id, healthy).
		Updates(map[string]any{"healthy": healthy, "health_note": kernel.Truncate(note, 255)}).Error
	if err != nil {
		return fmt.Errorf("sending: account %d health: %w", id, err)
	}
	return nil
}

// sealedFor is the associated data binding a sealed value to one field of one account.
// Values sealed before binding existed have none (nil).
func sealedFor(accountID int64, field string) []byte {
	return []byte("account " + strconv.FormatInt(accountID, 10) + " " + field)
}
