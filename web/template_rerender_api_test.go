package web_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/dispatch"
)

// PUT /api/v1/templates/:name takes rerender_waiting as a rollback does: without it a
// scheduled message keeps the content it was created with, with it the message is
// rendered again from the version saved.
func TestAPITemplatePutRerendersWaiting(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	key := newKey(t, c, "ops", "admin")
	acct, err := c.store.Sending().AccountByName(ctx, "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Hour)
	res, err := c.h.Dispatch.Submit(ctx, dispatch.Request{Source: "console", Actor: "test", AccountID: acct.ID, Recipients: []string{"E2001"},
		Template: "task-overdue", Variables: map[string]string{"task": "ledger"}, SendAt: &at})
	if err != nil {
		t.Fatal(err)
	}
	type state struct {
		Content string
		Version int
	}
	for _, tc := range []struct {
		body     string
		rerender string // the field as sent; "" leaves it out
		want     state
	}{
		{"Kept: {{.task}}", "", state{"Overdue: ledger. Please handle it today.", 1}},
		{"Kept again: {{.task}}", `,"rerender_waiting":false`, state{"Overdue: ledger. Please handle it today.", 1}},
		{"Now: {{.task}}", `,"rerender_waiting":true`, state{"Now: ledger", 4}},
	} {
		put := fmt.Sprintf(`{"name":"task-overdue","msg_type":"text","subject":"Task overdue","body":%q,"variables":["task"]%s}`, tc.body, tc.rerender)
		if status := apiJSON(t, c, key, "PUT", "/api/v1/templates/task-overdue", put, nil); status != http.StatusOK {
			t.Fatalf("PUT %s: %d", put, status)
		}
		m, err := c.store.MessageByID(ctx, res.Messages[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		got := state{Content: m.Content}
		if m.TemplateVersion != nil {
			got.Version = *m.TemplateVersion
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("after PUT %s, the scheduled message (-want +got):\n%s", put, diff)
		}
	}
	if e := c.lastAudit("template.rerender"); e.Actor != "apikey:ops" || e.ParamMap()["count"] != "1" {
		t.Errorf("template.rerender audit entry %+v %v", e, e.ParamMap())
	}
}
