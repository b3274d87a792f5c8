package dispatch

import (
	"errors"
	"strings"
	"testing"

	"herald/access"
	"herald/kernel"
)

// A callback is checked as it will be stored: trimmed, with a secret made when none was
// given; blank means no callback, and a private address needs the setting's opt-in.
func TestCheckCallbackNormalises(t *testing.T) {
	t.Parallel()
	c := access.CallbackSetting{URL: "  https://8.8.8.8/herald/events \n"}
	if err := access.CheckCallback(&c); err != nil {
		t.Fatal(err)
	}
	if c.URL != "https://8.8.8.8/herald/events" || !strings.HasPrefix(c.Secret, "hcs_") {
		t.Errorf("normalised to %+v, want the trimmed URL and a made secret", c)
	}
	secret := c.Secret
	if err := access.CheckCallback(&c); err != nil || c.Secret != secret {
		t.Errorf("a second check changed the setting: %v, %+v", err, c)
	}

	blank := access.CallbackSetting{URL: "   ", Secret: "whatever-it-was-long", AllowPrivate: true}
	if err := access.CheckCallback(&blank); err != nil || blank != (access.CallbackSetting{}) {
		t.Errorf("a blank URL: %v, %+v; want no callback and nothing kept", err, blank)
	}

	private := access.CallbackSetting{URL: "http://10.1.2.3/hook"}
	var fe *kernel.FieldError
	if err := access.CheckCallback(&private); !errors.As(err, &fe) || fe.Field != "url" {
		t.Errorf("a private address without the opt-in: %v, want a failure of url", err)
	}
	private.AllowPrivate = true
	if err := access.CheckCallback(&private); err != nil {
		t.Errorf("a private address with the opt-in: %v", err)
	}

	short := access.CallbackSetting{URL: "https://8.8.8.8/x", Secret: "short"}
	if err := access.CheckCallback(&short); !errors.As(err, &fe) || fe.Field != "secret" {
		t.Errorf("a short secret: %v, want a failure of secret", err)
	}
}
