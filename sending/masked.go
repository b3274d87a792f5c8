package sending

import "herald/audit"

// MaskedConfig is an account's settings as the console and the API show them: every
// URL redacted as the audit log redacts it (audit.Redact), so that a robot's or webhook's
// access_token in a query string is never shown again once stored. Secrets are masked
// apart, by their callers. Sending a masked value back unchanged keeps the stored one
// (KeepMasked).
func MaskedConfig(cfg map[string]string) map[string]string {
	out := make(map[string]string, len(cfg))
	for k, v := range cfg {
		out[k] = audit.Redact(v)
	}
	return out
}

// KeepMasked puts back into cfg each stored setting that cfg holds as it was shown
// (MaskedConfig), so that an edit leaving a masked URL as it was keeps the URL stored.
func KeepMasked(cfg, stored map[string]string) {
	for k, v := range cfg {
		if old, ok := stored[k]; ok && v != old && v == audit.Redact(old) {
			cfg[k] = old
		}
	}
}
