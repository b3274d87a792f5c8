package models

// FieldError is a validation failure of one named field. Err, when set, is the named
// error behind it (ErrDuplicate for a value another row already has), so callers can
// test with errors.Is and still show the message beside the field.
type FieldError struct {
	Field   string
	Message string
	Err     error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Unwrap returns the named error behind the failure, if any.
func (e *FieldError) Unwrap() error { return e.Err }

// duplicateField reports a unique value (a name, an external id) already in use.
func duplicateField(field, message string) *FieldError {
	return &FieldError{Field: field, Message: message, Err: ErrDuplicate}
}
