package channels

import (
	"fmt"
	"net"
	"net/mail"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ConfigError is a problem with one key of an account's platform config.
type ConfigError struct {
	Key     string
	Message string
}

// Error reads "config.<key>: <message>", the field path the API reports.
func (e *ConfigError) Error() string { return "config." + e.Key + ": " + e.Message }

// configKeys lists each platform's config keys and which are required.
var configKeys = map[string]struct{ required, optional []string }{
	"tianyuan": {required: []string{"base_url", "token"}, optional: []string{"path"}},
	"zhaohu":   {required: []string{"base_url", "token"}, optional: []string{"path"}},
	"wecom":    {required: []string{"corp_id", "agent_id", "secret"}, optional: []string{"base_url"}},
	"email":    {required: []string{"host", "from"}, optional: []string{"port", "username", "password", "tls"}},
	"webhook":  {required: []string{"url"}, optional: []string{"secret"}},
	"sandbox":  {},
}

// SecretKeys are the write-only config keys of each platform: stored encrypted, never
// shown again.
var SecretKeys = map[string][]string{
	"tianyuan": {"token"},
	"zhaohu":   {"token"},
	"wecom":    {"secret"},
	"email":    {"password"},
	"webhook":  {"secret"},
}

// ConfigKeys returns a platform's config keys, required ones first.
func ConfigKeys(platform string) (required, optional []string) {
	k := configKeys[platform]
	return k.required, k.optional
}

// ValidateConfig checks an account's platform config as it is saved: no unknown keys,
// required ones present, URLs and hosts the account may reach (see CheckURL), numbers
// where numbers belong. A problem with one key is a *ConfigError naming it.
func ValidateConfig(platform string, cfg map[string]string, allowPrivate bool) error {
	keys, ok := configKeys[platform]
	if !ok {
		return fmt.Errorf("channels: unknown platform %q", platform)
	}
	names := make([]string, 0, len(cfg))
	for k := range cfg {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !slices.Contains(keys.required, k) && !slices.Contains(keys.optional, k) {
			return &ConfigError{Key: k, Message: fmt.Sprintf("is not a %s setting", platform)}
		}
	}
	for _, k := range keys.required {
		if strings.TrimSpace(cfg[k]) == "" {
			return &ConfigError{Key: k, Message: "is required"}
		}
	}
	for _, k := range names {
		v := cfg[k]
		if v == "" {
			continue // optional and empty: the default applies
		}
		if msg := checkConfigValue(k, v, allowPrivate); msg != "" {
			return &ConfigError{Key: k, Message: msg}
		}
	}
	if platform == "email" && cfg["password"] != "" && strings.TrimSpace(cfg["username"]) == "" {
		return &ConfigError{Key: "username", Message: "is required when a password is set"}
	}
	return nil
}

// checkConfigValue checks one non-empty value by its key, which means the same on
// every platform that has it; it returns "" when the value is fine.
func checkConfigValue(key, v string, allowPrivate bool) string {
	switch key {
	case "base_url", "url":
		if err := CheckURL(v, allowPrivate); err != nil {
			return err.Error()
		}
	case "path":
		if !strings.HasPrefix(v, "/") {
			return "must start with /"
		}
	case "agent_id":
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n <= 0 {
			return "must be a positive whole number"
		}
	case "port":
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 65535 {
			return "must be a whole number from 1 to 65535"
		}
	case "host":
		h := strings.TrimSpace(v)
		if strings.ContainsAny(h, "/:@ ") && net.ParseIP(h) == nil {
			return "must be a host name or IP address, without scheme or port"
		}
		if err := checkHost(h, allowPrivate); err != nil {
			return err.Error()
		}
	case "from":
		if _, err := mail.ParseAddress(v); err != nil {
			return "must be an email address, e.g. Herald <herald@example.com>"
		}
	case "tls":
		if v != tlsStartTLS && v != tlsNone && v != tlsImplicit {
			return "must be starttls, implicit or none"
		}
	}
	return ""
}
