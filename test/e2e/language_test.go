package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestConsoleLanguageFollowsUserThenBrowserThenDefault: a page renders in the language
// the user chose; without a choice in the browser's Accept-Language; without either in
// HERALD_DEFAULT_LANGUAGE. The choice is stored on the user, survives a new session, and
// is audited.
func TestConsoleLanguageFollowsUserThenBrowserThenDefault(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["HERALD_DEFAULT_LANGUAGE"] = "zh-CN"
	h := startHerald(t, env)
	b := newBrowser(t, h.URL)
	lang := func(header map[string]string) string {
		t.Helper()
		resp, body := b.Do("GET", "/password", nil, header)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /password: %d", resp.StatusCode)
		}
		switch {
		case strings.Contains(body, `<html lang="zh-CN">`):
			return "zh-CN"
		case strings.Contains(body, `<html lang="en">`):
			return "en"
		}
		return "?"
	}
	// The login page follows the browser.
	if _, body := b.Do("GET", "/login", nil, map[string]string{"Accept-Language": "en-GB,en;q=0.9"}); !strings.Contains(body, `<html lang="en">`) {
		t.Errorf("login page for an English browser is not in English")
	}
	b.Login("admin", testAdminPassword)
	if got := lang(nil); got != "zh-CN" {
		t.Errorf("no choice, no Accept-Language: %s, want the default zh-CN", got)
	}
	if got := lang(map[string]string{"Accept-Language": "en-US,en;q=0.9"}); got != "en" {
		t.Errorf("no choice, English browser: %s, want en", got)
	}
	resp, _ := b.Post("/language", url.Values{"language": {"en"}, "next": {"/messages?status=sent"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/messages?status=sent" {
		t.Fatalf("POST /language: %d to %q, want 303 back to the page", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got := lang(map[string]string{"Accept-Language": "zh-CN"}); got != "en" {
		t.Errorf("chose en, Chinese browser: %s, want the user's choice", got)
	}
	// The choice is the user's, not the session's.
	again := newBrowser(t, h.URL)
	again.Login("admin", testAdminPassword)
	if _, body := again.Get("/password"); !strings.Contains(body, `<html lang="en">`) {
		t.Errorf("a new session of the same user lost the language choice")
	}
	// Off-site "next" never leaves the console; an unknown language names the field.
	if resp, _ := b.Post("/language", url.Values{"language": {"zh-CN"}, "next": {"//evil.example/"}}); resp.Header.Get("Location") != "/" {
		t.Errorf("next=//evil.example/ redirected to %q", resp.Header.Get("Location"))
	}
	if resp, _ := b.Post("/language", url.Values{"language": {"fr"}}); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("language fr: %d, want 422", resp.StatusCode)
	}
	var n int
	if err := h.App.Store.SQL().QueryRowContext(context.Background(),
		"SELECT COUNT(*) FROM audit_log WHERE action = 'user.language' AND actor = 'admin'").Scan(&n); err != nil || n != 2 {
		t.Errorf("%d user.language audit entries (%v), want 2", n, err)
	}
	if _, body := b.Get("/password"); !strings.Contains(body, `<html lang="zh-CN">`) {
		t.Errorf("after choosing zh-CN the page is not in Chinese")
	}
}
