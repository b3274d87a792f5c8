// Package channels holds the platform adapters behind one small interface, and the
// classification of their errors into the classes that drive Herald's retry policy.
package channels

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// Message is what an adapter delivers: one rendered message to one address.
type Message struct {
	ID      string // Herald's message id, sent as the request id where the platform allows
	To      string // the recipient's address on the platform
	MsgType string // "text" or "markdown"
	Title   string
	Content string
	// HTML is an HTML alternative of Content, which email sends beside it ("" for none).
	HTML string
}

// Receipt is what the platform said when it accepted a message.
type Receipt struct {
	ProviderMessageID string
}

// Sender delivers messages through one account of one platform.
type Sender interface {
	Send(ctx context.Context, m Message) (Receipt, error)
}

// Class is an error class (docs/retries.md); the retry policy is keyed by it.
type Class string

// The error classes.
const (
	Throttled   Class = "throttled"    // Herald's own limiter said wait
	RateLimited Class = "rate_limited" // the provider said too many
	Transient   Class = "transient"    // timeout, connection error, 5xx
	Auth        Class = "auth"         // bad or expired credentials
	Permanent   Class = "permanent"    // invalid recipient, rejected content, other 4xx
)

// Error is a classified delivery failure.
type Error struct {
	Class Class
	// Code is the provider's own code (HTTP status or platform error code), if any.
	Code string
	// RetryAfter is the provider's requested wait, when it gave one.
	RetryAfter time.Duration
	// Ambiguous marks a failure after which the platform may have taken the message
	// (a connection lost after the end of SMTP DATA): it is never retried on its own.
	Ambiguous bool
	Err       error
}

// Error reads "<class> (<code>): <cause>".
func (e *Error) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%s (%s): %v", e.Class, e.Code, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Class, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns a classified error.
func Errorf(class Class, code string, format string, args ...any) *Error {
	return &Error{Class: class, Code: code, Err: fmt.Errorf(format, args...)}
}

// Classify returns err as a classified error. Errors an adapter did not classify are
// transport failures: timeouts and network errors are transient, and so is anything
// unknown, because retrying an unknown failure a bounded number of times is safer than
// dropping the message.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		return ce
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne):
		return &Error{Class: Transient, Err: err}
	}
	return &Error{Class: Transient, Err: err}
}

// TakesHTML reports whether a platform sends a template's HTML alternative (email, as
// multipart/alternative); the others send the text alone.
func TakesHTML(platform string) bool { return platform == "email" }
