package dispatch

import (
	"herald/channels"
	"herald/models"
)

// CheckCallback checks a key's callback setting the way an account's URL is checked: http
// or https, a host, no credentials, and no private address unless the setting allows
// it (the address is checked again at every connection). The console, the API and the
// command line all check a callback through it. Errors name url or secret.
func CheckCallback(c models.CallbackSetting) error {
	if c.URL == "" {
		return nil
	}
	if err := models.CheckCallbackSetting(c); err != nil {
		return err
	}
	return channels.CheckURLField("url", c.URL, c.AllowPrivate)
}
