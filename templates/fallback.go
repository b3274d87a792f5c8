package templates

import (
	"slices"
	"strings"

	"herald/channels"
	"herald/kernel"
)

// A template's fallback chain: the platforms a message of it falls back to, in order,
// when its first cannot reach the person. Stored comma-separated.

// MaxFallback is how many platforms a fallback chain may name after the first.
const MaxFallback = 3

// Chain reads a stored fallback chain.
func Chain(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// JoinChain stores a fallback chain.
func JoinChain(platforms []string) string { return strings.Join(platforms, ",") }

// CheckChain checks a fallback chain against the platform a message is first sent on
// ("" for a template's chain, which has none yet): known platforms, none twice, not
// the first. Errors name fallback.
func CheckChain(chain []string, platform string) error {
	if len(chain) > MaxFallback {
		return kernel.Invalid("fallback", "fallback.too_long", "Max", MaxFallback)
	}
	for i, p := range chain {
		switch {
		case !slices.Contains(channels.Platforms, p):
			return kernel.Invalid("fallback", "fallback.unknown", "Platform", p, "Platforms", strings.Join(channels.Platforms, ", "))
		case p == platform:
			return kernel.Invalid("fallback", "fallback.first", "Platform", p)
		case slices.Contains(chain[:i], p):
			return kernel.Invalid("fallback", "fallback.twice", "Platform", p)
		}
	}
	return nil
}

// ParseFallback reads a fallback chain as a person types it (platform names separated
// by commas or spaces) and checks each name; the console's template form and the API's
// template share it. Errors name fallback.
func ParseFallback(s string) (string, error) {
	chain := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
	if err := CheckChain(chain, ""); err != nil {
		return "", err
	}
	return JoinChain(chain), nil
}
