package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"herald/models"
)

// The silences page: the form's preview and save, errors beside the matcher row that
// caused them, editing, expiring, and the second person's approval of a silence that
// matches everything.
func TestConsoleSilences(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	admin, op, viewer := c.as(adminUser), c.as(operatorUser), c.as(viewerUser)
	c.send(nil, "E2001", "E2002", "E2003")
	at := func(d time.Duration) string { return time.Now().In(c.loc).Add(d).Format("2006-01-02T15:04") }
	form := func(rows ...string) url.Values {
		f := url.Values{"starts_at": {at(-time.Minute)}, "ends_at": {at(2 * time.Hour)}, "comment": {"core banking upgrade"}, "on_end": {"release"}}
		for i := 0; i+1 < len(rows); i += 2 {
			f.Set(fmt.Sprintf("name_%d", i/2), rows[i])
			f.Set(fmt.Sprintf("value_%d", i/2), rows[i+1])
		}
		return f
	}

	resp, body := op.get("/silences/new")
	wantStatus(t, "new silence", resp, body, http.StatusOK)
	wantContains(t, "new silence", body, `name="name_0"`, `name="value_5"`, `name="regex_0"`, `name="negate_0"`, `hx-post="/silences/preview"`)

	resp, body = op.postHX("/silences/preview", form("department", "Counter"))
	wantStatus(t, "preview", resp, body, http.StatusOK)
	wantContains(t, "preview", body, "would have held 2 messages")

	bad := form("department", "Counter")
	bad.Set("name_2", "template")
	bad.Set("value_2", "disk-(")
	bad.Set("regex_2", "1")
	resp, body = op.post("/silences", bad)
	wantStatus(t, "bad regex", resp, body, http.StatusUnprocessableEntity)
	wantContains(t, "bad regex", body, `id="error-value_2"`, "Not a valid regular expression")
	resp, body = op.post("/silences", form("department", "Counter", "host", "db1"))
	wantStatus(t, "unknown name", resp, body, http.StatusUnprocessableEntity)
	wantContains(t, "unknown name", body, `id="error-name_1"`)
	early := form("department", "Counter")
	early.Set("ends_at", at(-2*time.Minute))
	resp, body = op.post("/silences", early)
	wantStatus(t, "end before start", resp, body, http.StatusUnprocessableEntity)
	wantContains(t, "end before start", body, `id="error-ends_at"`)

	resp, body = op.post("/silences", form("department", "Counter"))
	wantRedirect(t, "save", resp, body, "/silences")
	list, err := c.store.Silences(ctx, 0, time.Time{}, 10)
	if err != nil || len(list) != 1 || list[0].Matchers[0].Value != "Counter" || list[0].CreatedBy != operatorUser {
		t.Fatalf("saved: %+v (%v)", list, err)
	}
	id := list[0].ID
	_, page := viewer.get("/silences")
	wantContains(t, "viewer's list", page, `data-matcher="department">Department <span class="mono">=&#34;Counter&#34;</span>`, "Active", "core banking upgrade")
	wantNotContains(t, "viewer's list", page, fmt.Sprintf(`action="/silences/%d/expire"`, id))
	_, page = op.get("/silences?state=active")
	wantContains(t, "operator's list", page, fmt.Sprintf(`action="/silences/%d/expire"`, id), "data-confirm=")

	resp, body = op.get(fmt.Sprintf("/silences/%d/edit", id))
	wantStatus(t, "edit form", resp, body, http.StatusOK)
	wantContains(t, "edit form", body, `value="Counter"`)
	resp, body = op.post(fmt.Sprintf("/silences/%d/edit", id), form("department", "Credit"))
	wantRedirect(t, "edit", resp, body, "/silences")
	if s, _ := c.store.SilenceByID(ctx, id); s.Matchers[0].Value != "Credit" {
		t.Errorf("edited matchers %+v", s.Matchers)
	}
	resp, body = op.post(fmt.Sprintf("/silences/%d/expire", id), nil)
	wantRedirect(t, "expire", resp, body, "/silences")
	if s, _ := c.store.SilenceByID(ctx, id); s.State(time.Now()) != "expired" || s.ExpiredBy != operatorUser {
		t.Errorf("after expiring: %s by %q", s.State(time.Now()), s.ExpiredBy)
	}
	if a := c.lastAudit("silence.expire"); a.Actor != operatorUser {
		t.Errorf("expire audit %+v", a)
	}

	// No matcher at all: it waits for someone other than its maker.
	resp, body = op.post("/silences", form())
	wantRedirect(t, "save everything", resp, body, "/silences")
	list, _ = c.store.Silences(ctx, 0, time.Time{}, 10)
	wide := list[0]
	if wide.Approval != models.ApprovalAwaiting {
		t.Fatalf("a silence of everything: approval %q", wide.Approval)
	}
	approve := fmt.Sprintf(`action="/silences/%d/approve"`, wide.ID)
	_, page = op.get("/silences?state=pending")
	wantContains(t, "maker's list", page, "Awaiting approval")
	wantNotContains(t, "maker's list", page, approve)
	op.post(fmt.Sprintf("/silences/%d/approve", wide.ID), nil)
	if s, _ := c.store.SilenceByID(ctx, wide.ID); s.Approval != models.ApprovalAwaiting {
		t.Errorf("its maker approved it: %q", s.Approval)
	}
	_, page = admin.get("/silences")
	wantContains(t, "another's list", page, approve)
	resp, body = admin.post(fmt.Sprintf("/silences/%d/approve", wide.ID), nil)
	wantRedirect(t, "approve", resp, body, "/silences")
	if s, _ := c.store.SilenceByID(ctx, wide.ID); s.Approval != models.ApprovalApproved || s.State(time.Now()) != "active" {
		t.Errorf("approved: %q, %s", s.Approval, s.State(time.Now()))
	}
}
