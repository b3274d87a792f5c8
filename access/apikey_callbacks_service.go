package access

import (
	"context"
	"errors"
	"strings"

	"herald/audit"
	"herald/channels"
	"herald/kernel"
)

// CheckCallback checks a key's callback setting the way an account's URL is checked: http
// or https, a host, no credentials, and no private address unless the setting allows
// it (the address is checked again at every connection). The console, the API and the
// command line all check a callback through it, normalised in place (trimmed, a secret
// made when none was given), so that what is checked is what is stored and audited.
// Errors name url or secret.
func CheckCallback(c *CallbackSetting) error {
	if err := c.Normalise(); err != nil || c.URL == "" {
		return err
	}
	return callbackAddress(kernel.SettingInvalid(channels.CheckURLField("url", c.URL, c.AllowPrivate)))
}

// callbackAddress makes the address guard's refusal of a private or loopback address
// name the setting that allows it here, the key's own checkbox (allow_private_network of
// the callback), where the guard names an account's.
func callbackAddress(err error) error {
	fe, ok := errors.AsType[*kernel.FieldError](err)
	if !ok {
		return err
	}
	switch fe.Key {
	case "channels.address.private", "channels.address.loopback":
		return kernel.Invalid(fe.Field, "callbacks.address_"+strings.TrimPrefix(fe.Key, "channels.address."), fe.Args...)
	}
	return err
}

// SetCallback checks and stores a key's callback (an empty URL removes it) with its
// audit entry, which names the URL and never the secret; set.Secret holds the secret in
// force afterwards, to show once. The console and the API set callbacks through it.
// kernel.ErrStateChanged: the key is revoked.
func (d *Warden) SetCallback(ctx context.Context, by audit.Actor, k *APIKey, set *CallbackSetting) error {
	if err := CheckCallback(set); err != nil {
		return err
	}
	return d.change(ctx, by, func(tx *Credentials, ch *audit.Change) error {
		if err := tx.SaveCallback(ctx, k.ID, set); err != nil {
			return err
		}
		p := KeyParams(k)
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
		ch.After(d.store.ForgetAPIKeys)
		return nil
	})
}
