package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/google/go-cmp/cmp"

	"herald/alert"
	"herald/duty"
	"herald/i18n"
	"herald/kernel"
	"herald/silence"
)

// presentIn returns the answer to err for to, in lang, and what the presenter logged.
func presentIn(t *testing.T, lang string, err error, to audience, words ...wording) (answer, string) {
	t.Helper()
	var log bytes.Buffer
	h := &Handlers{Log: slog.New(slog.NewTextHandler(&log, nil))}
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(http.MethodPost, "/things/1", nil).WithContext(i18n.WithLang(context.Background(), lang))
	return h.present(c, err, to, words...), log.String()
}

// kindStatuses is the status each kind of domain error answers with, as the console
// and the API have always answered them.
var kindStatuses = map[kernel.Kind]int{kernel.KindNotFound: 404, kernel.KindConflict: 409, kernel.KindInvalid: 422,
	kernel.KindForbidden: 403, kernel.KindGone: 410, kernel.KindUnauthorized: 401, kernel.KindTooMany: 429, kernel.KindUpstream: 502}

// Every declared domain error, wrapped with context as callers wrap it, answers with
// its kind's status and code, is not logged, and has its messages in every language's
// catalog: a new error without a catalog message fails here.
func TestEveryDomainErrorIsPresented(t *testing.T) {
	declared := kernel.DomainErrors()
	// The packages' own errors, as a check that the walk sees them.
	for _, e := range []*kernel.DomainError{kernel.ErrNotFound, kernel.ErrStateChanged, alert.ErrAlertEnded, duty.ErrRotationInUse} {
		if !containsError(declared, e) {
			t.Errorf("%q is not among the declared errors", e)
		}
	}
	for _, e := range declared {
		t.Run(e.Code+"/"+e.Key, func(t *testing.T) {
			want, ok := kindStatuses[e.Kind]
			if !ok {
				t.Fatalf("%q: kind %d has no status", e, e.Kind)
			}
			if e.Code == "" || e.Text == "" {
				t.Errorf("%q: code %q and text %q must both be set", e, e.Code, e.Text)
			}
			wrapped := fmt.Errorf("somewhere: %w", e)
			for _, lang := range i18n.Languages {
				for _, to := range []audience{onPage, onAPI} {
					key := e.Key
					if to == onPage && e.PageKey != "" {
						key = e.PageKey
					}
					if !i18n.Has(lang, key) {
						t.Errorf("%q: catalog %s has no message %s", e, lang, key)
					}
					a, logged := presentIn(t, lang, wrapped, to)
					if a.Status != want || a.Code != e.Code || a.Field != e.Field || !a.Refused || a.Message == "" || a.Message == key {
						t.Errorf("%q in %s (api %v): %+v, want status %d, code %q, field %q and a message", e, lang, to, a, want, e.Code, e.Field)
					}
					if logged != "" {
						t.Errorf("%q: a refusal was logged: %s", e, logged)
					}
				}
			}
		})
	}
}

func containsError(list []*kernel.DomainError, e *kernel.DomainError) bool {
	for _, d := range list {
		if d == e {
			return true
		}
	}
	return false
}

// An error made With its message's data is still the declared error, and its message
// names them; a case of a more general error is that one too.
func TestDomainErrorWithData(t *testing.T) {
	err := fmt.Errorf("models: api key %q: %w", "billing", kernel.ErrAmbiguous.With("Name", "billing"))
	if !errors.Is(err, kernel.ErrAmbiguous) || errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("errors.Is: %v is ErrAmbiguous %v, ErrNotFound %v", err, errors.Is(err, kernel.ErrAmbiguous), errors.Is(err, kernel.ErrNotFound))
	}
	a, _ := presentIn(t, i18n.English, err, onAPI)
	want := answer{Status: http.StatusConflict, Code: "ambiguous", Field: "name", Refused: true,
		Message: "Several live API keys are named billing: revoke the ones no longer used, then try again."}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	if kernel.ErrAmbiguous.Args != nil {
		t.Errorf("With changed the declared error: %v", kernel.ErrAmbiguous.Args)
	}
	if ended := fmt.Errorf("dispatch: expire silence 7: %w", silence.ErrSilenceEnded); !errors.Is(ended, kernel.ErrStateChanged) {
		t.Errorf("%v is not kernel.ErrStateChanged", ended)
	}
}

// Validation errors, a database that did not answer and anything unexpected go through
// the presenter too; a handler's own wording replaces the message only.
func TestPresentOtherErrors(t *testing.T) {
	fe := fmt.Errorf("dispatch: save: %w", kernel.Invalid("date", "validation.date"))
	for _, tc := range []struct {
		name   string
		err    error
		to     audience
		words  []wording
		want   answer
		logged string // a word the log line holds; "" when nothing may be logged
	}{
		{"field on a page", fe, onPage, nil,
			answer{Status: 422, Code: "validation_failed", Message: "must be a date as YYYY-MM-DD", Field: "date", Refused: true}, ""},
		{"field in the API", fe, onAPI, nil,
			answer{Status: 422, Code: "validation_failed", Message: "date must be a date as YYYY-MM-DD", Field: "date", Refused: true}, ""},
		{"database on a page", fmt.Errorf("models: read: %w", context.DeadlineExceeded), onPage, nil,
			answer{Status: 503, Code: "database_unavailable", Message: i18n.In(i18n.English, "error.database_unavailable")}, "level=WARN"},
		{"database in the API", fmt.Errorf("models: read: %w", context.DeadlineExceeded), onAPI, nil,
			answer{Status: 503, Code: "database_unavailable", Message: i18n.In(i18n.English, "api.database_unavailable")}, "level=WARN"},
		{"unexpected on a page", errors.New("disk on fire"), onPage, nil,
			answer{Status: 500, Code: "internal", Message: i18n.In(i18n.English, "error.internal")}, "disk on fire"},
		{"unexpected in the API", errors.New("disk on fire"), onAPI, nil,
			answer{Status: 500, Code: "internal", Message: i18n.In(i18n.English, "api.internal")}, "disk on fire"},
		{"not found on a page", fmt.Errorf("models: batch b1: %w", kernel.ErrNotFound), onPage, nil,
			answer{Status: 404, Code: "not_found", Message: i18n.In(i18n.English, "error.no_page"), Refused: true}, ""},
		{"not found in the API", fmt.Errorf("models: batch b1: %w", kernel.ErrNotFound), onAPI, nil,
			answer{Status: 404, Code: "not_found", Message: "no such resource", Refused: true}, ""},
		{"the handler's words", fmt.Errorf("models: batch b1: %w", kernel.ErrNotFound), onPage,
			[]wording{saying(kernel.ErrStateChanged, "approvals.error.decided"), saying(kernel.ErrNotFound, "error.no_batch")},
			answer{Status: 404, Code: "not_found", Message: "There is no such batch.", Refused: true}, ""},
		{"words for another error", fmt.Errorf("models: batch b1: %w", kernel.ErrStateChanged), onAPI,
			[]wording{saying(kernel.ErrNotFound, "error.no_batch")},
			answer{Status: 409, Code: "invalid_state", Message: "the resource is not in a state that allows this", Refused: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, logged := presentIn(t, i18n.English, tc.err, tc.to, tc.words...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			lines := strings.Count(logged, "\n")
			if tc.logged == "" && lines != 0 || tc.logged != "" && (lines != 1 || !strings.Contains(logged, tc.logged)) {
				t.Errorf("logged %q, want one line with %q (none when empty)", logged, tc.logged)
			}
		})
	}
}
