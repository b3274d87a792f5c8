package templates

import (
	"encoding/json"
	"herald/kernel"
	"strings"
	"time"
	"unicode/utf8"
)

// DigestRequest is a send's digest: notices to one person with the same key within the
// window are sent as one message, when the window closes or when max have gathered.
type DigestRequest struct {
	Key    string `json:"key"`
	Window string `json:"window"`
	Max    int    `json:"max"`
}

// The bounds of a digest.
const (
	MinDigestWindow = 10 * time.Second
	MaxDigestWindow = 24 * time.Hour
	MinDigestMax    = 2
	MaxDigestMax    = 500
	maxDigestKeyLen = 128
)

// DigestSpec is a checked digest.
type DigestSpec struct {
	Key    string
	Window time.Duration
	Max    int
}

// CheckDigest checks a digest; errors name digest.key, digest.window or digest.max.
func CheckDigest(dr DigestRequest) (*DigestSpec, error) {
	key := strings.TrimSpace(dr.Key)
	switch {
	case key == "":
		return nil, kernel.Invalid("digest.key", "digests.invalid.key_required")
	case utf8.RuneCountInString(key) > maxDigestKeyLen:
		return nil, kernel.Invalid("digest.key", "compose.check.max_chars", "Max", maxDigestKeyLen)
	}
	if err := kernel.CheckText("digest.key", key, false); err != nil {
		return nil, err
	}
	window, err := time.ParseDuration(strings.TrimSpace(dr.Window))
	if err != nil || window < MinDigestWindow || window > MaxDigestWindow {
		return nil, kernel.Invalid("digest.window", "digests.invalid.window")
	}
	if dr.Max < MinDigestMax || dr.Max > MaxDigestMax {
		return nil, kernel.Invalid("digest.max", "digests.invalid.max", "Min", MinDigestMax, "Max", MaxDigestMax)
	}
	return &DigestSpec{Key: key, Window: window, Max: dr.Max}, nil
}

// ParseTemplateDigest checks a template's default digest as stored or sent (JSON; ""
// for none) and returns it in one fixed form. Errors name digest.key, digest.window or
// digest.max.
func ParseTemplateDigest(dr *DigestRequest) (string, error) {
	if dr == nil {
		return "", nil
	}
	spec, err := CheckDigest(*dr)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(DigestRequest{Key: spec.Key, Window: strings.TrimSpace(dr.Window), Max: spec.Max})
	return string(b), err
}

// TemplateDigest reads a template's stored default digest (nil for none).
func TemplateDigest(t *Template) *DigestRequest {
	if t == nil || t.Digest == "" {
		return nil
	}
	var dr DigestRequest
	if json.Unmarshal([]byte(t.Digest), &dr) != nil {
		return nil
	}
	return &dr
}
