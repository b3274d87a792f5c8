package channels

import (
	"errors"
	"testing"
	"time"

	"herald/models"
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
			ce, ok := errors.AsType[*ConfigError](err)
			if !ok {
				t.Fatalf("ValidateConfig = %v, want a *ConfigError for %s", err, tc.wantKey)
			}
			if ce.Key != tc.wantKey {
				t.Errorf("key = %s, want %s (%v)", ce.Key, tc.wantKey, err)
			}
			if err.Error() != "config."+ce.Key+": "+ce.Message || ce.Message == "" {
				t.Errorf("message %q", err)
			}
		})
	}
	if err := ValidateConfig("pigeon", nil, false); err == nil {
		t.Error("unknown platform accepted")
	}
}

func TestSecretKeysAreConfigKeys(t *testing.T) {
	for platform, secrets := range SecretKeys {
		required, optional := ConfigKeys(platform)
		for _, k := range secrets {
			known := false
			for _, c := range append(required, optional...) {
				known = known || c == k
			}
			if !known {
				t.Errorf("%s: secret %s is not a config key", platform, k)
			}
		}
	}
}

func TestRegistryReusesSenders(t *testing.T) {
	reg := NewRegistry(nil)
	acct := &models.Account{ID: 1, Name: "ty-main", Platform: "tianyuan", UpdatedAt: time.Unix(100, 0),
		Config: map[string]string{"base_url": "https://im.example.com", "token": "t"}}
	first, err := reg.Sender(acct)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := reg.Sender(acct); again != first {
		t.Error("unchanged account got a new sender")
	}
	edited := *acct
	edited.UpdatedAt = time.Unix(200, 0)
	if next, _ := reg.Sender(&edited); next == first {
		t.Error("edited account kept its old sender")
	}

	broken := &models.Account{ID: 2, Name: "ty-broken", Platform: "tianyuan", Config: map[string]string{"base_url": "https://im.example.com"}}
	if _, err := reg.Sender(broken); err == nil || !errors.As(err, new(*ConfigError)) {
		t.Errorf("account without token: %v, want a ConfigError", err)
	}
	if _, err := reg.Sender(&models.Account{ID: 3, Name: "demo", Platform: "sandbox"}); err == nil {
		t.Error("sandbox without a simulator built a sender")
	}
	for _, p := range Platforms {
		if _, ok := configKeys[p]; !ok {
			t.Errorf("platform %s has no config keys", p)
		}
	}
}
