package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"herald/models"
)

// The compose form and the template editor set a digest; the message page says where a
// notice waits and which digest carried it, and a digest's page lists its notices.
func TestDigestForms(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	op := c.as(operatorUser)
	sandbox, err := c.store.Sending().AccountByName(ctx, "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	base := func() url.Values {
		return url.Values{"account": {fmt.Sprint(sandbox.ID)}, "content.subject": {"日终批量失败"}, "content.text": {"详情见系统"},
			"priority": {"normal"}, "recipient": {fmt.Sprint(c.recipient("E2001").ID)},
			"digest.key": {"eod"}, "digest.window": {"5m"}, "digest.max": {"2"}}
	}

	_, body := op.get("/compose")
	wantContains(t, "compose form", body, `name="digest.key"`, `name="digest.window"`, `name="digest.max"`)

	for _, tt := range []struct {
		name, field, value, want string
	}{
		{"no key", "digest.key", "", "Give the digest a key"},
		{"window too short", "digest.window", "5s", "A window from 10s to 24h"},
		{"max not a number", "digest.max", "many", "At most from 2 to 500 notices."},
		{"max too large", "digest.max", "501", "At most from 2 to 500 notices."},
	} {
		form := base()
		form.Set(tt.field, tt.value)
		before, _ := c.store.RecentBatches(ctx, 100)
		resp, body := op.post("/compose", form)
		wantStatus(t, tt.name, resp, body, http.StatusUnprocessableEntity)
		// The error stands beside its field, and the form keeps what was typed.
		wantContains(t, tt.name, body, tt.want, `<details class="digest" open`, `value="`+tt.value+`"`)
		if after, _ := c.store.RecentBatches(ctx, 100); len(after) != len(before) {
			t.Errorf("%s: a refused form wrote a batch", tt.name)
		}
	}

	resp, body := op.post("/compose", base())
	loc := wantRedirect(t, "send with a digest", resp, body, "/batches/")
	msgs, err := c.store.MessagesOfBatch(ctx, strings.TrimPrefix(loc, "/batches/"), 10)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("batch messages %v, %v", msgs, err)
	}
	first := msgs[0]
	if first.Status != models.StatusPending || models.DigestKeyOf(first.DigestSlot) != "eod" || first.DigestMax != 2 {
		t.Fatalf("notice: status %s, slot %q, max %d", first.Status, first.DigestSlot, first.DigestMax)
	}
	_, page := op.get("/messages/" + first.ID)
	wantContains(t, "waiting notice", page, "data-digest-waiting", "Waiting in digest eod until")

	// The second notice fills the group: it is folded at once.
	form := base()
	form.Set("content.subject", "对账失败")
	resp, body = op.post("/compose", form)
	wantRedirect(t, "second notice", resp, body, "/batches/")
	m, err := c.store.MessageByID(ctx, first.ID)
	if err != nil || m.Status != models.StatusDigested || m.DigestMessageID == nil {
		t.Fatalf("first notice after the second: %+v, %v", m, err)
	}
	_, page = op.get("/messages/" + first.ID)
	wantContains(t, "digested notice", page, `data-status="digested"`, "Folded into digest", `href="/messages/`+*m.DigestMessageID+`"`)
	_, page = op.get("/messages/" + *m.DigestMessageID)
	wantContains(t, "digest", page, "2 条通知", "• 日终批量失败\n• 对账失败", "Notices in this digest (2)", `href="/messages/`+first.ID+`"`)

	// The template editor keeps a default digest; a bad one is refused beside its field.
	tmpl := url.Values{"name": {"eod-failed"}, "msg_type": {"text"}, "variables": {"job"}, "body": {"批量 {{.job}} 失败"},
		"digest.key": {"eod"}, "digest.window": {"10m"}, "digest.max": {"30"}}
	resp, body = op.post("/templates", tmpl)
	wantRedirect(t, "template with a digest", resp, body, "/templates")
	saved, err := c.store.Templates().TemplateByName(ctx, "eod-failed")
	if err != nil || saved.Digest != `{"key":"eod","window":"10m","max":30}` {
		t.Fatalf("template digest %q, %v", saved.Digest, err)
	}
	_, edit := op.get("/templates/eod-failed/edit")
	wantContains(t, "edit form", edit, `name="digest.window" placeholder="5m" value="10m"`, `value="30"`)
	tmpl.Set("digest.window", "25h")
	resp, body = op.post("/templates/eod-failed/edit", tmpl)
	wantStatus(t, "template with a 25h window", resp, body, http.StatusUnprocessableEntity)
	wantContains(t, "template with a 25h window", body, "A window from 10s to 24h")
}
