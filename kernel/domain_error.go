package kernel

import (
	"slices"
	"sync"
)

// Kind is what sort of refusal a domain error is. The handlers answer each kind with
// one HTTP status, on the console and in the API alike.
type Kind uint8

// The kinds of domain errors.
const (
	// KindNotFound: what the request names does not exist, or the caller may not see it.
	KindNotFound Kind = iota + 1
	// KindConflict: the request is sound, but the state of what it names stands in the
	// way (changed meanwhile, in use, already over).
	KindConflict
	// KindInvalid: the request itself is wrong. A wrong field is a FieldError instead.
	KindInvalid
	// KindForbidden: the caller may not do this, whatever the state.
	KindForbidden
	// KindGone: what the request names existed, and cannot be used any more.
	KindGone
	// KindUnauthorized: the credentials the caller gave were refused. Sign-in answers
	// a wrong password with 401, which none of the kinds above means.
	KindUnauthorized
	// KindTooMany: refused unchecked after too many attempts, to try again later.
	// Sign-in throttling answers 429 with Retry-After, which none of the kinds above
	// means.
	KindTooMany
	// KindUpstream: a messaging platform refused the request or could not be reached.
	// A recall the platform refused answers 502: the request was right, and Herald
	// worked, but the platform did not.
	KindUpstream
)

// DomainError is a named refusal: its kind, the code the JSON API answers with, and
// the catalog keys of the sentence a person reads. The named errors of the kernel, the
// store and dispatch are its values, declared once with Declare; callers compare with
// errors.Is and wrap them with context as any error. The handlers' presenter turns one into an
// HTTP status (from Kind) and a message (from Key), so a new refusal needs nothing
// but its declaration.
type DomainError struct {
	Kind Kind
	// Code is the error's code in the API's answers ("not_found", "alert_ended").
	Code string
	// Key is the catalog key of its message; PageKey, when set, the console's, where
	// the console says it in other words than the API.
	Key, PageKey string
	// Field is the request field the error is about, if one is (the API's "field").
	Field string
	// Text is what Error returns, for logs.
	Text string
	// Err is the more general named error this one is a case of (ErrStateChanged for
	// a silence that ended meanwhile): errors.Is finds it too.
	Err error
	// Args are the message's data as name, value pairs, of an error made With them.
	Args []any
	// of is the declared error this one was made from (With), nil for a declared one.
	of *DomainError
}

// declared holds every error made by Declare, for DomainErrors.
var declared struct {
	sync.Mutex
	list []*DomainError
}

// Declare makes e a named error and records it, so that a test can walk every one
// through the presenter and the catalogs.
func Declare(e DomainError) *DomainError {
	d := &e
	declared.Lock()
	declared.list = append(declared.list, d)
	declared.Unlock()
	return d
}

// DomainErrors lists every declared error of the packages linked in, in the order
// they were declared.
func DomainErrors() []*DomainError {
	declared.Lock()
	defer declared.Unlock()
	return slices.Clone(declared.list)
}

// Error returns Text: the error as logs name it.
func (e *DomainError) Error() string { return e.Text }

// Unwrap returns the more general named error e is a case of, if any.
func (e *DomainError) Unwrap() error { return e.Err }

// Is makes an error made With data match the declared error it was made from.
func (e *DomainError) Is(target error) bool { return e.of != nil && target == e.of }

// With returns e carrying its message's data (name, value pairs), for a message that
// names what the refusal is about; it is still e for errors.Is.
func (e *DomainError) With(args ...any) *DomainError {
	d := *e
	d.Args = args
	if d.of == nil {
		d.of = e
	}
	return &d
}
