package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"herald/directory"
	"herald/templates"
)

// addChineseStaff adds three branch staff with Chinese names, returning them by name.
func addChineseStaff(t *testing.T, c *console) map[string]*directory.Recipient {
	t.Helper()
	out := map[string]*directory.Recipient{}
	for i, p := range []struct{ name, branch, dept string }{
		{"张伟", "浦东分行", "营业部"}, {"王磊", "徐汇分行", "营业部"}, {"李娜", "徐汇分行", "信贷部"},
	} {
		r := &directory.Recipient{ExternalID: fmt.Sprintf("C00%d", i+1), Name: p.name, OrgType: directory.Branch,
			Branch: p.branch, Department: p.dept, Active: true}
		if err := c.store.Directory().CreateRecipient(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		out[p.name] = r
	}
	return out
}

// checkbox is a recipient's checkbox as the compose form renders it, ticked or not.
func checkbox(r *directory.Recipient, ticked bool) string {
	s := fmt.Sprintf(`name="recipient" value="%d"`, r.ID)
	if ticked {
		s += " checked"
	}
	return s
}

func TestComposePeopleSearch(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	op := c.as(operatorUser)
	zh := addChineseStaff(t, c)

	t.Run("the list sorts Chinese names by pinyin among Latin ones", func(t *testing.T) {
		resp, body := op.get("/compose")
		wantStatus(t, "compose", resp, body, http.StatusOK)
		wantContains(t, "compose", body, `id="people-q"`, `form="compose-search"`, `hx-get="/compose/people"`,
			`name="branch" value="Pudong Branch"`, `name="branch" value="浦东分行"`)
		order := []string{"李娜", "Li Wei", "Liu Yang", "Wang Fang", "王磊", "Zhang Min", "张伟", "Zhao Lei"}
		last := -1
		for _, name := range order {
			i := strings.Index(body, "<span>"+name+" ")
			if i < 0 || i < last {
				t.Fatalf("%s at %d, after the previous at %d: want the order %v", name, i, last, order)
			}
			last = i
		}
	})

	t.Run("pinyin initials find a Chinese name", func(t *testing.T) {
		resp, body := op.getHX("/compose/people?q=zw")
		wantStatus(t, "search", resp, body, http.StatusOK)
		wantContains(t, "search zw", body, `id="compose-people"`, checkbox(zh["张伟"], false), "C001")
		wantNotContains(t, "search zw", body, checkbox(zh["王磊"], false), checkbox(zh["李娜"], false), `name="recipient" value="`+fmt.Sprint(c.recipient("E1001").ID)+`"`)
	})

	t.Run("name, id, branch and department", func(t *testing.T) {
		for q, want := range map[string]string{"liu": "E2001", "e2003": "E2003", "Xuhui": "E2002", "信贷": "C003", "徐汇": "C002"} {
			_, body := op.getHX("/compose/people?q=" + url.QueryEscape(q))
			wantContains(t, "search "+q, body, `<span class="muted">`+want)
			if n := strings.Count(body, `name="recipient"`); q != "徐汇" && n != 1 {
				t.Errorf("search %q lists %d people, want 1", q, n)
			}
		}
		_, body := op.getHX("/compose/people?q=nobody-here")
		wantContains(t, "no match", body, `id="compose-no-match"`, "Nobody matches")
	})

	t.Run("a search keeps the people already ticked", func(t *testing.T) {
		q := url.Values{"q": {"zw"}, "recipient": {fmt.Sprint(zh["王磊"].ID), fmt.Sprint(zh["张伟"].ID)}}
		_, body := op.getHX("/compose/people?" + q.Encode())
		wantContains(t, "search with ticks", body, `id="compose-chosen"`, checkbox(zh["王磊"], true), checkbox(zh["张伟"], true))
		if n := strings.Count(body, checkbox(zh["王磊"], false)); n != 1 {
			t.Errorf("王磊 listed %d times, want once", n)
		}
	})

	t.Run("without htmx the page narrows the list", func(t *testing.T) {
		_, body := op.get("/compose?q=" + url.QueryEscape("王"))
		wantContains(t, "compose?q=王", body, checkbox(zh["王磊"], false), `value="王"`)
		wantNotContains(t, "compose?q=王", body, checkbox(zh["张伟"], false))
	})
}

func TestComposeWholeBranchAndPreviewMessage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	op := c.as(operatorUser)
	sandbox, err := c.store.Sending().AccountByName(ctx, "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	account := fmt.Sprint(sandbox.ID)
	if err := c.store.Templates().CreateTemplate(ctx, &templates.Template{Name: "greet", MsgType: "text", Subject: "For {{.recipient.name}}",
		Body: "Dear {{.recipient.name}} of {{.recipient.branch}}: {{.task}}", Variables: templates.StringList{"task"}}); err != nil {
		t.Fatal(err)
	}

	t.Run("a whole branch reaches its active members", func(t *testing.T) {
		form := url.Values{"account": {account}, "content.text": {"Branch meeting at 5"}, "priority": {"normal"}, "branch": {"Pudong Branch"}}
		resp, body := op.postHX("/compose/preview", form)
		wantStatus(t, "preview", resp, body, http.StatusOK)
		wantContains(t, "preview", body, `<strong id="preview-count">2</strong>`, `data-receives="E2001"`, `data-receives="E2003"`)
		wantNotContains(t, "preview", body, `data-receives="E2002"`, "E2001 · E2001")

		resp, body = op.post("/compose", form)
		loc := wantRedirect(t, "send", resp, body, "/batches/")
		msgs, err := c.store.MessagesOfBatch(ctx, strings.TrimPrefix(loc, "/batches/"), 10)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, m := range msgs {
			got[m.RecipientExternalID] = true
		}
		if len(got) != 2 || !got["E2001"] || !got["E2003"] {
			t.Errorf("batch went to %v, want E2001 and E2003", got)
		}

		// The batch page shows what was sent and leads to each message.
		_, page := op.get(loc)
		wantContains(t, "batch page", page, `id="batch-content"`, "Branch meeting at 5", `href="/messages/`+msgs[0].ID+`"`)

		// A branch with nobody active in it is an error beside Recipients, not an empty batch.
		form.Set("branch", "Nowhere Branch")
		resp, body = op.post("/compose", form)
		wantStatus(t, "empty branch", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "recipients", "no active members")
	})

	t.Run("the preview shows the message as the chosen person receives it", func(t *testing.T) {
		form := url.Values{"account": {account}, "template": {"greet"}, "variables.task": {"file the report"}, "priority": {"normal"},
			"recipient": {fmt.Sprint(c.recipient("E2003").ID), fmt.Sprint(c.recipient("E2001").ID)}}
		resp, body := op.postHX("/compose/preview", form)
		wantStatus(t, "preview", resp, body, http.StatusOK)
		// The first by name unless another is chosen: Liu Yang before Sun Li.
		wantContains(t, "preview", body, `id="preview_for"`, `<option value="`+fmt.Sprint(c.recipient("E2001").ID)+`" selected>Liu Yang (E2001)</option>`,
			"For Liu Yang", "Dear Liu Yang of Pudong Branch: file the report")
		wantNotContains(t, "preview", body, "Dear Sun Li")

		form.Set("preview_for", fmt.Sprint(c.recipient("E2003").ID))
		_, body = op.postHX("/compose/preview", form)
		wantContains(t, "preview for Sun Li", body, "For Sun Li", "Dear Sun Li of Pudong Branch: file the report")
		wantNotContains(t, "preview for Sun Li", body, "Dear Liu Yang")

		// Someone not among the receivers falls back to the first.
		form.Set("preview_for", fmt.Sprint(c.recipient("E2002").ID))
		_, body = op.postHX("/compose/preview", form)
		wantContains(t, "preview for an outsider", body, "Dear Liu Yang of Pudong Branch")
	})

	t.Run("errors name fields as the form labels them", func(t *testing.T) {
		_, body := op.postHX("/compose/preview", url.Values{"account": {account}, "content.text": {"x"}, "send_at": {"soon"}})
		wantContains(t, "preview errors", body, "Send at: must be a date and time")
		_, body = op.postHX("/compose/preview", url.Values{"account": {account}, "content.text": {"x"}})
		wantContains(t, "preview errors", body, "Recipients: tick at least one person")
		wantNotContains(t, "preview errors", body, "to_on_duty", "send_at")
	})
}

func TestMessagesSearchByRecipientName(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	op := c.as(operatorUser)
	zh := addChineseStaff(t, c)
	sandbox, err := c.store.Sending().AccountByName(ctx, "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	long := "Quarterly figures are due: " + strings.TrimSpace(strings.Repeat("please check every ledger line. ", 5))
	for _, people := range [][]string{{fmt.Sprint(zh["张伟"].ID)}, {fmt.Sprint(zh["王磊"].ID), fmt.Sprint(c.recipient("E2001").ID)}} {
		resp, body := op.post("/compose", url.Values{"account": {fmt.Sprint(sandbox.ID)}, "content.subject": {"Figures"},
			"content.text": {long}, "priority": {"normal"}, "recipient": people})
		wantRedirect(t, "send", resp, body, "/batches/")
	}

	_, body := op.get("/messages?name=" + url.QueryEscape("张"))
	wantContains(t, "name 张", body, `id="name"`, `value="张"`, "张伟", `title="Figures`+"\n"+long+`"`, "data-content")
	wantNotContains(t, "name 张", body, "王磊", "Liu Yang")
	if n := strings.Count(body, "<tr data-message="); n != 1 {
		t.Errorf("name 张 lists %d messages, want 1", n)
	}

	_, body = op.get("/messages?name=Liu")
	wantContains(t, "name Liu", body, "Liu Yang", "Figures — Quarterly figures")
	wantNotContains(t, "name Liu", body, "张伟", "王磊")

	// A Chinese name is found by its pinyin, whole or by initials, as the people
	// picker finds it.
	for _, q := range []string{"zhangwei", "zw", "wei"} {
		_, body = op.get("/messages?name=" + q)
		wantContains(t, "name "+q, body, "张伟")
		wantNotContains(t, "name "+q, body, "王磊", "Liu Yang")
	}

	// The name stays in the links of the next page and of the bulk re-send.
	_, body = op.get("/messages?name=%25")
	if n := strings.Count(body, "<tr data-message="); n != 0 {
		t.Errorf("name %% lists %d messages, want none: %% is no wildcard", n)
	}
	wantContains(t, "resend link", body, "name=%25")
}

// The step editors' people picker finds people as compose's does (pinyin initials
// among them), in pinyin order, each a button adding them to the row asked; the editors
// answer their rows changed as asked, saving nothing.
func TestStepEditorsPickAndChangeRows(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	zh := addChineseStaff(t, c)
	admin := c.as(adminUser)
	resp, body := admin.get("/people/pick?editor=policy&row=1&q=" + url.QueryEscape("徐汇"))
	wantStatus(t, "pick", resp, body, http.StatusOK)
	li, wang := strings.Index(body, `data-pick="`+zh["李娜"].ExternalID+`"`), strings.Index(body, `data-pick="`+zh["王磊"].ExternalID+`"`)
	if li < 0 || wang < li || strings.Contains(body, zh["张伟"].ExternalID) {
		t.Errorf("徐汇 finds 李娜 at %d and 王磊 at %d (want both, in pinyin order, and nobody else):\n%s", li, wang, body)
	}
	wantContains(t, "pick adds to row 1", body, `add_person:1:`+zh["李娜"].ExternalID)
	_, body = admin.get("/people/pick?editor=rotation&row=0&q=zw")
	wantContains(t, "pinyin initials", body, `data-pick="`+zh["张伟"].ExternalID+`"`)
	resp, body = admin.get("/people/pick?editor=nosuch&row=0&q=zw")
	wantStatus(t, "an unknown editor", resp, body, http.StatusNotFound)

	steps := url.Values{"step.0.target": {"on_duty", "E1001"}, "step.0.wait": {"10m"}, "step.0.choice": {"rotation:x"}}
	for _, tc := range []struct {
		op       string
		want     []string
		unwanted []string
	}{
		{"add_step", []string{`id="step-1"`, `name="step.1.wait" value="10m"`, `data-picked="E1001"`}, nil},
		{"remove_target:0:0", []string{`data-picked="E1001"`, "Li Wei (E1001)"}, []string{`data-picked="on_duty"`}},
		{"add_person:0:E1002", []string{`data-picked="on_duty"`, `data-picked="E1001"`, `data-picked="E1002"`}, nil},
		{"add_choice:0", []string{`data-picked="rotation:x"`}, nil},
	} {
		v := url.Values{"op": {tc.op}}
		for k, list := range steps {
			v[k] = list
		}
		resp, body := admin.postHX("/escalation-policies/editor", v)
		wantStatus(t, tc.op, resp, body, http.StatusOK)
		wantContains(t, tc.op, body, tc.want...)
		wantNotContains(t, tc.op, body, tc.unwanted...)
	}
	resp, body = admin.postHX("/duty/rotations/editor", url.Values{"op": {"remove_step:0"}, "turn.0.at": {"1"}, "turn.0.member": {"E1001"},
		"turn.1.at": {"1"}, "turn.1.member": {"E1002"}})
	wantStatus(t, "remove a turn", resp, body, http.StatusOK)
	wantContains(t, "remove a turn", body, `name="turn.0.member" value="E1002"`)
	wantNotContains(t, "remove a turn", body, `value="E1001"`, `id="turn-1"`)
	if list, err := c.store.Duty().Rotations(t.Context()); err != nil || len(list) != 0 {
		t.Errorf("the editor saved rotations: %v, %v", list, err)
	}
}
