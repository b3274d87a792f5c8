package handlers

import (
	"cmp"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"herald/kernel"
	"herald/models"
)

// The presenter: the one place where an error becomes an HTTP status and a sentence.
// A domain error (kernel.DomainError) answers with its kind's status, its code and its
// catalog message; a validation error (kernel.FieldError) with 422 and its field; a
// database that did not answer in time with 503; anything else with 500, logged once
// here. The console and the API read the same answer, each in its own words where the
// catalogs have two.

// answer is what Herald says about an error.
type answer struct {
	Status int
	// Code is the API's error code.
	Code string
	// Message is the sentence, in the request's language.
	Message string
	// Field is the request field the error is about, if one is.
	Field string
	// Refused says the request was refused (a domain or validation error): Herald
	// answers the person, nothing went wrong in it, and nothing was logged.
	Refused bool
}

// errs is the answer as a form's errors: its message beside its field, or above the
// form ("") when it is about no field.
func (a answer) errs() map[string]string { return map[string]string{a.Field: a.Message} }

// audience is who reads an answer: a console page or an API caller.
type audience bool

const (
	onPage audience = false
	onAPI  audience = true
)

// wording is a handler's own sentence for one named error, where it has more to say
// than the error's declared message: which thing was not found, the state a message
// is in now. The answer's status and code stay the error's.
type wording struct {
	target error
	key    string
	args   []any
}

// saying words target, wherever err is it, with the catalog message key and its data
// as name, value pairs.
func saying(target error, key string, args ...any) wording {
	return wording{target: target, key: key, args: args}
}

// kindStatus is the HTTP status of each kind of domain error.
var kindStatus = map[kernel.Kind]int{
	kernel.KindNotFound:     http.StatusNotFound,
	kernel.KindConflict:     http.StatusConflict,
	kernel.KindInvalid:      http.StatusUnprocessableEntity,
	kernel.KindForbidden:    http.StatusForbidden,
	kernel.KindGone:         http.StatusGone,
	kernel.KindUnauthorized: http.StatusUnauthorized,
	kernel.KindTooMany:      http.StatusTooManyRequests,
	kernel.KindUpstream:     http.StatusBadGateway,
}

// present maps err to its answer for who reads it; words, the first whose target err
// is, replace the declared message.
func (h *Handlers) present(c *gin.Context, err error, to audience, words ...wording) answer {
	if fe, ok := errors.AsType[*kernel.FieldError](err); ok {
		msg := fe.In(c.Request.Context())
		if to == onAPI {
			msg = tr(c, "api.validation_failed", "Field", fe.Field, "Message", msg)
		}
		return answer{Status: http.StatusUnprocessableEntity, Code: "validation_failed", Message: msg, Field: fe.Field, Refused: true}
	}
	if de, ok := errors.AsType[*kernel.DomainError](err); ok {
		key := de.Key
		if to == onPage && de.PageKey != "" {
			key = de.PageKey
		}
		a := answer{Status: cmp.Or(kindStatus[de.Kind], http.StatusInternalServerError), Code: de.Code, Message: tr(c, key, de.Args...), Field: de.Field, Refused: true}
		for _, w := range words {
			if errors.Is(err, w.target) {
				a.Message = tr(c, w.key, w.args...)
				break
			}
		}
		return a
	}
	prefix := "request"
	if to == onAPI {
		prefix = "api request"
	}
	if models.Unavailable(err) {
		h.Log.Warn(prefix+": database unavailable", "method", c.Request.Method, "path", c.Request.URL.Path, "error", err)
		return unavailable(c, to)
	}
	h.Log.Error(prefix+" failed", "method", c.Request.Method, "path", c.Request.URL.Path, "error", err)
	if to == onAPI {
		return answer{Status: http.StatusInternalServerError, Code: "internal", Message: tr(c, "api.internal")}
	}
	return answer{Status: http.StatusInternalServerError, Code: "internal", Message: tr(c, "error.internal")}
}

// unavailable is the answer to a request the database could not serve in time.
func unavailable(c *gin.Context, to audience) answer {
	key := "error.database_unavailable"
	if to == onAPI {
		key = "api.database_unavailable"
	}
	return answer{Status: http.StatusServiceUnavailable, Code: "database_unavailable", Message: tr(c, key)}
}

// apiFail answers an API call with err's answer, in the API's error shape.
func (h *Handlers) apiFail(c *gin.Context, err error, words ...wording) {
	writeAPIAnswer(c, h.present(c, err, onAPI, words...))
}

// writeAPIAnswer writes an answer in the API's error shape; a 503 asks the caller to
// retry after RetryAfterSeconds.
func writeAPIAnswer(c *gin.Context, a answer) {
	if a.Status == http.StatusServiceUnavailable {
		c.Header("Retry-After", RetryAfterSeconds)
	}
	APIError(c, a.Status, a.Code, a.Message, a.Field)
}

// fail shows err's answer on the console's error page.
func (h *Handlers) fail(c *gin.Context, err error, words ...wording) {
	showAnswer(c, h.present(c, err, onPage, words...))
}

// showAnswer shows an answer on the console's error page; a 503 asks the browser to
// retry after RetryAfterSeconds.
func showAnswer(c *gin.Context, a answer) {
	if a.Status == http.StatusServiceUnavailable {
		c.Header("Retry-After", RetryAfterSeconds)
	}
	errorPage(c, a.Status, a.Message)
}

// refusal returns err's answer for a console page when the request was refused, for
// the handler to show its own way (the form again, a notice); any other error it has
// shown on the error page, and ok is false.
func (h *Handlers) refusal(c *gin.Context, err error, words ...wording) (a answer, ok bool) {
	a = h.present(c, err, onPage, words...)
	if !a.Refused {
		showAnswer(c, a)
	}
	return a, a.Refused
}

// failOr answers err on a console page: a refusal with show (the form again, a notice
// on the page it came from), except no such thing, which is the error page, as is
// anything that went wrong.
func (h *Handlers) failOr(c *gin.Context, err error, show func(answer), words ...wording) {
	a := h.present(c, err, onPage, words...)
	if !a.Refused || a.Status == http.StatusNotFound {
		showAnswer(c, a)
		return
	}
	show(a)
}
