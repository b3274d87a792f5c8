package access

import (
	"context"
	"strconv"
	"time"

	"herald/audit"
)

// APIKeyInput is a new API key as an admin asks for it, in the console or on the
// command line: its name, comma-separated scopes, and optionally a recipient cap and
// the last day it works (as typed: a number, a date YYYY-MM-DD in HERALD_TIMEZONE), and a
// status callback.
type APIKeyInput struct {
	Name          string
	Scopes        string
	MaxRecipients string
	Expires       string
	// Callback nil: none. Its Secret holds the secret in force afterwards, to show once.
	Callback *CallbackSetting
}

// CreateAPIKey makes a key, created by the person behind by (the command line's name
// when there is none), and returns it with its secret, which is shown once and never
// stored. The key, its callback and its audit entry are written together. Bad input is
// a *kernel.FieldError naming name, scopes, max_recipients_per_request, expires, url or
// secret, and writes nothing.
func (d *Warden) CreateAPIKey(ctx context.Context, by audit.Actor, in APIKeyInput) (*APIKey, string, error) {
	limits, err := ParseKeyLimits(in.MaxRecipients, in.Expires, d.loc, d.now())
	if err != nil {
		return nil, "", err
	}
	if in.Callback != nil {
		if err := CheckCallback(in.Callback); err != nil {
			return nil, "", err
		}
	}
	createdBy := by.Person
	if createdBy == "" {
		createdBy = by.Name
	}
	var k *APIKey
	var secret string
	err = d.change(ctx, by, func(tx *Credentials, ch *audit.Change) error {
		var err error
		if k, secret, err = tx.CreateCallbackAPIKey(ctx, in.Name, in.Scopes, createdBy, limits, in.Callback); err != nil {
			return err
		}
		p := KeyParams(k)
		p["scopes"] = k.Scopes
		if k.MaxRecipientsPerRequest > 0 {
			p["max_recipients"] = strconv.Itoa(k.MaxRecipientsPerRequest)
		}
		if k.ExpiresAt != nil {
			p["expires"] = k.ExpiresAt.UTC().Format(time.RFC3339)
		}
		ch.Audit("apikey.create", "api_key", k.Name, p)
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return k, secret, nil
}

// RevokeAPIKey revokes a key: systems using it are refused from then on (other
// processes within APIKeyCacheTTL). Revoking twice is kernel.ErrStateChanged.
func (d *Warden) RevokeAPIKey(ctx context.Context, by audit.Actor, k *APIKey) error {
	return d.change(ctx, by, func(tx *Credentials, ch *audit.Change) error {
		if err := tx.RevokeAPIKey(ctx, k.ID); err != nil {
			return err
		}
		ch.Audit("apikey.revoke", "api_key", k.Name, KeyParams(k))
		ch.After(d.store.ForgetAPIKeys)
		return nil
	})
}

// KeyParams names a key for its audit sentence: its name and the public prefix of its
// secret.
func KeyParams(k *APIKey) audit.Params {
	return audit.Params{"name": k.Name, "prefix": "hk_" + k.Prefix}
}
