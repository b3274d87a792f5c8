package models

import (
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trustelem/zxcvbn"
	"github.com/trustelem/zxcvbn/match"
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
		return &FieldError{Field: "password", Message: fmt.Sprintf("must be at least %d characters", MinPasswordLen)}
	}
	if len(password) > 72 {
		return &FieldError{Field: "password", Message: "must be at most 72 bytes"}
	}
	if username != "" && strings.Contains(strings.ToLower(password), strings.ToLower(username)) {
		return &FieldError{Field: "password", Message: "must not contain the username"}
	}
	r := zxcvbn.PasswordStrength(password, []string{username, "herald"})
	if r.Score >= minPasswordScore {
		return nil
	}
	return &FieldError{Field: "password", Message: "is too easy to guess. " + passwordFeedback(r.Sequence)}
}

// passwordFeedback is zxcvbn's advice for a weak password, as upstream zxcvbn gives it
// (the Go port computes the score but leaves the messages out): a warning about the
// longest pattern found, then suggestions.
func passwordFeedback(seq []*match.Match) string {
	const addWords = "Add another word or two; uncommon words are better."
	if len(seq) == 0 {
		return "Use a few words, avoid common phrases."
	}
	longest := seq[0]
	for _, m := range seq[1:] {
		if len(m.Token) > len(longest.Token) {
			longest = m
		}
	}
	warning, suggestions := matchFeedback(longest, len(seq) == 1)
	parts := []string{}
	if warning != "" {
		parts = append(parts, warning+".")
	}
	parts = append(parts, addWords)
	for _, s := range suggestions {
		parts = append(parts, s+".")
	}
	return strings.Join(parts, " ")
}

// matchFeedback is the warning and suggestions for one pattern zxcvbn matched.
func matchFeedback(m *match.Match, sole bool) (warning string, suggestions []string) {
	switch m.Pattern {
	case "dictionary":
		return dictionaryFeedback(m, sole)
	case "spatial":
		if m.Turns == 1 {
			return "Straight rows of keys are easy to guess", []string{"Use a longer keyboard pattern with more turns"}
		}
		return "Short keyboard patterns are easy to guess", []string{"Use a longer keyboard pattern with more turns"}
	case "repeat":
		if utf8.RuneCountInString(m.BaseToken) == 1 {
			return `Repeats like "aaa" are easy to guess`, []string{"Avoid repeated words and characters"}
		}
		return `Repeats like "abcabcabc" are only slightly harder to guess than "abc"`, []string{"Avoid repeated words and characters"}
	case "sequence":
		return "Sequences like abc or 6543 are easy to guess", []string{"Avoid sequences"}
	case "regex":
		if m.RegexName == "recent_year" {
			return "Recent years are easy to guess", []string{"Avoid recent years and years that are associated with you"}
		}
	case "date":
		return "Dates are often easy to guess", []string{"Avoid dates and years that are associated with you"}
	}
	return "", nil
}

// dictionaryFeedback is the advice for a word found in one of zxcvbn's lists.
func dictionaryFeedback(m *match.Match, sole bool) (warning string, suggestions []string) {
	switch m.DictionaryName {
	case "passwords":
		switch {
		case sole && !m.L33t && !m.Reversed && m.Rank <= 10:
			warning = "This is a top-10 common password"
		case sole && !m.L33t && !m.Reversed && m.Rank <= 100:
			warning = "This is a top-100 common password"
		case sole && !m.L33t && !m.Reversed:
			warning = "This is a very common password"
		case math.Log10(m.Guesses) <= 4:
			warning = "This is similar to a commonly used password"
		}
	case "english_wikipedia":
		if sole {
			warning = "A word by itself is easy to guess"
		}
	case "surnames", "male_names", "female_names":
		warning = "Common names and surnames are easy to guess"
	case "user_inputs":
		warning = "This is close to the username or the product's name"
	}
	word := []rune(m.Token)
	switch {
	case len(word) > 1 && unicode.IsUpper(word[0]) && strings.ToLower(string(word[1:])) == string(word[1:]):
		suggestions = append(suggestions, "Capitalization doesn't help very much")
	case strings.ToUpper(m.Token) == m.Token && strings.ToLower(m.Token) != m.Token:
		suggestions = append(suggestions, "All-uppercase is almost as easy to guess as all-lowercase")
	}
	if m.Reversed && len(word) >= 4 {
		suggestions = append(suggestions, "Reversed words aren't much harder to guess")
	}
	if m.L33t {
		suggestions = append(suggestions, "Predictable substitutions like '@' instead of 'a' don't help very much")
	}
	return warning, suggestions
}
