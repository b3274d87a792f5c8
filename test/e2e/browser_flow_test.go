package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"herald/directory"
	"herald/internal/testenv"
	"herald/templates"
)

// TestBrowserOperatorFlow drives what an operator does in Chromium: find a person by the
// pinyin initials of their name, tick them, see the message as they will receive it,
// send it, and follow the batch page to the message page, which shows what was sent.
func TestBrowserOperatorFlow(t *testing.T) {
	t.Parallel()
	h := startHerald(t, testEnv(t))
	ctx := testenv.Chrome(t)
	store := h.App.Store
	bg := context.Background()
	zw := &directory.Recipient{ExternalID: "C2001", Name: "张伟", OrgType: directory.Branch, Branch: "浦东分行", Department: "营业部", Active: true}
	wl := &directory.Recipient{ExternalID: "C2002", Name: "王磊", OrgType: directory.Branch, Branch: "浦东分行", Department: "营业部", Active: true}
	for _, r := range []*directory.Recipient{zw, wl} {
		if err := store.Directory().CreateRecipient(bg, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Templates().CreateTemplate(bg, &templates.Template{Name: "vault-check", MsgType: "text", Subject: "Vault check for {{.recipient.name}}",
		Body: "Dear {{.recipient.name}} of {{.recipient.branch}}: {{.task}}", Variables: templates.StringList{"task"}}); err != nil {
		t.Fatal(err)
	}
	if err := browserLogin(ctx, h.URL, "admin", testAdminPassword); err != nil {
		t.Fatalf("log in: %v", err)
	}
	q := chromedp.ByQuery
	want := "Dear 张伟 of 浦东分行: count the vault by 5 pm"

	// Search: typing "zw" narrows the list to 张伟 without a reload.
	if err := chromedp.Run(ctx,
		chromedp.Navigate(h.URL+"/compose"),
		chromedp.WaitVisible(`#people-q`, q),
		chromedp.SendKeys(`#people-q`, "zw", q),
	); err != nil {
		t.Fatalf("search: %v", err)
	}
	if _, err := waitText(ctx, `#compose-list`, func(s string) bool {
		return strings.Contains(s, "张伟") && !strings.Contains(s, "王磊") && !strings.Contains(s, "Li Wei")
	}); err != nil {
		t.Fatalf("the search did not narrow the list to 张伟: %v", err)
	}

	// Pick them and a template, and preview the message as they receive it.
	if err := chromedp.Run(ctx,
		chromedp.Click(fmt.Sprintf(`#compose-list input[name="recipient"][value="%d"]`, zw.ID), q),
		chromedp.SetValue(`#template`, "vault-check", q),
		chromedp.WaitVisible(`input[name="variables.task"]`, q),
		chromedp.SendKeys(`input[name="variables.task"]`, "count the vault by 5 pm", q),
		chromedp.Click(`button[hx-post="/compose/preview"]`, q),
	); err != nil {
		t.Fatalf("pick and preview: %v", err)
	}
	if _, err := waitText(ctx, `#preview-message`, func(s string) bool { return strings.Contains(s, want) }); err != nil {
		t.Fatalf("the preview does not show the rendered message: %v", err)
	}
	if text, _ := waitText(ctx, `#compose-preview`, func(string) bool { return true }); !strings.Contains(text, "Vault check for 张伟") {
		t.Errorf("the preview lacks the rendered title:\n%s", text)
	}

	// Send, and follow the batch page to the message.
	if err := chromedp.Run(ctx,
		chromedp.Click(`#compose button[type="submit"]`, q),
		chromedp.WaitVisible(`#batch-content`, q),
	); err != nil {
		t.Fatalf("send: %v", err)
	}
	if _, err := waitText(ctx, `#batch-content`, func(s string) bool { return strings.Contains(s, want) }); err != nil {
		t.Fatalf("the batch page does not show the content: %v", err)
	}
	if _, err := waitText(ctx, `#batch-summary strong`, func(s string) bool { return s == "100.0%" }); err != nil {
		t.Fatalf("batch page never reached 100%%: %v", err)
	}
	if err := chromedp.Run(ctx,
		chromedp.Click(`#batch-progress a[href^="/messages/"]`, q),
		chromedp.WaitNotPresent(`#batch-progress`, q),
		chromedp.WaitVisible(`pre.preview-body`, q),
	); err != nil {
		t.Fatalf("open the message: %v", err)
	}
	var url string
	if err := chromedp.Run(ctx, chromedp.Location(&url)); err != nil || !strings.Contains(url, "/messages/") {
		t.Fatalf("after the click the browser is at %s (%v), want a message page", url, err)
	}
	if _, err := waitText(ctx, `pre.preview-body`, func(s string) bool { return s == want }); err != nil {
		t.Fatalf("the message page does not show the content: %v", err)
	}
}
