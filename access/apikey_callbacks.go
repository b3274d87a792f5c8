package access

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"gorm.io/gorm"

	"herald/audit"
	"herald/kernel"
)

// CallbackDetail is the callback part of an audit entry's detail: the URL, never the
// secret ("" for a key without a callback).
func (k *APIKey) CallbackDetail() string {
	if k.CallbackURL == "" {
		return ""
	}
	d := " callback " + k.CallbackURL
	if k.CallbackAllowPrivate {
		d += " (private network allowed)"
	}
	return d
}

// CallbackTarget is where and how a key's events are delivered.
type CallbackTarget struct {
	KeyID        int64
	KeyName      string
	URL          string
	Secret       string
	AllowPrivate bool
}

// CallbackSetting is what an operator sets on a key: a URL (empty to stop callbacks),
// the signing secret ("" to have Herald make one) and whether the URL may be on a
// private network.
type CallbackSetting struct {
	URL          string
	Secret       string
	AllowPrivate bool
}

// sealedForKey is the associated data binding a sealed callback secret to its key.
func sealedForKey(keyID int64) []byte {
	return []byte("api key " + strconv.FormatInt(keyID, 10) + " callback_secret")
}

// NewCallbackSecret returns a fresh signing secret.
func NewCallbackSecret() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return "hcs_" + hex.EncodeToString(b)
}

// maxCallbackSecret bounds a secret a caller chooses.
const maxCallbackSecret = 200

// Normalise trims the setting, checks what models can of it (lengths: the URL's address
// is CheckCallback's) and fills in a secret when the URL is set and none was
// given. Normalising twice changes nothing more.
func (c *CallbackSetting) Normalise() error {
	c.URL = strings.TrimSpace(c.URL)
	if len(c.URL) > 2048 {
		return kernel.Invalid("url", "callbacks.url_long")
	}
	if c.URL == "" {
		c.Secret, c.AllowPrivate = "", false
		return nil
	}
	c.Secret = strings.TrimSpace(c.Secret)
	if c.Secret == "" {
		c.Secret = NewCallbackSecret()
	}
	if len(c.Secret) < 16 || len(c.Secret) > maxCallbackSecret {
		return kernel.Invalid("secret", "callbacks.secret_length", "Min", 16, "Max", maxCallbackSecret)
	}
	return nil
}

// setCallback writes a key's callback in tx.
func (s *Credentials) setCallback(tx *gorm.DB, keyID int64, c *CallbackSetting) error {
	if err := c.Normalise(); err != nil {
		return err
	}
	upd := map[string]any{"callback_url": c.URL, "callback_allow_private": c.AllowPrivate, "callback_secret_enc": nil}
	if c.URL != "" {
		upd["callback_secret_enc"] = s.k.Sealer().Seal([]byte(c.Secret), sealedForKey(keyID))
	}
	res := tx.Model(&APIKey{}).Where("id = ? AND revoked_at IS NULL", keyID).Updates(upd)
	if res.Error != nil {
		return fmt.Errorf("access: set callback of api key %d: %w", keyID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("access: set callback of api key %d: %w", keyID, kernel.ErrStateChanged)
	}
	return nil
}

// SetCallback sets (or, with an empty URL, removes) a live key's callback, audited in
// the same transaction. The setting's Secret holds the secret in force afterwards, to
// show once. Events already waiting go to the new URL.
func (s *Credentials) SetCallback(ctx context.Context, keyID int64, c *CallbackSetting, entry audit.Entry) error {
	return s.InTx(ctx, func(tx *Credentials) error {
		if err := tx.SaveCallback(ctx, keyID, c); err != nil {
			return err
		}
		return tx.AuditLog().Write(ctx, entry)
	})
}

// SaveCallback sets (or, with an empty URL, removes) a live key's callback:
// ErrStateChanged when the key is revoked. The setting's Secret holds the secret in force
// afterwards, to show once. Events already waiting go to the new URL. This process's key
// caches forget the key's old setting.
func (s *Credentials) SaveCallback(ctx context.Context, keyID int64, c *CallbackSetting) error {
	err := s.setCallback(s.k.Writer(ctx), keyID, c)
	s.forgetAPIKeys()
	return err
}

// ResealCallbackSecrets seals again with the current key the callback secrets only the
// previous key opens (see resealAccounts); a compare-and-set on the value read.
func (s *Credentials) ResealCallbackSecrets(ctx context.Context) error {
	if !s.k.Sealer().HasPrevious() {
		return nil
	}
	var keys []APIKey
	if err := s.k.Writer(ctx).Select("id", "name", "callback_secret_enc").Where("callback_secret_enc IS NOT NULL").Find(&keys).Error; err != nil {
		return fmt.Errorf("access: list callback secrets to re-seal: %w", err)
	}
	for _, k := range keys {
		plain, stale, err := s.k.Sealer().OpenAny(*k.CallbackSecretEnc, sealedForKey(k.ID))
		if err != nil || !stale {
			continue
		}
		err = s.k.Writer(ctx).Model(&APIKey{}).Where("id = ? AND callback_secret_enc = ?", k.ID, *k.CallbackSecretEnc).
			UpdateColumn("callback_secret_enc", s.k.Sealer().Seal(plain, sealedForKey(k.ID))).Error
		if err != nil {
			return fmt.Errorf("access: re-seal callback secret of api key %s: %w", k.Name, err)
		}
	}
	return nil
}

// CallbackTargetOf returns where a key's events go; ErrNotFound when the key has no
// callback (or is gone).
func (s *Credentials) CallbackTargetOf(ctx context.Context, keyID int64) (*CallbackTarget, error) {
	var k APIKey
	if err := s.k.Reader(ctx).First(&k, keyID).Error; err != nil {
		return nil, fmt.Errorf("access: api key %d: %w", keyID, kernel.NotFound(err))
	}
	if k.CallbackURL == "" || k.CallbackSecretEnc == nil {
		return nil, fmt.Errorf("access: callback of api key %d: %w", keyID, kernel.ErrNotFound)
	}
	secret, err := s.k.Sealer().Open(*k.CallbackSecretEnc, sealedForKey(keyID))
	if err != nil {
		return nil, fmt.Errorf("api key %s: %w", k.Name, err)
	}
	return &CallbackTarget{KeyID: k.ID, KeyName: k.Name, URL: k.CallbackURL, Secret: string(secret), AllowPrivate: k.CallbackAllowPrivate}, nil
}
