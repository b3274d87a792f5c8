package access

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"herald/kernel"
)

// APIKey authenticates a business system on the JSON API. Only the SHA-256 of the key
// is stored: keys are long and random, so a slow hash adds nothing.
type APIKey struct {
	ID         int64
	Name       string
	Prefix     string
	KeyHash    string
	Scopes     string // comma-separated
	CreatedBy  string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	KeyLimits
	// CallbackURL, when set, receives the status events of the messages created through
	// the key, signed with the sealed secret (callbacks.go).
	CallbackURL          string
	CallbackSecretEnc    *string `json:"-"`
	CallbackAllowPrivate bool
	CallbackLeaseUntil   *time.Time `json:"-"`
}

// KeyLimits bound what one API key may do: how many recipients one request may name
// (0: only the API's own limit) and the day after which the key is refused (nil: never).
type KeyLimits struct {
	MaxRecipientsPerRequest int
	// ExpiresAt is the first moment the key is refused: the start of the day after its
	// last valid day, in HERALD_TIMEZONE.
	ExpiresAt *time.Time
}

// MaxKeyRecipients bounds max_recipients_per_request: above the API's own limit of
// 10,000 recipients a request, a cap would say nothing.
const MaxKeyRecipients = 10000

// Validate checks the limits; an error names max_recipients_per_request.
func (l KeyLimits) Validate() error {
	if l.MaxRecipientsPerRequest < 0 || l.MaxRecipientsPerRequest > MaxKeyRecipients {
		return kernel.Invalid("max_recipients_per_request", "users.keys.cap_range", "Max", MaxKeyRecipients)
	}
	return nil
}

// ParseKeyLimits reads a key's limits as a person types them, for the console and the
// CLI alike: a recipient cap ("" or 0 for none) and the last day the key works
// (YYYY-MM-DD in loc, "" for never; not before today). Errors name
// max_recipients_per_request or expires.
func ParseKeyLimits(maxRecipients, lastDay string, loc *time.Location, now time.Time) (KeyLimits, error) {
	var l KeyLimits
	if s := strings.TrimSpace(maxRecipients); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return l, kernel.Invalid("max_recipients_per_request", "users.keys.cap_range", "Max", MaxKeyRecipients)
		}
		l.MaxRecipientsPerRequest = n
	}
	if err := l.Validate(); err != nil {
		return l, err
	}
	if s := strings.TrimSpace(lastDay); s != "" {
		day, err := time.ParseInLocation(time.DateOnly, s, loc)
		if err != nil {
			return l, kernel.Invalid("expires", "validation.date")
		}
		end := day.AddDate(0, 0, 1).UTC()
		if !end.After(now) {
			return l, kernel.Invalid("expires", "users.keys.expires_past")
		}
		l.ExpiresAt = &end
	}
	return l, nil
}

// AuditDetail writes the limits for the audit log ("" for none), after a key's scopes.
func (l KeyLimits) AuditDetail() string {
	var out string
	if l.MaxRecipientsPerRequest > 0 {
		out += fmt.Sprintf("; at most %d recipients a request", l.MaxRecipientsPerRequest)
	}
	if l.ExpiresAt != nil {
		out += "; expires " + l.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return out
}

// Expired reports whether the key is past its expiry at now.
func (k *APIKey) Expired(now time.Time) bool { return k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) }

// TableName implements gorm's tabler.
func (APIKey) TableName() string { return "api_keys" }

// API key scopes.
const (
	ScopeSend  = "send"
	ScopeRead  = "read"
	ScopeAdmin = "admin"
)

// Scopes lists the known scopes.
var Scopes = []string{ScopeSend, ScopeRead, ScopeAdmin}

// HasScope reports whether the key grants a scope; admin grants every scope.
func (k *APIKey) HasScope(scope string) bool {
	list := strings.Split(k.Scopes, ",")
	return slices.Contains(list, scope) || slices.Contains(list, ScopeAdmin)
}

// ParseScopes validates a comma-separated scope list and returns it normalised.
func ParseScopes(s string) (string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !slices.Contains(Scopes, p) {
			return "", kernel.Invalid("scopes", "users.keys.scope_unknown", "Scope", strconv.Quote(p))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return "", kernel.Invalid("scopes", "users.keys.scope_none")
	}
	slices.Sort(out)
	return strings.Join(out, ","), nil
}

const apiKeyPrefix = "hk_"

// CreateAPIKey makes a new key and returns it with the secret, which is shown once and
// never stored.
func (s *Credentials) CreateAPIKey(ctx context.Context, name, scopes, createdBy string) (*APIKey, string, error) {
	return s.CreateLimitedAPIKey(ctx, name, scopes, createdBy, KeyLimits{})
}

// CreateLimitedAPIKey is CreateAPIKey for a key with a recipient cap or an expiry.
func (s *Credentials) CreateLimitedAPIKey(ctx context.Context, name, scopes, createdBy string, limits KeyLimits) (*APIKey, string, error) {
	return s.CreateCallbackAPIKey(ctx, name, scopes, createdBy, limits, nil)
}

// CreateCallbackAPIKey is CreateLimitedAPIKey for a key that may have a status callback
// from the start (cb nil: none): the key and its callback are written together. The
// callback's URL must have been checked against the address guard
// (CheckCallback); cb.Secret holds the secret in force afterwards.
func (s *Credentials) CreateCallbackAPIKey(ctx context.Context, name, scopes, createdBy string, limits KeyLimits, cb *CallbackSetting) (*APIKey, string, error) {
	if err := limits.Validate(); err != nil {
		return nil, "", err
	}
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return nil, "", kernel.Invalid("name", "users.keys.name_length")
	}
	norm, err := ParseScopes(scopes)
	if err != nil {
		return nil, "", err
	}
	idBytes, secretBytes := make([]byte, 6), make([]byte, 24)
	_, _ = rand.Read(idBytes)
	_, _ = rand.Read(secretBytes)
	prefix := hex.EncodeToString(idBytes)
	secret := apiKeyPrefix + prefix + "_" + hex.EncodeToString(secretBytes)
	k := &APIKey{Name: name, Prefix: prefix, KeyHash: kernel.HashToken(secret), Scopes: norm, CreatedBy: createdBy, KeyLimits: limits}
	err = s.k.Tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(k).Error; err != nil {
			return fmt.Errorf("access: create api key: %w", err)
		}
		if cb == nil {
			return nil
		}
		if err := s.setCallback(tx, k.ID, cb); err != nil {
			return err
		}
		k.CallbackURL, k.CallbackAllowPrivate = cb.URL, cb.AllowPrivate
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return k, secret, nil
}

// APIKeyPrefix returns the public prefix of a secret shaped like an API key (the part
// the key list shows), or "" for anything else.
func APIKeyPrefix(secret string) string {
	rest, ok := strings.CutPrefix(secret, apiKeyPrefix)
	prefix, _, ok2 := strings.Cut(rest, "_")
	if !ok || !ok2 || len(prefix) != 12 {
		return ""
	}
	return prefix
}

// AuthenticateAPIKey returns the live key a secret belongs to, or ErrNotFound.
func (s *Credentials) AuthenticateAPIKey(ctx context.Context, secret string) (*APIKey, error) {
	prefix := APIKeyPrefix(secret)
	if prefix == "" {
		return nil, kernel.ErrNotFound
	}
	var k APIKey
	if err := s.k.Reader(ctx).Where("prefix = ?", prefix).First(&k).Error; err != nil {
		return nil, kernel.NotFound(err)
	}
	if subtle.ConstantTimeCompare([]byte(k.KeyHash), []byte(kernel.HashToken(secret))) != 1 || k.RevokedAt != nil {
		return nil, kernel.ErrNotFound
	}
	return &k, nil
}

// TouchAPIKey records that a key was used.
func (s *Credentials) TouchAPIKey(ctx context.Context, id int64) error {
	return s.k.Writer(ctx).Model(&APIKey{}).Where("id = ?", id).Update("last_used_at", kernel.Now()).Error
}

// RevokeAPIKey revokes a key; revoking twice is ErrStateChanged. The caches made on s
// refuse the key at once; other processes' caches, within APIKeyCacheTTL.
func (s *Credentials) RevokeAPIKey(ctx context.Context, id int64) error {
	res := s.k.Writer(ctx).Model(&APIKey{}).Where("id = ? AND revoked_at IS NULL", id).Update("revoked_at", kernel.Now())
	if res.Error != nil {
		return fmt.Errorf("access: revoke api key %d: %w", id, res.Error)
	}
	// No row changes when another process revoked the key a moment ago, and this
	// process's caches may still hold it: they are cleared either way.
	s.forgetAPIKeys()
	if res.RowsAffected == 0 {
		return fmt.Errorf("access: revoke api key %d: %w", id, kernel.ErrStateChanged)
	}
	return nil
}

// ForgetAPIKeys clears every key cache made on s: the service layer calls it once a
// change to a key has committed, so that no cache keeps what a request read meanwhile.
func (s *Credentials) ForgetAPIKeys() { s.forgetAPIKeys() }

// APIKeys lists every key, newest first.
func (s *Credentials) APIKeys(ctx context.Context) ([]APIKey, error) {
	var out []APIKey
	if err := s.k.Reader(ctx).Order("id DESC").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("access: list api keys: %w", err)
	}
	return out, nil
}

// LiveAPIKeyByName returns the key with that name that is not revoked: ErrNotFound when
// none is, ErrAmbiguous when several are (revoke the ones no longer used).
func (s *Credentials) LiveAPIKeyByName(ctx context.Context, name string) (*APIKey, error) {
	var list []APIKey
	if err := s.k.Reader(ctx).Where("name = ? AND revoked_at IS NULL", name).Limit(2).Find(&list).Error; err != nil {
		return nil, fmt.Errorf("access: api key %q: %w", name, err)
	}
	switch len(list) {
	case 0:
		return nil, fmt.Errorf("access: api key %q: %w", name, kernel.ErrNotFound)
	case 1:
		return &list[0], nil
	}
	return nil, fmt.Errorf("access: api key %q: %w", name, kernel.ErrAmbiguous.With("Name", name))
}
