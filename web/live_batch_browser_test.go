package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"herald/i18n"
	"herald/web"
)

// In a Chinese browser at 1366, 768 and 390 px: a batch page open while one of its
// messages stops offers 重新发送 without a reload; and a template saved from the editor
// unchanged (the browser sends the textarea's lines ending in CR LF) makes a version
// that diffs clean against the one it showed.
func TestBrowserBatchPageFollowsAStopAndTemplateSavesClean(t *testing.T) {
	t.Parallel()
	c := newConsole(t, func(o *web.Options) { o.DefaultLanguage = i18n.Chinese })
	ctx := c.chineseBrowser(t, adminUser)
	q := chromedp.ByQuery
	for _, width := range []int64{1366, 768, 390} {
		msgs := c.send(nil, "E2001", "E2002")
		var offered bool
		if err := chromedp.Run(ctx, chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(c.url+"/batches/"+msgs["E2001"].BatchID), chromedp.WaitVisible(`#batch-progress`, q),
			chromedp.Evaluate(`window.loadedOnce = true`, nil)); err != nil {
			t.Fatalf("%d px: %v", width, err)
		}
		c.stop(msgs["E2001"].ID)
		if err := chromedp.Run(ctx,
			chromedp.WaitVisible(`#batch-actions form[action$="/resend"] button`, q),
			chromedp.Evaluate(`window.loadedOnce === true && [...document.querySelectorAll('#batch-actions button')].some(b => b.textContent.includes('重新发送'))`, &offered),
		); err != nil {
			t.Fatalf("%d px: waiting for 重新发送: %v", width, err)
		}
		if !offered {
			t.Errorf("%d px: 重新发送 came with a reload, or reads otherwise", width)
		}
	}

	op := c.as(operatorUser)
	const text = "逾期：{{.task}}\n请今天处理。\n\n运营部"
	save := url.Values{"name": {"task-overdue"}, "msg_type": {"text"}, "variables": {"task"}, "subject": {"任务逾期"}, "body": {text}}
	resp, page := op.post("/templates/task-overdue/edit", save)
	wantRedirect(t, "save", resp, page, "/templates")
	before := c.templateVersion("task-overdue")
	if err := chromedp.Run(ctx, chromedp.EmulateViewport(1366, 900),
		chromedp.Navigate(c.url+"/templates/task-overdue/edit"), chromedp.WaitVisible(`#body`, q),
		// A change elsewhere, so that the save makes a version; the body as it was.
		chromedp.SendKeys(`#subject`, kb.End+"！", q),
		// The list the save leads to, not a table the editor may show too.
		chromedp.Submit(`#body`, q), chromedp.WaitNotPresent(`#body`, q), chromedp.WaitVisible(`main table`, q),
	); err != nil {
		t.Fatal(err)
	}
	after := c.templateVersion("task-overdue")
	if after != before+1 {
		t.Fatalf("saving from the browser made version %d after %d", after, before)
	}
	resp, body := op.get(fmt.Sprintf("/templates/task-overdue/diff?a=%d&b=%d", before, after))
	wantStatus(t, "diff", resp, body, http.StatusOK)
	i := strings.Index(body, `data-field="body"`)
	if i < 0 {
		t.Fatalf("the diff page has no table of the body:\n%s", body)
	}
	table := body[i:]
	table = table[:strings.Index(table, "</table>")]
	if strings.Contains(table, "diff-removed") || strings.Contains(table, "diff-added") {
		t.Errorf("the body saved from the browser diffs against the one it showed:\n%s", table)
	}
	if !strings.Contains(body, "diff-removed") && !strings.Contains(body, "diff-added") {
		t.Errorf("the subject's change is not in the diff: the page shows no change at all")
	}
}

// templateVersion is the current version of the template named name.
func (c *console) templateVersion(name string) int {
	c.t.Helper()
	t, err := c.store.Templates().TemplateByName(context.Background(), name)
	if err != nil {
		c.t.Fatal(err)
	}
	return t.Version
}
