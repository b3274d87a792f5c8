package web_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"herald/audit"
	"herald/models"
	"herald/views"
)

// apiSend sends a message to people through the API with key, due in a day (so that it
// stays pending), and returns the batch id and the message ids.
func apiSend(t *testing.T, c *console, key string, people ...string) (string, []string) {
	t.Helper()
	list := ""
	for i, p := range people {
		if i > 0 {
			list += ","
		}
		list += fmt.Sprintf("%q", p)
	}
	sendAt := time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	var res struct {
		BatchID  string `json:"batch_id"`
		Messages []struct {
			ID string `json:"id"`
		} `json:"messages"`
	}
	body := fmt.Sprintf(`{"account":"sandbox","recipients":[%s],"content":{"text":"Ledger 42 is overdue"},"send_at":%q}`, list, sendAt)
	if status := apiJSON(t, c, key, "POST", "/api/v1/messages", body, &res); status != http.StatusAccepted {
		t.Fatalf("send: %d", status)
	}
	ids := make([]string, len(res.Messages))
	for i, m := range res.Messages {
		ids[i] = m.ID
	}
	return res.BatchID, ids
}

// newKey makes an API key with scopes and returns its secret.
func newKey(t *testing.T, c *console, name, scopes string) string {
	t.Helper()
	_, secret, err := c.store.Access().CreateAPIKey(t.Context(), name, scopes, adminUser)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// A send or read key reads, cancels and retries only what was created through it: the
// ids of other keys' messages travel in emails and webhooks, so another key's message
// answers 404, as an unknown id does; an admin key sees everything.
func TestAPIKeyReadsOnlyItsOwnMessages(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	erp, crm, admin := newKey(t, c, "erp", "send,read"), newKey(t, c, "crm", "send,read"), newKey(t, c, "ops", "admin")
	batch, ids := apiSend(t, c, erp, "E2001")
	msg := ids[0]

	for _, path := range []string{"/api/v1/messages/" + msg, "/api/v1/batches/" + batch} {
		if status := apiJSON(t, c, crm, "GET", path, "", nil); status != http.StatusNotFound {
			t.Errorf("another key's GET %s: %d, want 404", path, status)
		}
		for _, key := range []string{erp, admin} {
			if status := apiJSON(t, c, key, "GET", path, "", nil); status != http.StatusOK {
				t.Errorf("GET %s by its own key or an admin key: %d, want 200", path, status)
			}
		}
	}
	for _, op := range []string{"cancel", "retry"} {
		if status := apiJSON(t, c, crm, "POST", "/api/v1/messages/"+msg+"/"+op, "", nil); status != http.StatusNotFound {
			t.Errorf("another key's %s: %d, want 404", op, status)
		}
	}
	if s := c.status(msg); s != models.StatusPending {
		t.Fatalf("another key's cancel changed the message: %s", s)
	}
	var out struct {
		Status string `json:"status"`
	}
	if status := apiJSON(t, c, erp, "POST", "/api/v1/messages/"+msg+"/cancel", "", &out); status != http.StatusOK || out.Status != "cancelled" {
		t.Fatalf("its own key's cancel: %d %+v", status, out)
	}
	a := c.lastAudit("message.cancel")
	if a.Actor != "apikey:erp" || a.TargetID != msg || a.ParamMap()["batch"] != batch || a.ParamMap()["old_status"] != "pending" {
		t.Errorf("audit %+v %v", a, a.ParamMap())
	}
}

// GET /api/v1/messages lists what the console's message list shows, with its filters,
// a page at a time; a send or read key lists its own batches' messages only.
func TestAPIListMessages(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	erp, crm, admin := newKey(t, c, "erp", "send,read"), newKey(t, c, "crm", "send,read"), newKey(t, c, "ops", "admin")
	erpBatch, erpIDs := apiSend(t, c, erp, "E2001", "E2002")
	_, crmIDs := apiSend(t, c, crm, "E2003")

	type page struct {
		Messages []struct {
			ID        string `json:"id"`
			BatchID   string `json:"batch_id"`
			Recipient string `json:"recipient"`
			Status    string `json:"status"`
		} `json:"messages"`
		NextCursor string `json:"next_cursor"`
	}
	list := func(key, query string) []string {
		t.Helper()
		var p page
		if status := apiJSON(t, c, key, "GET", "/api/v1/messages"+query, "", &p); status != http.StatusOK {
			t.Fatalf("GET /api/v1/messages%s: %d", query, status)
		}
		var ids []string
		for _, m := range p.Messages {
			ids = append(ids, m.ID)
		}
		slices.Sort(ids)
		return ids
	}
	sorted := func(ids ...string) []string { slices.Sort(ids); return ids }
	if got, want := list(erp, ""), sorted(erpIDs...); !slices.Equal(got, want) {
		t.Errorf("erp lists %v, want its own %v", got, want)
	}
	if got, want := list(crm, ""), sorted(crmIDs...); !slices.Equal(got, want) {
		t.Errorf("crm lists %v, want its own %v", got, want)
	}
	if got := list(crm, "?batch="+erpBatch); len(got) != 0 {
		t.Errorf("crm lists another key's batch: %v", got)
	}
	if got, want := list(admin, ""), sorted(append(slices.Clone(erpIDs), crmIDs...)...); !slices.Equal(got, want) {
		t.Errorf("the admin key lists %v, want every message %v", got, want)
	}
	// A filter by someone nobody is answers as a filter by a person without messages:
	// an empty list, never which staff exist.
	for _, key := range []string{crm, admin} {
		if got := list(key, "?recipient=E9999"); len(got) != 0 {
			t.Errorf("?recipient= of nobody lists %v", got)
		}
	}
	if got := list(crm, "?recipient=E2001"); len(got) != 0 {
		t.Errorf("crm filtered by another key's recipient: %v", got)
	}
	if got := list(admin, "?recipient=E2002&status=pending&platform=sandbox"); len(got) != 1 {
		t.Errorf("filtered by recipient, status and platform: %v", got)
	}
	if got := list(admin, "?status=sent"); len(got) != 0 {
		t.Errorf("status=sent lists %v", got)
	}
	if got := list(admin, "?since="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)); len(got) != 0 {
		t.Errorf("since an hour ahead lists %v", got)
	}

	for _, tc := range []struct{ query, field string }{
		{"?status=lost", "status"}, {"?platform=pigeon", "platform"}, {"?error_class=bad", "error_class"},
		{"?since=yesterday", "since"}, {"?until=2026-11-22", "until"},
		{"?cursor=nonsense", "cursor"},
	} {
		var e struct {
			Error struct{ Code, Field string } `json:"error"`
		}
		if status := apiJSON(t, c, admin, "GET", "/api/v1/messages"+tc.query, "", &e); status != http.StatusUnprocessableEntity || e.Error.Field != tc.field {
			t.Errorf("%s: %d %+v, want 422 naming %s", tc.query, status, e.Error, tc.field)
		}
	}

	// Paging: a second page continues where the first stopped, with nothing twice.
	for range 100 {
		c.send(nil, "E2001")
	}
	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		var p page
		if status := apiJSON(t, c, admin, "GET", "/api/v1/messages?cursor="+cursor, "", &p); status != http.StatusOK {
			t.Fatalf("page %d: %d", pages, status)
		}
		pages++
		for _, m := range p.Messages {
			if seen[m.ID] {
				t.Fatalf("message %s listed twice", m.ID)
			}
			seen[m.ID] = true
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if len(seen) != 103 || pages != 2 {
		t.Errorf("%d messages on %d pages, want 103 on 2", len(seen), pages)
	}
	if status := apiJSON(t, c, newKey(t, c, "sender", "send"), "GET", "/api/v1/messages", "", nil); status != http.StatusForbidden {
		t.Errorf("a send-only key lists messages: %d, want 403", status)
	}
}

// GET /api/v1/audit is the audit log with the console's filters, for admin keys.
func TestAPIListAudit(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	admin, reader := newKey(t, c, "ops", "admin"), newKey(t, c, "erp", "read")
	resp, body := c.as(adminUser).post("/accounts/sandbox/enabled", map[string][]string{"enabled": {"false"}})
	wantRedirect(t, "disable the account", resp, body, "/accounts")

	type entry struct {
		ID        int64             `json:"id"`
		Actor     string            `json:"actor"`
		ActorType string            `json:"actor_type"`
		Action    string            `json:"action"`
		TargetID  string            `json:"target_id"`
		Params    map[string]string `json:"params"`
	}
	var p struct {
		Entries    []entry `json:"entries"`
		NextCursor string  `json:"next_cursor"`
	}
	if status := apiJSON(t, c, admin, "GET", "/api/v1/audit?action=account.&actor="+adminUser, "", &p); status != http.StatusOK {
		t.Fatalf("GET /api/v1/audit: %d", status)
	}
	if len(p.Entries) != 1 || p.Entries[0].Action != "account.disable" || p.Entries[0].ActorType != "user" ||
		p.Entries[0].TargetID != "sandbox" || p.Entries[0].Params["name"] != "sandbox" || p.NextCursor != "" {
		t.Errorf("entries %+v next %q", p.Entries, p.NextCursor)
	}
	if status := apiJSON(t, c, reader, "GET", "/api/v1/audit", "", nil); status != http.StatusForbidden {
		t.Errorf("a read key reads the audit log: %d, want 403", status)
	}
	for _, tc := range []struct{ query, field string }{
		{"?since=monday", "since"}, {"?until=1", "until"}, {"?cursor=x", "cursor"}, {"?cursor=-4", "cursor"},
	} {
		var e struct {
			Error struct{ Field string } `json:"error"`
		}
		if status := apiJSON(t, c, admin, "GET", "/api/v1/audit"+tc.query, "", &e); status != http.StatusUnprocessableEntity || e.Error.Field != tc.field {
			t.Errorf("%s: %d %+v, want 422 naming %s", tc.query, status, e.Error, tc.field)
		}
	}

	// Paging, newest first, nothing twice.
	entries := make([]audit.Entry, 150)
	for i := range entries {
		entries[i] = audit.Entry{Actor: "paging", ActorType: "system", Action: "test.page", TargetID: fmt.Sprint(i)}
	}
	if err := c.store.AuditLog().WriteMany(t.Context(), entries); err != nil {
		t.Fatal(err)
	}
	seen, cursor, last := map[int64]bool{}, "", int64(0)
	for {
		p.Entries, p.NextCursor = nil, ""
		if status := apiJSON(t, c, admin, "GET", "/api/v1/audit?actor=paging&cursor="+cursor, "", &p); status != http.StatusOK {
			t.Fatalf("page: %d", status)
		}
		for _, e := range p.Entries {
			if seen[e.ID] || (last != 0 && e.ID >= last) {
				t.Fatalf("entry %d out of order or twice", e.ID)
			}
			seen[e.ID], last = true, e.ID
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if len(seen) != 150 {
		t.Errorf("%d entries over the pages, want 150", len(seen))
	}
}

// Two batches made within the same minute share the start of their ids (ids begin with
// the time): the dashboard and the message list tell them apart by the random end.
func TestBatchesOfOneMinuteToldApart(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	first, second := c.send(nil, "E2001")["E2001"], c.send(nil, "E2002")["E2002"]
	if first.BatchID[:8] != second.BatchID[:8] {
		t.Logf("the two batches' ids differ from the start: %s, %s", first.BatchID, second.BatchID)
	}
	a, b := views.ShortID(first.BatchID), views.ShortID(second.BatchID)
	if a == b {
		t.Fatalf("both batches are shown as %s", a)
	}
	viewer := c.as(viewerUser)
	for _, path := range []string{"/", "/messages"} {
		resp, body := viewer.get(path)
		wantStatus(t, path, resp, body, http.StatusOK)
		wantContains(t, path, body, a, b)
	}
}
