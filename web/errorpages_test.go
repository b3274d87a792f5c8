package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Error pages say nothing taken from the request: a link to a made-up path or id
// cannot make Herald's own page carry someone's words.
func TestErrorPagesDoNotEchoTheRequest(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	const bait = "Herald-moved-sign-in-at-evil.example"
	viewer := c.as(viewerUser)
	for _, tc := range []struct {
		what, path string
		lang       string
	}{
		{"unknown page", "/" + bait, "en"},
		{"unknown page in Chinese", "/" + url.PathEscape("请到 evil.example 登录") + "/" + bait, "zh-CN"},
		{"unknown batch", "/batches/" + bait, "en"},
		{"unknown message", "/messages/" + bait, "zh-CN"},
		{"unknown template", "/templates/" + bait, "en"},
		{"unknown person", "/recipients/" + bait, "en"},
	} {
		resp, body := viewer.do("GET", tc.path, "", nil, map[string]string{"Accept-Language": tc.lang})
		wantStatus(t, tc.what, resp, body, http.StatusNotFound)
		// The page's own links (the language switch returns to the path) are not text.
		main := body[strings.Index(body, "<main>"):]
		wantNotContains(t, tc.what, main, "evil.example")
		// Nor does the language switch's hidden next field carry the path asked for.
		wantNotContains(t, tc.what, body, bait)
	}
}
