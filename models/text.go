package models

import (
	"fmt"
	"strings"
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
	return &FieldError{Field: field, Message: fmt.Sprintf("contains the control character U+%04X at byte %d; remove it", s[i], i)}
}
