package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"herald/directory"
	"herald/models"
	"herald/silence"
)

// The silence form tells of the second person a broad silence needs, in the preview and
// after the save, and places the new refusals beside their field, in both languages.
func TestConsoleSilenceNeedsSecondPerson(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	op := c.as(operatorUser)
	at := func(d time.Duration) string { return time.Now().In(c.loc).Add(d).Format("2006-01-02T15:04") }
	form := func(name, value string, regex bool) url.Values {
		f := url.Values{"starts_at": {at(-time.Minute)}, "ends_at": {at(2 * time.Hour)}, "comment": {"core banking upgrade"},
			"on_end": {"release"}, "name_0": {name}, "value_0": {value}}
		if regex {
			f.Set("regex_0", "1")
		}
		return f
	}

	resp, body := op.postHX("/silences/preview", form("priority", ".+", true))
	wantStatus(t, "preview of a regex", resp, body, http.StatusOK)
	wantContains(t, "preview of a regex", body, `data-approval="needed"`, "Saved, it would wait for another person",
		"a regular expression may hold more than it seems")
	resp, body = op.postHX("/silences/preview", form("department", "Counter", false))
	wantStatus(t, "preview of a department", resp, body, http.StatusOK)
	wantContains(t, "preview of a department", body, `data-approval="none"`)

	resp, body = op.post("/silences", form("priority", "high|normal|low", true))
	wantRedirect(t, "save a regex", resp, body, "/silences")
	_, page := op.get("/silences")
	wantContains(t, "after saving a regex", page, "holds nothing until another person approves it", `data-reason="regex"`)
	list, err := silence.Of(c.store).Silences(context.Background(), 0, time.Time{}, 10)
	if err != nil || len(list) != 1 || list[0].Approval != models.ApprovalAwaiting {
		t.Fatalf("saved: %+v (%v)", list, err)
	}

	for lang, want := range map[string]string{"en": "A silence starts at most 30 days ahead.", "zh-CN": "静默的开始时间最多在 30 天之后。"} {
		late := form("department", "Counter", false)
		late.Set("starts_at", at(31*24*time.Hour))
		late.Set("ends_at", at(31*24*time.Hour+time.Hour))
		resp, body := op.do("POST", "/silences", "application/x-www-form-urlencoded", strings.NewReader(late.Encode()),
			map[string]string{"Accept-Language": lang})
		wantStatus(t, lang+" starting in 31 days", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "starts_at", want)
	}
	resp, body = op.do("POST", "/silences/preview", "application/x-www-form-urlencoded", strings.NewReader(form("platform", "[a-z]+", true).Encode()),
		map[string]string{"Accept-Language": "zh-CN", "HX-Request": "true"})
	wantStatus(t, "zh-CN preview", resp, body, http.StatusOK)
	wantContains(t, "zh-CN preview", body, "保存后须经另一人批准才生效", "正则表达式的范围可能比看上去更宽")

	// Past the cap of one person's live silences: above the form, nothing written.
	// Each silence holds a person of its own, who must exist for it to hold anything.
	for _, i := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 999} {
		p := &directory.Recipient{ExternalID: fmt.Sprintf("E%d", 3000+i), Name: "Cap", OrgType: directory.Branch, Active: true}
		if err := c.store.Directory().CreateRecipient(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i < 20; i++ {
		resp, body := op.post("/silences", form("recipient", fmt.Sprintf("E%d", 3000+i), false))
		wantRedirect(t, fmt.Sprintf("silence %d", i), resp, body, "/silences")
	}
	resp, body = op.post("/silences", form("recipient", "E3999", false))
	wantStatus(t, "past the cap", resp, body, http.StatusUnprocessableEntity)
	wantContains(t, "past the cap", body, `role="alert"`, "You have 20 silences that have not ended")
}
