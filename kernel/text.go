package kernel

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// CheckText refuses text holding NUL or another C0 control character: they corrupt logs,
// CSV exports and some platforms' payloads, and no person types them. Tab, newline and
// carriage return (browsers send CRLF) are allowed where the text may span lines;
// single-line fields allow only tab.
func CheckText(field, s string, multiline bool) error {
	i := strings.IndexFunc(s, func(r rune) bool {
		if r >= 0x20 || r == '\t' {
			return false
		}
		return !multiline || (r != '\n' && r != '\r')
	})
	if i < 0 {
		return nil
	}
	// Where a person can find it: the character's position, not its byte offset, which
	// differs as soon as the text holds Chinese.
	return Invalid(field, "components.control_character", "Code", fmt.Sprintf("U+%04X", s[i]), "Position", utf8.RuneCountInString(s[:i])+1)
}

// Truncate cuts s to at most n bytes, on a rune boundary so that a column never holds
// invalid UTF-8.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// TruncateRunes cuts s to at most n characters.
func TruncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// MaxReasonLen bounds a rejection's reason, in characters.
const MaxReasonLen = 200

// CheckReason checks a rejection's reason (of a batch or of a recall request) and
// returns it trimmed: one is required, of at most MaxReasonLen characters, as a
// *FieldError naming reason.
func CheckReason(reason string) (string, error) {
	reason = strings.TrimSpace(reason)
	if err := CheckText("reason", reason, false); err != nil {
		return "", err
	}
	if reason == "" || utf8.RuneCountInString(reason) > MaxReasonLen {
		return "", Invalid("reason", "approvals.error.reason", "Max", MaxReasonLen)
	}
	return reason, nil
}
