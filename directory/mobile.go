package directory

import (
	"regexp"
	"strings"
)

// MaxMobile is the longest mobile number a person may write, spaces and dashes
// included; stored, a number has at most 16 characters (+ and 15 digits).
const MaxMobile = 20

var (
	// mainlandMobile is a mainland China mobile number: eleven digits starting 13 to 19.
	mainlandMobile = regexp.MustCompile(`^1[3-9][0-9]{9}$`)
	// e164 is an international number: + and 8 to 15 digits, the country code first.
	e164 = regexp.MustCompile(`^\+[1-9][0-9]{7,14}$`)
)

// NormalizeMobile reads a mobile number as a person writes it: a mainland number, alone
// or after +86 or 86, comes back as its eleven digits; an international number in E.164
// form as + and its digits. Spaces and dashes are left out. ok is false for anything
// else; "" is no number, and fine.
func NormalizeMobile(s string) (mobile string, ok bool) {
	s = strings.Map(func(c rune) rune {
		if c == ' ' || c == '-' {
			return -1
		}
		return c
	}, s)
	if s == "" {
		return "", true
	}
	for _, prefix := range []string{"+86", "86"} {
		if rest, cut := strings.CutPrefix(s, prefix); cut && mainlandMobile.MatchString(rest) {
			return rest, true
		}
	}
	if mainlandMobile.MatchString(s) || e164.MatchString(s) {
		return s, true
	}
	return "", false
}

// MaskMobile hides the middle of a stored mobile number, for people who may see that
// someone has one but not call it (viewers): a mainland number keeps its first three and
// last four digits (138****1234), an international one its country code and last four
// digits (+852****5678). The mask has four stars whatever it hides, so the length does
// not show either.
func MaskMobile(m string) string {
	const stars = "****"
	switch {
	case m == "":
		return ""
	case mainlandMobile.MatchString(m):
		return m[:3] + stars + m[7:]
	case e164.MatchString(m):
		return "+" + m[1:1+countryCodeLen(m[1:])] + stars + m[len(m)-4:]
	case len(m) > 4:
		// Not a number validation lets through (written to the database by other
		// means): its last four characters at most.
		return stars + m[len(m)-4:]
	}
	return stars
}

// countryCodeLen is how many of the digits of an international number (without its +)
// are its country code. Country codes are one to three digits and none is the start of
// another (ITU-T E.164): these are the one- and two-digit codes, every other is three.
func countryCodeLen(digits string) int {
	switch {
	case digits[0] == '1' || digits[0] == '7':
		return 1
	case strings.Contains(twoDigitCodes, " "+digits[:2]+" "):
		return 2
	}
	return 3
}

// twoDigitCodes are the two-digit country codes, each between spaces.
const twoDigitCodes = " 20 27 30 31 32 33 34 36 39 40 41 43 44 45 46 47 48 49 51 52 53 54 55 56 57 58 " +
	"60 61 62 63 64 65 66 81 82 84 86 90 91 92 93 94 95 98 "
