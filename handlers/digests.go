package handlers

import (
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/templates"
	"herald/views"
)

// digestForm reads the digest fields of the compose form or the template editor.
func digestForm(c *gin.Context) views.DigestForm {
	return views.DigestForm{Key: strings.TrimSpace(c.PostForm("digest.key")),
		Window: strings.TrimSpace(c.PostForm("digest.window")), Max: strings.TrimSpace(c.PostForm("digest.max"))}
}

// digestRequest is the digest the fields ask for: nil when all are empty. A max that is
// not a number is out of range, which dispatch reports on digest.max.
func digestRequest(f views.DigestForm) *templates.DigestRequest {
	if f == (views.DigestForm{}) {
		return nil
	}
	n, _ := strconv.Atoi(f.Max)
	return &templates.DigestRequest{Key: f.Key, Window: f.Window, Max: n}
}

// digestFormOf fills the fields with a digest (nil: empty).
func digestFormOf(dr *templates.DigestRequest) views.DigestForm {
	if dr == nil {
		return views.DigestForm{}
	}
	return views.DigestForm{Key: dr.Key, Window: dr.Window, Max: strconv.Itoa(dr.Max)}
}
