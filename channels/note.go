package channels

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"herald/i18n"
)

// Note is text a person reads — a connection test's summary and steps, what a setting
// gives up, a problem with a setting — kept as a catalog key (locales/channels.*.toml)
// and its data as name, value pairs, so that it is shown in the reader's language. A
// value that is itself a Note is translated with it. A Note without a key is Text shown
// as it is: a request line, a server's answer, an error from a library — protocol and
// log text that no catalog translates.
type Note struct {
	Key  string
	Args []any
	Text string
}

// note makes a Note of a catalog key and its data.
func note(key string, args ...any) Note { return Note{Key: key, Args: args} }

// verbatim makes a Note shown as it is in every language.
func verbatim(text string) Note { return Note{Text: text} }

// In is the note in lang.
func (n Note) In(lang string) string {
	if n.Key == "" {
		return n.Text
	}
	args := make([]any, len(n.Args))
	copy(args, n.Args)
	for i := 1; i < len(args); i += 2 {
		if sub, ok := args[i].(Note); ok {
			args[i] = sub.In(lang)
		}
	}
	return i18n.In(lang, n.Key, args...)
}

// Rendered is the note in every console language, as a JSON object from language to
// text, each text at most 450 bytes: kept with a record that a page shows later in its
// reader's language (see views' storedNote).
func (n Note) Rendered() string {
	out := make(map[string]string, len(i18n.Languages))
	for _, lang := range i18n.Languages {
		text := n.In(lang)
		for len(text) > 450 {
			_, size := utf8.DecodeLastRuneInString(text)
			text = text[:len(text)-size]
		}
		out[lang] = text
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// Describe names a failure for an operator: what kept a connection from being made
// (the address guard, DNS, a refusal, TLS, a timeout), else the error's own words.
func Describe(err error) Note {
	if problem := connectionProblem(err); !problem.IsZero() {
		return problem
	}
	return verbatim(err.Error())
}

// String is the note in English, for logs, the audit log and the JSON API.
func (n Note) String() string { return n.In(i18n.English) }

// IsZero says the note holds nothing.
func (n Note) IsZero() bool { return n.Key == "" && n.Text == "" && len(n.Args) == 0 }

// invalid returns the problem with a setting, the note as its message. The note's data
// must be plain values (no Notes): a field's message is translated with its own data.
func (n Note) invalid(field string) *SettingError {
	return &SettingError{Field: field, Problem: n}
}

// redact returns the note with every occurrence of secret in its text and its data
// replaced by ***.
func (n Note) redact(secret string) Note {
	out := Note{Key: n.Key, Text: strings.ReplaceAll(n.Text, secret, "***")}
	if n.Args != nil {
		out.Args = make([]any, len(n.Args))
	}
	for i, a := range n.Args {
		switch v := a.(type) {
		case string:
			out.Args[i] = strings.ReplaceAll(v, secret, "***")
		case Note:
			out.Args[i] = v.redact(secret)
		default:
			out.Args[i] = a
		}
	}
	return out
}

// problemError is an error whose message is also for a person: Error is the English
// text for logs, note its translations.
type problemError struct {
	prefix string // for the log only, e.g. "channels: account demo: "
	note   Note
}

func (e *problemError) Error() string { return e.prefix + e.note.String() }
