package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"herald/models"
)

// pageSize is how many rows a console list shows at once.
const pageSize = 50

// notices are the sentences shown after an action redirects back to a page; the
// redirect names one by key and the subject it is about, so no free text travels in
// the URL.
var notices = map[string]string{
	"created":     "Created %s.",
	"saved":       "Saved %s.",
	"deleted":     "Deleted %s.",
	"activated":   "%s is active again.",
	"deactivated": "%s is deactivated: kept on record, receives nothing.",
	"enabled":     "Enabled %s.",
	"disabled":    "Disabled %s.",
	"imported":    "Import applied: %s.",
	"revoked":     "Revoked %s.",
	"retried":     "Message %s is due again.",
	"cancelled":   "Message %s is cancelled.",
	"resent":      "Re-sent %s.",
	"password":    "Set a new password for %s; their sessions were signed out.",
	"role":        "Changed the role of %s.",
}

// redirectNotice sends the browser to path with a notice about subject.
func redirectNotice(c *gin.Context, path, notice, subject string) {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	c.Redirect(http.StatusSeeOther, path+sep+url.Values{"notice": {notice}, "subject": {subject}}.Encode())
}

// noticeOf returns the sentence a redirect asked for, or "".
func noticeOf(c *gin.Context) string {
	format, ok := notices[c.Query("notice")]
	if !ok {
		return ""
	}
	return fmt.Sprintf(format, c.Query("subject"))
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
		return nil, &models.FieldError{Field: field, Message: "must be a date as YYYY-MM-DD"}
	}
	return &t, nil
}

// dayRange turns an inclusive from/to pair of dates into [from 00:00, the day after to
// 00:00) in the console's time zone, recording bad dates in errs.
func dayRange(from, to string, loc *time.Location, errs map[string]string) (start, before *time.Time) {
	start, err := parseDay("from", from, loc)
	if err != nil {
		errs["from"] = err.(*models.FieldError).Message
	}
	end, err := parseDay("to", to, loc)
	if err != nil {
		errs["to"] = err.(*models.FieldError).Message
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
func fieldMessage(err error) string {
	var fe *models.FieldError
	if errors.As(err, &fe) {
		return fe.Field + " " + fe.Message
	}
	return err.Error()
}
