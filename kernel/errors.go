package kernel

import (
	"errors"
	"strings"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
)

// Named errors the store returns; callers compare with errors.Is.
var (
	// ErrNotFound means no row matched: the handlers name what was not found where they
	// show it.
	ErrNotFound = Declare(DomainError{Kind: KindNotFound, Code: "not_found", Key: "api.not_found", PageKey: "error.no_page", Text: "not found"})
	// ErrDuplicate means a unique value is taken; a field's value taken is a FieldError
	// whose Err it is.
	ErrDuplicate = Declare(DomainError{Kind: KindConflict, Code: "duplicate", Key: "api.duplicate", Text: "already exists"})
	// ErrStateChanged means a compare-and-set update matched no row: another actor moved
	// the row out of the state the caller expected.
	ErrStateChanged = Declare(DomainError{Kind: KindConflict, Code: "invalid_state", Key: "api.invalid_state", PageKey: "error.changed_meanwhile",
		Text: "state changed concurrently"})
	// ErrAmbiguous means a name matched several rows where one was expected (the live API
	// keys of a name: its message says so, naming it).
	ErrAmbiguous = Declare(DomainError{Kind: KindConflict, Code: "ambiguous", Key: "callbacks.api_ambiguous", Field: "name", Text: "ambiguous"})
)

// isLockConflict reports a MySQL deadlock (1213) or lock wait timeout (1205).
func IsLockConflict(err error) bool {
	var me *mysqldriver.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// isDuplicate reports whether err is a unique-key violation on either dialect.
func IsDuplicate(err error) bool {
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1062
	}
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// notFound maps GORM's record-not-found to ErrNotFound, keeping other errors.
func NotFound(err error) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return ErrNotFound
	}
	return err
}
