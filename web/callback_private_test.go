package web_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A callback URL on a private network is refused with the setting that allows it named
// as the key's own checkbox (and the API's field), not an account's, in both languages.
func TestCallbackPrivateAddressNamesTheKeysCheckbox(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	key, _, err := c.store.Access().CreateAPIKey(t.Context(), "crm", "send", adminUser)
	if err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/api-keys/%d/callback", key.ID)
	admin := c.as(adminUser)
	for _, tc := range []struct{ lang, url, want string }{
		{"zh-CN", "http://10.1.2.3/events", "10.1.2.3 是内网地址；如需连接，请勾选下方的“允许地址位于内网”"},
		{"zh-CN", "http://127.0.0.1:9/events", "127.0.0.1 是环回地址；如需连接，请勾选下方的“允许地址位于内网”"},
		{"en", "http://10.1.2.3/events", "10.1.2.3 is a private address; to allow it, tick “The URL may be on a private network” below"},
	} {
		resp, body := admin.do("POST", path, "application/x-www-form-urlencoded", strings.NewReader(url.Values{"url": {tc.url}}.Encode()),
			map[string]string{"Accept-Language": tc.lang})
		wantStatus(t, tc.url+" in "+tc.lang, resp, body, http.StatusUnprocessableEntity)
		got := html.UnescapeString(fieldError(body, "url"))
		if !strings.Contains(got, tc.want) || strings.Contains(got, "account") || strings.Contains(got, "账号") {
			t.Errorf("%s in %s: error beside url %q, want %q and no account named", tc.url, tc.lang, got, tc.want)
		}
	}
}
