package channels

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/i18n"
)

func TestValidateConfig(t *testing.T) {
	for _, tc := range []struct {
		name     string
		platform string
		cfg      map[string]string
		private  bool
		wantKey  string // "" means valid
	}{
		{"tianyuan ok", "tianyuan", map[string]string{"base_url": "https://im.example.com", "token": "t"}, false, ""},
		{"zhaohu with path", "zhaohu", map[string]string{"base_url": "https://zh.example.com/api", "path": "/v2/messages", "token": "t"}, false, ""},
		{"missing token", "tianyuan", map[string]string{"base_url": "https://im.example.com"}, false, "token"},
		{"blank token", "tianyuan", map[string]string{"base_url": "https://im.example.com", "token": "  "}, false, "token"},
		{"missing base_url", "zhaohu", map[string]string{"token": "t"}, false, "base_url"},
		{"unknown key", "tianyuan", map[string]string{"base_url": "https://im.example.com", "token": "t", "colour": "red"}, false, "colour"},
		{"ftp base_url", "tianyuan", map[string]string{"base_url": "ftp://im.example.com", "token": "t"}, false, "base_url"},
		{"private base_url", "tianyuan", map[string]string{"base_url": "http://10.0.0.1", "token": "t"}, false, "base_url"},
		{"private base_url allowed", "tianyuan", map[string]string{"base_url": "http://10.0.0.1", "token": "t"}, true, ""},
		{"metadata never", "tianyuan", map[string]string{"base_url": "http://169.254.169.254", "token": "t"}, true, "base_url"},
		{"path without slash", "tianyuan", map[string]string{"base_url": "https://im.example.com", "path": "messages", "token": "t"}, false, "path"},
		{"wecom ok", "wecom", map[string]string{"corp_id": "ww1", "secret": "s", "agent_id": "1000002"}, false, ""},
		{"wecom agent_id", "wecom", map[string]string{"corp_id": "ww1", "secret": "s", "agent_id": "app"}, false, "agent_id"},
		{"wecom missing secret", "wecom", map[string]string{"corp_id": "ww1", "agent_id": "1"}, false, "secret"},
		{"email ok", "email", map[string]string{"host": "smtp.example.com", "port": "465", "tls": "implicit", "from": "h@example.com", "username": "u", "password": "p"}, false, ""},
		{"email port", "email", map[string]string{"host": "smtp.example.com", "port": "smtp", "from": "h@example.com"}, false, "port"},
		{"email port range", "email", map[string]string{"host": "smtp.example.com", "port": "70000", "from": "h@example.com"}, false, "port"},
		{"email from", "email", map[string]string{"host": "smtp.example.com", "from": "not an address"}, false, "from"},
		{"email missing from", "email", map[string]string{"host": "smtp.example.com"}, false, "from"},
		{"email tls", "email", map[string]string{"host": "smtp.example.com", "from": "h@example.com", "tls": "ssl"}, false, "tls"},
		{"email host with scheme", "email", map[string]string{"host": "smtp://smtp.example.com", "from": "h@example.com"}, false, "host"},
		{"email private host", "email", map[string]string{"host": "192.168.1.10", "from": "h@example.com"}, false, "host"},
		{"email password without username", "email", map[string]string{"host": "smtp.example.com", "from": "h@example.com", "password": "p"}, false, "username"},
		{"webhook ok", "webhook", map[string]string{"url": "https://hooks.example.com/herald", "secret": "s"}, false, ""},
		{"webhook missing url", "webhook", map[string]string{"secret": "s"}, false, "url"},
		{"sandbox ok", "sandbox", map[string]string{}, false, ""},
		{"sandbox unknown key", "sandbox", map[string]string{"token": "t"}, false, "token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateConfig(tc.platform, tc.cfg, tc.private)
			if tc.wantKey == "" {
				if err != nil {
					t.Errorf("ValidateConfig = %v, want valid", err)
				}
				return
			}
			se, ok := errors.AsType[*SettingError](err)
			if !ok {
				t.Fatalf("ValidateConfig = %v, want a *SettingError for config.%s", err, tc.wantKey)
			}
			if se.Field != "config."+tc.wantKey {
				t.Errorf("field = %s, want config.%s (%v)", se.Field, tc.wantKey, err)
			}
			en := se.Problem.In(i18n.English)
			if err.Error() != se.Field+": "+en || en == "" || se.Problem.Key == "" || en == se.Problem.Key {
				t.Errorf("message %q, key %q: want an English message from a catalog key", err, se.Problem.Key)
			}
			if zh := se.Problem.In(i18n.Chinese); zh == en || zh == "" {
				t.Errorf("message %q has no Chinese translation (%q)", en, zh)
			}
			noMissingTranslations(t)
		})
	}
	if err := ValidateConfig("pigeon", nil, false); err == nil {
		t.Error("unknown platform accepted")
	}
}

// Destination settings are compared as a send would use them: an empty value is its
// default, and settings that do not say where the account connects do not count.
func TestDestinationChanges(t *testing.T) {
	for _, tc := range []struct {
		name     string
		platform string
		old, new map[string]string
		want     []Change
	}{
		{"same", "tianyuan", map[string]string{"base_url": "https://a.example.com", "token": "t"},
			map[string]string{"base_url": "https://a.example.com"}, nil},
		{"base_url", "tianyuan", map[string]string{"base_url": "https://a.example.com"},
			map[string]string{"base_url": "https://b.example.com"}, []Change{{"base_url", "https://a.example.com", "https://b.example.com"}}},
		{"path spelled out as its default", "zhaohu", map[string]string{"base_url": "https://a.example.com"},
			map[string]string{"base_url": "https://a.example.com", "path": "/messages"}, nil},
		{"path", "zhaohu", map[string]string{"base_url": "https://a.example.com"},
			map[string]string{"base_url": "https://a.example.com", "path": "/other"}, []Change{{"path", "/messages", "/other"}}},
		{"wecom corp_id", "wecom", map[string]string{"corp_id": "ww1", "agent_id": "1"},
			map[string]string{"corp_id": "ww2", "agent_id": "2"}, []Change{{"corp_id", "ww1", "ww2"}}},
		{"email tls, port and host", "email", map[string]string{"host": "smtp.a.example.com", "from": "a@example.com", "username": "u"},
			map[string]string{"host": "smtp.b.example.com", "port": "25", "tls": "none", "from": "b@example.com", "username": "v"},
			[]Change{{"host", "smtp.a.example.com", "smtp.b.example.com"}, {"port", "", "25"}, {"tls", "starttls", "none"}}},
		{"email tls spelled out as its default", "email", map[string]string{"host": "smtp.example.com"},
			map[string]string{"host": "smtp.example.com", "tls": "starttls"}, nil},
		{"webhook url", "webhook", map[string]string{"url": "https://hooks.example.com/a"},
			map[string]string{"url": "https://hooks.example.com/b"}, []Change{{"url", "https://hooks.example.com/a", "https://hooks.example.com/b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, DestinationChanges(tc.platform, tc.old, tc.new)); diff != "" {
				t.Errorf("DestinationChanges (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRegistryReusesSenders(t *testing.T) {
	reg := NewRegistry(nil)
	acct := Account{ID: 1, Name: "ty-main", Platform: "tianyuan", UpdatedAt: time.Unix(100, 0),
		Config: map[string]string{"base_url": "https://im.example.com", "token": "t"}}
	first, err := reg.Sender(acct)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := reg.Sender(acct); again != first {
		t.Error("unchanged account got a new sender")
	}
	edited := acct
	edited.UpdatedAt = time.Unix(200, 0)
	if next, _ := reg.Sender(edited); next == first {
		t.Error("edited account kept its old sender")
	}

	broken := Account{ID: 2, Name: "ty-broken", Platform: "tianyuan", Config: map[string]string{"base_url": "https://im.example.com"}}
	if _, err := reg.Sender(broken); err == nil || !errors.As(err, new(*SettingError)) {
		t.Errorf("account without token: %v, want a *SettingError", err)
	}
	if _, err := reg.Sender(Account{ID: 3, Name: "demo", Platform: "sandbox"}); err == nil {
		t.Error("sandbox without a simulator built a sender")
	}
	for _, p := range Platforms {
		if _, ok := platforms[p]; !ok {
			t.Errorf("platform %s is not in the platform table", p)
		}
	}
}
