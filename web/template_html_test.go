package web_test

import (
	"context"
	"fmt"
	"herald/sending"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A template's HTML version: saved from the form, previewed as escaped source, rendered
// into email messages only (a sandbox message of the same template has none).
func TestTemplateHTMLVersion(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	op := c.as(operatorUser)
	form := url.Values{"name": {"vault-audit"}, "msg_type": {"text"}, "variables": {"task"},
		"body": {"Audit: {{.task}}"}, "html": {"<p>Audit: <b>{{.task}}</b></p>"}, "samples": {"task = <vault>"}}
	_, preview := op.postHX("/templates/preview", form)
	wantContains(t, "preview", preview, `id="preview-html"`, "&lt;p&gt;Audit: &lt;b&gt;&amp;lt;vault&amp;gt;&lt;/b&gt;&lt;/p&gt;")
	resp, body := op.post("/templates", form)
	wantRedirect(t, "create", resp, body, "/templates")
	tm, err := c.store.Templates().TemplateByName(ctx, "vault-audit")
	if err != nil || tm.HTML != "<p>Audit: <b>{{.task}}</b></p>" {
		t.Fatalf("stored %+v, %v", tm, err)
	}
	_, edit := op.get("/templates/vault-audit/edit")
	wantContains(t, "edit form", edit, `name="html"`, "&lt;p&gt;Audit: &lt;b&gt;{{.task}}&lt;/b&gt;&lt;/p&gt;")

	mail := &sending.Account{Name: "mail", Platform: "email", Enabled: true, Healthy: true, AllowPrivateNetwork: true, MaxAttempts: 3,
		Config: map[string]string{"host": "127.0.0.1", "port": "1", "from": "herald@example.com", "tls": "none"}}
	if err := c.store.Sending().SaveAccount(ctx, mail); err != nil {
		t.Fatal(err)
	}
	sandbox, err := c.store.Sending().AccountByName(ctx, "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	for _, acct := range []*sending.Account{mail, sandbox} {
		resp, body := op.post("/compose", url.Values{"account": {fmt.Sprint(acct.ID)}, "template": {tm.Name},
			"variables.task": {"ledger & vault"}, "priority": {"normal"}, "recipient": {fmt.Sprint(c.recipient("E2001").ID)}})
		loc := wantRedirect(t, "compose on "+acct.Platform, resp, body, "/batches/")
		msgs, err := c.store.MessagesOfBatch(ctx, strings.TrimPrefix(loc, "/batches/"), 5)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("%s batch: %v, %v", acct.Platform, msgs, err)
		}
		want := ""
		if acct.Platform == "email" {
			want = "<p>Audit: <b>ledger &amp; vault</b></p>"
		}
		if msgs[0].ContentHTML != want || msgs[0].Content != "Audit: ledger & vault" {
			t.Errorf("%s message: text %q, HTML %q; want HTML %q", acct.Platform, msgs[0].Content, msgs[0].ContentHTML, want)
		}
	}
	if resp, body := op.get("/templates"); resp.StatusCode != http.StatusOK {
		t.Errorf("template list: %d %s", resp.StatusCode, body)
	}
}
