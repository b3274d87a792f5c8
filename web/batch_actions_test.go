package web_test

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"herald/audit"
	"herald/message"
	"herald/models"
)

// statuses reads the state of each message, by recipient.
func (c *console) statuses(msgs map[string]models.Message) map[string]models.Status {
	c.t.Helper()
	out := map[string]models.Status{}
	for who, m := range msgs {
		out[who] = c.status(m.ID)
	}
	return out
}

// The batch page cancels what is not sent yet and re-sends what stopped, each behind a
// confirmation that says how many; a message that is neither is left alone.
func TestBatchPageCancelsAndResends(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(operatorUser)
	c.user(viewerUser)
	msgs := c.send(nil, "E2001", "E2002", "E2003")
	c.stop(msgs["E2001"].ID)
	batch := "/batches/" + msgs["E2001"].BatchID

	_, body := c.as(viewerUser).get(batch)
	wantNotContains(t, "batch page as viewer", body, `id="cancel-batch"`, `id="resend-batch"`)

	op := c.as(operatorUser)
	_, body = op.get(batch)
	wantContains(t, "batch page", body,
		`action="`+batch+`/cancel"`, `data-confirm="Cancel 2 messages of this batch that have not been sent yet`, "Cancel 2 messages not sent yet",
		`action="`+batch+`/resend"`, `data-confirm="Send the 1 stopped message of this batch again?`, "Re-send 1 stopped message")

	steps := []struct {
		form string
		want map[string]models.Status
		note string
	}{
		{"cancel", map[string]models.Status{"E2001": models.StatusStopped, "E2002": models.StatusCancelled, "E2003": models.StatusCancelled},
			"Cancelled 2 messages of the batch before sending."},
		{"resend", map[string]models.Status{"E2001": models.StatusPending, "E2002": models.StatusCancelled, "E2003": models.StatusCancelled},
			"Re-sent 1 stopped message."},
		{"cancel", map[string]models.Status{"E2001": models.StatusCancelled, "E2002": models.StatusCancelled, "E2003": models.StatusCancelled},
			"Cancelled 1 message of the batch before sending."},
		// Nothing is left to cancel: the page says so, and nothing is written.
		{"cancel", map[string]models.Status{"E2001": models.StatusCancelled, "E2002": models.StatusCancelled, "E2003": models.StatusCancelled},
			"there is nothing to cancel"},
	}
	for i, s := range steps {
		resp, body := op.post(batch+"/"+s.form, url.Values{})
		wantRedirect(t, s.form, resp, body, batch)
		if diff := cmp.Diff(s.want, c.statuses(msgs)); diff != "" {
			t.Errorf("step %d (%s): states (-want +got):\n%s", i, s.form, diff)
		}
		_, body = op.get(batch)
		wantContains(t, s.form+" notice", body, s.note)
	}
	_, body = op.get(batch)
	wantNotContains(t, "batch page with nothing to do", body, `id="cancel-batch"`, `id="resend-batch"`)
	e := c.lastAudit("batch.cancel")
	if e.Actor != operatorUser || e.TargetID != msgs["E2001"].BatchID || e.ParamMap()["cancelled"] != "1" {
		t.Errorf("last batch.cancel audit entry: %+v %v", e, e.ParamMap())
	}
	if p := c.lastAudit("messages.resend").ParamMap(); p["resent"] != "1" || p["batch"] != msgs["E2001"].BatchID {
		t.Errorf("messages.resend audit params %v", p)
	}

	resp, _ := op.post("/batches/no-such-batch/cancel", url.Values{})
	wantStatus(t, "cancel of an unknown batch", resp, "", http.StatusNotFound)
}

// The API cancels and re-sends a batch like the console, and a send key only its own.
func TestAPIBatchCancelAndResend(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	erp, crm := newKey(t, c, "erp", "send,read"), newKey(t, c, "crm", "send,read")
	var sent struct {
		BatchID  string `json:"batch_id"`
		Messages []struct {
			ID string `json:"id"`
		} `json:"messages"`
	}
	body := `{"account":"sandbox","recipients":["E2001","E2002"],"content":{"text":"Ledger 42 is overdue"}}`
	if status := apiJSON(t, c, erp, "POST", "/api/v1/messages", body, &sent); status != http.StatusAccepted || len(sent.Messages) != 2 {
		t.Fatalf("send: %d %+v", status, sent)
	}
	batch, ids := sent.BatchID, []string{sent.Messages[0].ID, sent.Messages[1].ID}
	c.stop(ids[0])

	type answer struct {
		BatchID   string `json:"batch_id"`
		Cancelled int    `json:"cancelled"`
		Resent    int    `json:"resent"`
		Skipped   int    `json:"skipped"`
	}
	for _, op := range []string{"cancel", "resend"} {
		if status := apiJSON(t, c, crm, "POST", "/api/v1/batches/"+batch+"/"+op, "", nil); status != http.StatusNotFound {
			t.Errorf("%s of another key's batch: %d, want 404", op, status)
		}
	}
	if diff := cmp.Diff([]models.Status{models.StatusStopped, models.StatusPending}, []models.Status{c.status(ids[0]), c.status(ids[1])}); diff != "" {
		t.Errorf("another key changed the batch (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		op     string
		want   answer
		states []models.Status
	}{
		{"cancel", answer{BatchID: batch, Cancelled: 1}, []models.Status{models.StatusStopped, models.StatusCancelled}},
		{"resend", answer{BatchID: batch, Resent: 1}, []models.Status{models.StatusPending, models.StatusCancelled}},
		{"resend", answer{BatchID: batch}, []models.Status{models.StatusPending, models.StatusCancelled}},
	} {
		var got answer
		if status := apiJSON(t, c, erp, "POST", "/api/v1/batches/"+batch+"/"+tc.op, "", &got); status != http.StatusOK {
			t.Fatalf("%s: %d", tc.op, status)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s answer (-want +got):\n%s", tc.op, diff)
		}
		if diff := cmp.Diff(tc.states, []models.Status{c.status(ids[0]), c.status(ids[1])}); diff != "" {
			t.Errorf("after %s, states (-want +got):\n%s", tc.op, diff)
		}
	}
	if e := c.lastAudit("batch.cancel"); e.Actor != "apikey:erp" || e.ParamMap()["cancelled"] != "1" {
		t.Errorf("batch.cancel audit entry: %+v %v", e, e.ParamMap())
	}
}

// Cancels of one batch racing each other cancel each message once: the compare-and-set
// on each message's state counts the loser's as skipped, or it finds nothing left.
func TestConcurrentBatchCancelsCountEachMessageOnce(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	msgs := c.send(nil, "E2001", "E2002", "E2003")
	batch := msgs["E2001"].BatchID
	const racers = 4
	var (
		wg      sync.WaitGroup
		results [racers]message.BatchCancel
		errs    [racers]error
	)
	for i := range racers {
		wg.Go(func() {
			results[i], errs[i] = c.h.Dispatch.Messages().CancelBatch(context.Background(), audit.Actor{Name: "test", Type: audit.ActorUser}, batch)
		})
	}
	wg.Wait()
	cancelled := 0
	for i := range racers {
		if errs[i] != nil {
			t.Fatalf("cancel %d: %v", i, errs[i])
		}
		cancelled += results[i].Cancelled
	}
	if cancelled != len(msgs) {
		t.Errorf("the racing cancels cancelled %d messages in all (%+v), want %d", cancelled, results, len(msgs))
	}
	want := map[string]models.Status{"E2001": models.StatusCancelled, "E2002": models.StatusCancelled, "E2003": models.StatusCancelled}
	if diff := cmp.Diff(want, c.statuses(msgs)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}
