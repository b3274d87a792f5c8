package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"herald/models"
	"herald/silence"
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
	list, err := silence.Of(c.store).Silences(ctx, 0, time.Time{}, 10)
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
	if s, _ := silence.Of(c.store).SilenceByID(ctx, id); s.Matchers[0].Value != "Credit" {
		t.Errorf("edited matchers %+v", s.Matchers)
	}
	resp, body = op.post(fmt.Sprintf("/silences/%d/expire", id), nil)
	wantRedirect(t, "expire", resp, body, "/silences")
	if s, _ := silence.Of(c.store).SilenceByID(ctx, id); s.State(time.Now()) != "expired" || s.ExpiredBy != operatorUser {
		t.Errorf("after expiring: %s by %q", s.State(time.Now()), s.ExpiredBy)
	}
	if a := c.lastAudit("silence.expire"); a.Actor != operatorUser {
		t.Errorf("expire audit %+v", a)
	}

	// No matcher at all: it waits for someone other than its maker.
	resp, body = op.post("/silences", form())
	wantRedirect(t, "save everything", resp, body, "/silences")
	list, _ = silence.Of(c.store).Silences(ctx, 0, time.Time{}, 10)
	wide := list[0]
	if wide.Approval != models.ApprovalAwaiting {
		t.Fatalf("a silence of everything: approval %q", wide.Approval)
	}
	approve := fmt.Sprintf(`action="/silences/%d/approve"`, wide.ID)
	_, page = op.get("/silences?state=pending")
	wantContains(t, "maker's list", page, "Awaiting approval")
	wantNotContains(t, "maker's list", page, approve)
	op.post(fmt.Sprintf("/silences/%d/approve", wide.ID), nil)
	if s, _ := silence.Of(c.store).SilenceByID(ctx, wide.ID); s.Approval != models.ApprovalAwaiting {
		t.Errorf("its maker approved it: %q", s.Approval)
	}
	_, page = admin.get("/silences")
	wantContains(t, "another's list", page, approve)
	resp, body = admin.post(fmt.Sprintf("/silences/%d/approve", wide.ID), nil)
	wantRedirect(t, "approve", resp, body, "/silences")
	if s, _ := silence.Of(c.store).SilenceByID(ctx, wide.ID); s.Approval != models.ApprovalApproved || s.State(time.Now()) != "active" {
		t.Errorf("approved: %q, %s", s.Approval, s.State(time.Now()))
	}
}

// silenceBody is a silence for the API from a minute ago for d, with matchers as JSON.
func silenceBody(matchers, onEnd string, d time.Duration) string {
	return fmt.Sprintf(`{"matchers":%s,"starts_at":%q,"ends_at":%q,"comment":"core banking upgrade","on_end":%q}`, matchers,
		time.Now().Add(-time.Minute).Format(time.RFC3339), time.Now().Add(d).Format(time.RFC3339), onEnd)
}

// The silences API: bad input is 422 naming the field with nothing written; a send key
// sees and changes only its own silences, an admin key any; DELETE expires.
func TestSilencesAPI(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	own, other, admin := c.apiKey("test-send", "send"), c.apiKey("test-send-read", "send,read"), c.apiKey("test-admin", "admin")
	now := time.Now()
	for _, bad := range []struct{ body, field string }{
		{silenceBody(`[{"name":"host","value":"db1"}]`, "release", time.Hour), "matchers[0].name"},
		{silenceBody(`[{"name":"platform","value":"wecom"},{"name":"template","value":"disk-(","regex":true}]`, "release", time.Hour), "matchers[1].value"},
		{fmt.Sprintf(`{"matchers":[],"starts_at":%q,"ends_at":%q,"comment":"x"}`, now.Add(time.Hour).Format(time.RFC3339), now.Add(time.Minute).Format(time.RFC3339)), "ends_at"},
		{silenceBody(`[{"name":"platform","value":"wecom"}]`, "drop", time.Hour), "on_end"},
	} {
		if status, body, _ := own.call("POST", "/api/v1/silences", bad.body); status != http.StatusUnprocessableEntity || errorField(body) != bad.field {
			t.Errorf("%s: %d %s, want 422 naming %s", bad.body, status, body["_raw"], bad.field)
		}
	}
	if n := c.countRows("silences"); n != 0 {
		t.Errorf("refused silences left %d rows", n)
	}
	if status, body, _ := own.call("GET", "/api/v1/silences?state=paused", ""); status != http.StatusUnprocessableEntity || errorField(body) != "state" {
		t.Errorf("state=paused: %d %s", status, body["_raw"])
	}

	status, created, _ := own.call("POST", "/api/v1/silences", silenceBody(`[{"name":"department","value":"Counter"}]`, "", time.Hour))
	if status != http.StatusCreated || created["state"] != "active" || created["on_end"] != "release" || created["approval"] != "none" {
		t.Fatalf("create: %d %s", status, created["_raw"])
	}
	path := "/api/v1/silences/" + strconv.FormatFloat(created["id"].(float64), 'f', 0, 64)
	if status, body, _ := other.call("GET", path, ""); status != http.StatusNotFound {
		t.Errorf("another send key reading it: %d %s", status, body["_raw"])
	}
	if status, body, _ := other.call("DELETE", path, ""); status != http.StatusNotFound {
		t.Errorf("another send key expiring it: %d %s", status, body["_raw"])
	}
	if _, body, _ := other.call("GET", "/api/v1/silences", ""); len(body["silences"].([]any)) != 0 {
		t.Errorf("another send key lists %s", body["_raw"])
	}
	if status, body, _ := admin.call("GET", path, ""); status != http.StatusOK {
		t.Errorf("an admin key reading it: %d %s", status, body["_raw"])
	}
	status, updated, _ := own.call("PUT", path, silenceBody(`[{"name":"department","value":"Credit"}]`, "cancel", 2*time.Hour))
	if m := updated["matchers"].([]any); status != http.StatusOK || updated["on_end"] != "cancel" || m[0].(map[string]any)["value"] != "Credit" {
		t.Errorf("update: %d %s", status, updated["_raw"])
	}
	if status, body, _ := own.call("PUT", path, silenceBody(`[]`, "cancel", 2*time.Hour)); status != http.StatusOK || body["approval"] != "awaiting_approval" || body["state"] != "pending" {
		t.Errorf("widened to everything: %d %s, want it pending approval", status, body["_raw"])
	}
	if status, body, _ := own.call("DELETE", path, ""); status != http.StatusOK || body["state"] != "expired" {
		t.Errorf("expire: %d %s", status, body["_raw"])
	}
	if status, body, _ := own.call("DELETE", path, ""); status != http.StatusConflict {
		t.Errorf("expire again: %d %s", status, body["_raw"])
	}
	if _, body, _ := own.call("GET", "/api/v1/silences?state=expired", ""); len(body["silences"].([]any)) != 1 {
		t.Errorf("expired silences: %s", body["_raw"])
	}
	var audits int
	if err := c.store.SQL().QueryRow("SELECT COUNT(*) FROM audit_log WHERE action IN ('silence.create', 'silence.update', 'silence.expire')").Scan(&audits); err != nil || audits != 4 {
		t.Errorf("%d audit entries of silences (%v), want 4 (create, two updates, expire)", audits, err)
	}
}
