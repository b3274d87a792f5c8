package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"herald/i18n"
	"herald/kernel"
)

// pageSize is how many rows a console list shows at once.
const pageSize = 50

// notices are the sentences shown after an action redirects back to a page (catalog
// keys notice.<key>, with the subject as .Subject). The action keeps a key of this set
// and the subject it is about in the session (see SessionManager.SetNotice); the page
// shows the sentence once. Nothing in the URL can choose the words.
var notices = map[string]bool{
	"created":     true,
	"saved":       true,
	"deleted":     true,
	"activated":   true,
	"deactivated": true,
	"enabled":     true,
	"disabled":    true,
	"imported":    true,
	"revoked":     true,
	"retried":     true,
	"cancelled":   true,
	"resent":      true,
	"password":    true,
	"role":        true,
	"approved":    true,
	"rejected":    true,
	"note":        true, // the subject is the whole sentence
}

// redirectNotice sends the browser to path and keeps a notice about subject for the
// page there.
func (h *Handlers) redirectNotice(c *gin.Context, path, notice, subject string) {
	if err := h.Sessions.SetNotice(c, notice, subject); err != nil {
		// The action is done; only its confirmation is lost.
		h.Log.Warn("keep notice", "notice", notice, "error", err)
	}
	c.Redirect(http.StatusSeeOther, path)
}

// notice returns the sentence the previous action kept for this page, once, or "".
func (h *Handlers) notice(c *gin.Context) string {
	key, subject := h.Sessions.TakeNotice(c)
	if !notices[key] {
		return ""
	}
	return i18n.T(c.Request.Context(), "notice."+key, "Subject", subject)
}

// isHTMX reports whether htmx made the request (and expects a partial).
func isHTMX(c *gin.Context) bool { return c.GetHeader("HX-Request") == "true" }

// parseDay reads a YYYY-MM-DD date in the console's time zone; empty gives nil.
func parseDay(field, value string, loc *time.Location) (*time.Time, error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return nil, nil
	}
	t, err := time.ParseInLocation(time.DateOnly, value, loc)
	if err != nil {
		return nil, kernel.Invalid(field, "validation.date")
	}
	return &t, nil
}

// dayRange turns an inclusive from/to pair of dates into [from 00:00, the day after to
// 00:00) in the console's time zone, recording bad dates in errs.
func dayRange(c *gin.Context, from, to string, loc *time.Location, errs map[string]string) (start, before *time.Time) {
	start, err := parseDay("from", from, loc)
	if err != nil {
		errs["from"] = err.(*kernel.FieldError).In(c.Request.Context())
	}
	end, err := parseDay("to", to, loc)
	if err != nil {
		errs["to"] = err.(*kernel.FieldError).In(c.Request.Context())
	}
	if end != nil {
		next := end.AddDate(0, 0, 1)
		before = &next
	}
	return start, before
}

// withQuery returns path with the non-empty values as its query string.
func withQuery(path string, v url.Values) string {
	q := url.Values{}
	for k, list := range v {
		for _, s := range list {
			if s != "" {
				q.Add(k, s)
			}
		}
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// fieldMessage is one validation error as a sentence, for places that show errors of
// several fields together.
func fieldMessage(c *gin.Context, err error) string {
	var fe *kernel.FieldError
	if errors.As(err, &fe) {
		return fe.Field + " " + fe.In(c.Request.Context())
	}
	return err.Error()
}
