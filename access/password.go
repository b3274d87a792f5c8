package access

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trustelem/zxcvbn"
	"github.com/trustelem/zxcvbn/match"

	"herald/i18n"
	"herald/kernel"
)

// MinPasswordLen is the shortest password a console user may have.
const MinPasswordLen = 10

// minPasswordScore is the least zxcvbn score (0–4) a password needs: 3 means about 10⁸
// guesses, safe against online guessing and costly offline against bcrypt.
const minPasswordScore = 3

// CheckPassword tells why a password is not good enough for the user, or returns nil.
// Strength is zxcvbn's estimate (a port of Dropbox's estimator: common passwords, words,
// names, keyboard patterns, dates, repeats), with the username and the product's name
// counted as known words; the message carries zxcvbn's own advice.
func CheckPassword(username, password string) error {
	if utf8.RuneCountInString(password) < MinPasswordLen {
		return kernel.Invalid("password", "users.password.too_short", "Min", MinPasswordLen)
	}
	if len(password) > maxPasswordBytes {
		return kernel.Invalid("password", "users.password.too_long", "Max", maxPasswordBytes)
	}
	if username != "" && strings.Contains(strings.ToLower(password), strings.ToLower(username)) {
		return kernel.Invalid("password", "users.password.contains_username")
	}
	r := zxcvbn.PasswordStrength(password, []string{username, "herald"})
	if r.Score >= minPasswordScore {
		return nil
	}
	return kernel.Invalid("password", "users.password.weak", "Advice", passwordFeedback(r.Sequence))
}

// maxPasswordBytes is bcrypt's limit: it ignores what follows.
const maxPasswordBytes = 72

// PasswordAdvice is zxcvbn's advice on a weak password, as catalog messages: the
// message of a weak password shows it in its own language ({{.Advice.In "zh-CN"}}).
type PasswordAdvice []i18n.Msg

// In is the advice in lang, one sentence after another.
func (a PasswordAdvice) In(lang string) string {
	parts := make([]string, len(a))
	for i, m := range a {
		parts[i] = m.In(lang)
	}
	sep := " "
	if lang == i18n.Chinese {
		sep = ""
	}
	return strings.Join(parts, sep)
}

// String is the advice in English.
func (a PasswordAdvice) String() string { return a.In(i18n.English) }

// passwordFeedback is zxcvbn's advice for a weak password, as upstream zxcvbn gives it
// (the Go port computes the score but leaves the messages out): a warning about the
// longest pattern found, then suggestions.
func passwordFeedback(seq []*match.Match) PasswordAdvice {
	const advice = "users.password.advice."
	if len(seq) == 0 {
		return PasswordAdvice{i18n.M(advice + "few_words")}
	}
	longest := seq[0]
	for _, m := range seq[1:] {
		if len(m.Token) > len(longest.Token) {
			longest = m
		}
	}
	warning, suggestions := matchFeedback(longest, len(seq) == 1)
	var out PasswordAdvice
	if warning != "" {
		out = append(out, i18n.M(advice+warning))
	}
	out = append(out, i18n.M(advice+"add_words"))
	for _, s := range suggestions {
		out = append(out, i18n.M(advice+s))
	}
	return out
}

// matchFeedback is the warning and suggestions for one pattern zxcvbn matched, as keys
// under users.password.advice.
func matchFeedback(m *match.Match, sole bool) (warning string, suggestions []string) {
	switch m.Pattern {
	case "dictionary":
		return dictionaryFeedback(m, sole)
	case "spatial":
		if m.Turns == 1 {
			return "straight_rows", []string{"longer_keyboard"}
		}
		return "short_keyboard", []string{"longer_keyboard"}
	case "repeat":
		if utf8.RuneCountInString(m.BaseToken) == 1 {
			return "repeat_char", []string{"avoid_repeats"}
		}
		return "repeat_words", []string{"avoid_repeats"}
	case "sequence":
		return "sequences", []string{"avoid_sequences"}
	case "regex":
		if m.RegexName == "recent_year" {
			return "recent_years", []string{"avoid_years"}
		}
	case "date":
		return "dates", []string{"avoid_dates"}
	}
	return "", nil
}

// dictionaryFeedback is the advice for a word found in one of zxcvbn's lists.
func dictionaryFeedback(m *match.Match, sole bool) (warning string, suggestions []string) {
	switch m.DictionaryName {
	case "passwords":
		switch {
		case sole && !m.L33t && !m.Reversed && m.Rank <= 10:
			warning = "top10"
		case sole && !m.L33t && !m.Reversed && m.Rank <= 100:
			warning = "top100"
		case sole && !m.L33t && !m.Reversed:
			warning = "very_common"
		case math.Log10(m.Guesses) <= 4:
			warning = "similar_common"
		}
	case "english_wikipedia":
		if sole {
			warning = "word_alone"
		}
	case "surnames", "male_names", "female_names":
		warning = "names"
	case "user_inputs":
		warning = "user_inputs"
	}
	word := []rune(m.Token)
	switch {
	case len(word) > 1 && unicode.IsUpper(word[0]) && strings.ToLower(string(word[1:])) == string(word[1:]):
		suggestions = append(suggestions, "capitalization")
	case strings.ToUpper(m.Token) == m.Token && strings.ToLower(m.Token) != m.Token:
		suggestions = append(suggestions, "all_upper")
	}
	if m.Reversed && len(word) >= 4 {
		suggestions = append(suggestions, "reversed")
	}
	if m.L33t {
		suggestions = append(suggestions, "l33t")
	}
	return warning, suggestions
}
