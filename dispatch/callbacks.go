package dispatch

import (
	"context"

	"herald/channels"
	"herald/models"
)

// CheckCallback checks a key's callback setting the way an account's URL is checked: http
// or https, a host, no credentials, and no private address unless the setting allows
// it (the address is checked again at every connection). The console, the API and the
// command line all check a callback through it, normalised in place (trimmed, a secret
// made when none was given), so that what is checked is what is stored and audited.
// Errors name url or secret.
func CheckCallback(c *models.CallbackSetting) error {
	if err := c.Normalise(); err != nil || c.URL == "" {
		return err
	}
	return models.SettingInvalid(channels.CheckURLField("url", c.URL, c.AllowPrivate))
}

// SetCallback checks and stores a key's callback (an empty URL removes it) with its
// audit entry, which names the URL and never the secret; set.Secret holds the secret in
// force afterwards, to show once. The console and the API set callbacks through it.
// models.ErrStateChanged: the key is revoked.
func (d *Dispatcher) SetCallback(ctx context.Context, by Actor, k *models.APIKey, set *models.CallbackSetting) error {
	if err := CheckCallback(set); err != nil {
		return err
	}
	return d.change(ctx, by, func(tx *models.Store, ch *Change) error {
		if err := tx.SaveCallback(ctx, k.ID, set); err != nil {
			return err
		}
		p := keyParams(k)
		if set.URL == "" {
			p["old_url"] = k.CallbackURL
			ch.Audit("apikey.callback.remove", "api_key", k.Name, p)
		} else {
			p["url"], p["old_url"] = set.URL, k.CallbackURL
			if set.AllowPrivate {
				p["private_network"] = "allowed"
			}
			ch.Audit("apikey.callback.set", "api_key", k.Name, p)
		}
		ch.After(d.Store.ForgetAPIKeys)
		return nil
	})
}
