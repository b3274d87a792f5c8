package kernel

import (
	"context"
	"errors"
	"unicode/utf8"

	"herald/i18n"
)

// FieldError is a validation failure of one named field. Err, when set, is the named
// error behind it (ErrDuplicate for a value another row already has), so callers can
// test with errors.Is and still show the message beside the field.
//
// Key and Args name the message in the catalogs (see Invalid); Message is its English
// text, for logs and English API answers.
type FieldError struct {
	Field   string
	Message string
	Key     string
	Args    []any
	Err     error
}

// Invalid returns the validation failure of field with the catalog message key; args
// are the message's data as name, value pairs.
func Invalid(field, key string, args ...any) *FieldError {
	return &FieldError{Field: field, Key: key, Args: args, Message: i18n.In(i18n.English, key, args...)}
}

// Text is the message in lang. A failure made without a catalog key shows its English
// text, and is noted as untranslated for the tests that walk the console.
func (e *FieldError) Text(lang string) string {
	if e.Key == "" {
		if lang != i18n.English {
			i18n.NoteUntranslated(e.Message)
		}
		return e.Message
	}
	return i18n.In(lang, e.Key, e.Args...)
}

// In is the message in the language of ctx.
func (e *FieldError) In(ctx context.Context) string { return e.Text(i18n.Lang(ctx)) }

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Unwrap returns the named error behind the failure, if any.
func (e *FieldError) Unwrap() error { return e.Err }

// duplicateField reports a unique value (a name, an external id) already in use.
func DuplicateField(field, key string, args ...any) *FieldError {
	fe := Invalid(field, key, args...)
	fe.Err = ErrDuplicate
	return fe
}

// fieldProblem is an error that names a field and its problem (a platform's setting,
// channels.SettingError), without this package knowing its type.
type fieldProblem interface {
	error
	FieldProblem() (field, key, text string, args []any)
}

// SettingInvalid returns err as the failure of its field when it is a problem with a
// platform setting or a callback (a channels.SettingError), else err unchanged.
func SettingInvalid(err error) error {
	p, ok := errors.AsType[fieldProblem](err)
	if !ok {
		return err
	}
	field, key, text, args := p.FieldProblem()
	if key == "" {
		return &FieldError{Field: field, Message: text}
	}
	return Invalid(field, key, args...)
}

// TooLong refuses a value of more than max characters, saying how many it has: a value
// is never cut to fit. key is the message, with .Count and .Max.
func TooLong(field, key, s string, max int) *FieldError {
	if n := utf8.RuneCountInString(s); n > max {
		return Invalid(field, key, "Count", n, "Max", max)
	}
	return nil
}
