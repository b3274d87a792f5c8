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

// Field describes one config key of a platform.
type Field struct {
	Key      string
	Required bool
	// Secret keys are write-only: sealed at rest, masked on reads, never shown again.
	Secret bool
	// Destination keys say where the account connects, and so where its secrets go. A
	// stored secret is kept across an edit only while no destination key changes (see
	// DestinationChanges): a secret is never handed to an address it was not given for.
	Destination bool
	// Default is what an empty value means, when it means a value.
	Default string
	// Options are the only values allowed, when the set is fixed.
	Options []string
	// Warnings say, by option, what choosing it gives up.
	Warnings map[string]string
}

// Value is the key's value in cfg, its default when empty.
func (f Field) Value(cfg map[string]string) string {
	if v := strings.TrimSpace(cfg[f.Key]); v != "" {
		return v
	}
	return f.Default
}

// platformFields says what each platform's config is, key by key, in the order forms
// show them (required keys first). It is the one table of platform settings: validation,
// secrets, destinations and the account form all read it.
var platformFields = map[string][]Field{
	"tianyuan": genericFields,
	"zhaohu":   genericFields,
	"wecom": {
		{Key: "corp_id", Required: true, Destination: true},
		{Key: "agent_id", Required: true},
		{Key: "secret", Required: true, Secret: true},
		{Key: "base_url", Destination: true, Default: DefaultWeComBaseURL},
	},
	"email": {
		{Key: "host", Required: true, Destination: true},
		{Key: "from", Required: true},
		{Key: "port", Destination: true},
		{Key: "username"},
		{Key: "password", Secret: true},
		{Key: "tls", Destination: true, Default: tlsStartTLS, Options: []string{tlsStartTLS, tlsImplicit, tlsNone},
			Warnings: map[string]string{tlsNone: "tls is none: mail travels unencrypted and can be read or changed on the way; use it only for a relay on a network you trust"}},
	},
	"webhook": {
		{Key: "url", Required: true, Destination: true},
		{Key: "secret", Secret: true},
	},
	"sandbox": {},
}

// genericFields are the settings of the generic JSON contract (Tianyuan and Zhaohu).
var genericFields = []Field{
	{Key: "base_url", Required: true, Destination: true},
	{Key: "token", Required: true, Secret: true},
	{Key: "path", Destination: true, Default: defaultGenericPath},
}

// Fields returns a platform's config keys in form order; nil for an unknown platform.
func Fields(platform string) []Field { return platformFields[platform] }

// field returns the description of a platform's key.
func field(platform, key string) (Field, bool) {
	for _, f := range platformFields[platform] {
		if f.Key == key {
			return f, true
		}
	}
	return Field{}, false
}

// SecretKeys are the write-only config keys of each platform: stored encrypted, never
// shown again.
var SecretKeys = func() map[string][]string {
	out := map[string][]string{}
	for platform, fields := range platformFields {
		for _, f := range fields {
			if f.Secret {
				out[platform] = append(out[platform], f.Key)
			}
		}
	}
	return out
}()

// Change is one setting that differs between two configs.
type Change struct{ Key, Old, New string }

// DestinationChanges lists the destination keys of a platform whose value differs
// between two configs, an empty value read as its default.
func DestinationChanges(platform string, old, new map[string]string) []Change {
	var out []Change
	for _, f := range platformFields[platform] {
		if o, n := f.Value(old), f.Value(new); f.Destination && o != n {
			out = append(out, Change{Key: f.Key, Old: o, New: n})
		}
	}
	return out
}

// ConfigWarnings says what an account's config gives up, such as encryption.
func ConfigWarnings(platform string, cfg map[string]string) []string {
	var out []string
	for _, f := range platformFields[platform] {
		if w := f.Warnings[f.Value(cfg)]; w != "" {
			out = append(out, w)
		}
	}
	return out
}

// ValidateConfig checks an account's platform config as it is saved: no unknown keys,
// required ones present, URLs and hosts the account may reach (see CheckURL), numbers
// where numbers belong. A problem with one key is a *ConfigError naming it.
func ValidateConfig(platform string, cfg map[string]string, allowPrivate bool) error {
	fields, ok := platformFields[platform]
	if !ok {
		return fmt.Errorf("channels: unknown platform %q", platform)
	}
	names := make([]string, 0, len(cfg))
	for k := range cfg {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, known := field(platform, k); !known {
			return &ConfigError{Key: k, Message: fmt.Sprintf("is not a %s setting", platform)}
		}
	}
	for _, f := range fields {
		if f.Required && strings.TrimSpace(cfg[f.Key]) == "" {
			return &ConfigError{Key: f.Key, Message: "is required"}
		}
	}
	for _, k := range names {
		v := cfg[k]
		if v == "" {
			continue // optional and empty: the default applies
		}
		if f, _ := field(platform, k); len(f.Options) > 0 && !slices.Contains(f.Options, v) {
			return &ConfigError{Key: k, Message: "must be " + oneOf(f.Options)}
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

// oneOf lists choices as "a, b or c".
func oneOf(choices []string) string {
	if len(choices) < 2 {
		return strings.Join(choices, "")
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
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
	}
	return ""
}
