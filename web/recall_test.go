package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"herald/channels"
	"herald/directory"
	"herald/dispatch"
	"herald/models"
	"herald/sending"
	"herald/simulator"
)

// recallConsole is a console with a WeCom account on a simulator and people on it.
type recallConsole struct {
	*console
	sim  *simulator.Simulator
	acct *sending.Account
}

func newRecallConsole(t *testing.T) *recallConsole {
	t.Helper()
	c := newConsole(t)
	ctx := context.Background()
	sim := simulator.NewWithOptions(simulator.Faults{}, simulator.Options{Seed: 7})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	acct := &sending.Account{Name: "wecom-main", Platform: "wecom", IsDefault: true, Enabled: true, AllowPrivateNetwork: true,
		MaxAttempts: 3, Healthy: true,
		Config: map[string]string{"corp_id": "ww0123", "secret": "s3cret", "agent_id": "1000002", "base_url": srv.URL + "/wecom"}}
	if err := c.store.Sending().SaveAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	var people []directory.Recipient
	for i := range 5 {
		people = append(people, directory.Recipient{ExternalID: fmt.Sprintf("WX%d", i), Name: fmt.Sprintf("Wei %d", i),
			OrgType: directory.Branch, WecomUserid: fmt.Sprintf("wei_%d", i), Active: true})
	}
	if _, err := c.store.Directory().UpsertRecipients(ctx, people); err != nil {
		t.Fatal(err)
	}
	return &recallConsole{console: c, sim: sim, acct: acct}
}

// sent composes a WeCom batch to the people and plays the worker: the messages, which
// share their content, go through the adapter to the simulator in one call and are
// recorded sent with its msgid.
func (c *recallConsole) sent(people ...string) (string, []string) {
	c.t.Helper()
	ctx := context.Background()
	res, err := c.h.Dispatch.Submit(ctx, dispatch.Request{Source: "console", Actor: "test", Makers: []string{"test"},
		AccountID: c.acct.ID, Recipients: people, Text: "Wrong department"})
	if err != nil {
		c.t.Fatal(err)
	}
	sender, err := c.h.Channels.Sender(c.acct.Channel())
	if err != nil {
		c.t.Fatal(err)
	}
	var ids []string
	var call []channels.Message
	for _, m := range res.Messages {
		call = append(call, channels.Message{ID: m.ID, To: m.Address, MsgType: m.MsgType, Content: m.Content})
		ids = append(ids, m.ID)
	}
	for i, r := range sender.(channels.GroupSender).SendGroup(ctx, call) {
		if r.Err != nil {
			c.t.Fatal(r.Err)
		}
		c.finish(ids[i], models.Outcome{Status: models.StatusSent, ProviderMessageID: r.Receipt.ProviderMessageID,
			CountsAttempt: true, Called: true, Duration: time.Millisecond})
	}
	return res.Batch.ID, ids
}

// recalledOnPlatform says whether the simulator shows the message's delivery recalled,
// found by its person and its call's msgid.
func (c *recallConsole) recalledOnPlatform(id string) bool {
	m, err := c.store.MessageByID(context.Background(), id)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, d := range c.sim.Deliveries() {
		if d.To == m.Address && d.ProviderMsgID == m.ProviderMessageID {
			return d.Recalled
		}
	}
	return false
}

// In the console, in English and in Chinese: the message page's recall button asks
// first, naming the other person of its WeCom call, and recalls the call on WeCom; the
// batch page's names how many people and shows what the recall did; over the approval threshold the recall waits, the operator who asked
// cannot decide, another rejects it (a reason is needed) or approves it.
func TestConsoleRecall(t *testing.T) {
	t.Parallel()
	c := newRecallConsole(t)
	ctx := context.Background()
	op, admin := c.as(operatorUser), c.as(adminUser)
	for _, tt := range []struct {
		lang                                         string
		button, confirm, recalledNote, done, waiting string
		notYours, reasonError, rejected, dashboard   string
		expires, expired, expiredNote                string
		callConfirm                                  string
	}{
		{"en", "Recall from 2 people", "Recall this batch from 2 people?", "Recalled message", "Recall done: 1 recalled",
			"it waits for another operator&#39;s approval", "You asked for this recall", "give a reason of 1 to 200 characters",
			"Recall request rejected", "1 batch recall waits for approval",
			"Decide by ", "expired undecided at", "expired before anyone decided on it",
			"WeCom recalls the whole notice its call carried: 1 other person loses it too"},
		{"zh-CN", "撤回（2 人）", "确定撤回本批次发给 2 人的消息吗？", "已撤回消息", "撤回完成：撤回 1 条",
			"等待另一位操作员批准", "此撤回由您申请", "请填写 1 到 200 个字的理由", "已驳回撤回申请", "1 个批次撤回等待审批",
			"之前决定", "未获决定，已于", "在有人决定之前已过期",
			"企业微信会撤回同一次调用发出的整条通知：另有 1 人也将不再看到"},
	} {
		t.Run(tt.lang, func(t *testing.T) {
			lang := map[string]string{"Accept-Language": tt.lang}
			get := func(cl *client, path string) string {
				t.Helper()
				resp, body := cl.do("GET", path, "", nil, lang)
				wantStatus(t, path, resp, body, http.StatusOK)
				return body
			}
			post := func(cl *client, path string, form url.Values) (*http.Response, string) {
				t.Helper()
				return cl.do("POST", path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), lang)
			}
			if err := c.store.Intake().SetApprovalThreshold(ctx, 0, "test"); err != nil {
				t.Fatal(err)
			}
			c.h.Dispatch.ForgetThreshold()

			batch, ids := c.sent("WX0", "WX1")
			page := get(op, "/batches/"+batch)
			wantContains(t, "batch page", page, `action="/batches/`+batch+`/recall"`, tt.button, tt.confirm)
			msg := get(op, "/messages/"+ids[0])
			wantContains(t, "message page", msg, `action="/messages/`+ids[0]+`/recall"`, tt.callConfirm)
			resp, body := post(op, "/messages/"+ids[0]+"/recall", nil)
			wantRedirect(t, "recall a message", resp, body, "/messages/"+ids[0])
			wantContains(t, "after the recall", get(op, "/messages/"+ids[0]), tt.recalledNote, `data-recalled`, `data-status="recalled"`)
			wantContains(t, "the call's other message", get(op, "/messages/"+ids[1]), `data-status="recalled"`)
			if !c.recalledOnPlatform(ids[0]) || !c.recalledOnPlatform(ids[1]) {
				t.Error("the call is not recalled on WeCom from both people")
			}
			batch, ids = c.sent("WX4")
			resp, body = post(op, "/batches/"+batch+"/recall", nil)
			wantRedirect(t, "recall the batch", resp, body, "/batches/"+batch)
			wantContains(t, "after the batch recall", get(op, "/batches/"+batch), tt.done)
			if !c.recalledOnPlatform(ids[0]) {
				t.Error("the batch's message is not recalled on WeCom")
			}

			// Over the threshold (raised once the batch is sent, or its sending would wait
			// too): the operator asks, an admin decides.
			batch, ids = c.sent("WX2", "WX3")
			if err := c.store.Intake().SetApprovalThreshold(ctx, 1, "test"); err != nil {
				t.Fatal(err)
			}
			c.h.Dispatch.ForgetThreshold()
			resp, body = post(op, "/batches/"+batch+"/recall", nil)
			wantRedirect(t, "ask for a recall", resp, body, "/batches/"+batch)
			wantContains(t, "awaiting", get(op, "/batches/"+batch), tt.waiting, tt.notYours, `data-recall-expires`, tt.expires)
			wantContains(t, "dashboard", get(op, "/"), `id="awaiting-recalls"`, tt.dashboard, `href="/batches/`+batch+`"`)
			resp, body = post(op, "/batches/"+batch+"/recall/approve", nil)
			wantStatus(t, "the asker approves", resp, body, http.StatusForbidden)
			resp, body = post(admin, "/batches/"+batch+"/recall/reject", url.Values{"reason": {" "}})
			wantStatus(t, "reject without a reason", resp, body, http.StatusUnprocessableEntity)
			wantContains(t, "reject without a reason", body, tt.reasonError)
			resp, body = post(admin, "/batches/"+batch+"/recall/reject", url.Values{"reason": {"right people"}})
			wantRedirect(t, "reject", resp, body, "/batches/"+batch)
			wantContains(t, "rejected", get(admin, "/batches/"+batch), tt.rejected, "right people")
			if c.recalledOnPlatform(ids[0]) {
				t.Error("recalled although rejected")
			}
			resp, body = post(op, "/batches/"+batch+"/recall", nil)
			wantRedirect(t, "ask again", resp, body, "/batches/"+batch)
			page = get(admin, "/batches/"+batch)
			wantContains(t, "admin's page", page, `action="/batches/`+batch+`/recall/approve"`)
			resp, body = post(admin, "/batches/"+batch+"/recall/approve", nil)
			wantRedirect(t, "approve", resp, body, "/batches/"+batch)
			wantContains(t, "approved", get(admin, "/batches/"+batch), strings.Replace(tt.done, "1", "2", 1))
			if !c.recalledOnPlatform(ids[0]) || !c.recalledOnPlatform(ids[1]) {
				t.Error("not recalled on WeCom after approval")
			}

			// A request nobody decided on before the earliest message's window passed
			// reads expired, and approving it says so and recalls nothing.
			if err := c.store.Intake().SetApprovalThreshold(ctx, 0, "test"); err != nil {
				t.Fatal(err)
			}
			c.h.Dispatch.ForgetThreshold()
			batch, ids = c.sent("WX0", "WX1")
			if err := c.store.Intake().SetApprovalThreshold(ctx, 1, "test"); err != nil {
				t.Fatal(err)
			}
			c.h.Dispatch.ForgetThreshold()
			resp, body = post(op, "/batches/"+batch+"/recall", nil)
			wantRedirect(t, "ask for a recall", resp, body, "/batches/"+batch)
			if _, err := c.store.SQL().Exec("UPDATE recall_requests SET expires_at = ? WHERE batch_id = ?", time.Now().UTC().Add(-time.Minute), batch); err != nil {
				t.Fatal(err)
			}
			page = get(admin, "/batches/"+batch)
			wantContains(t, "expired", page, tt.expired)
			if strings.Contains(page, `/recall/approve"`) {
				t.Error("an expired recall request can still be approved from the page")
			}
			resp, body = post(admin, "/batches/"+batch+"/recall/approve", nil)
			wantRedirect(t, "approve an expired request", resp, body, "/batches/"+batch)
			wantContains(t, "after approving an expired request", get(admin, "/batches/"+batch), tt.expiredNote)
			if c.recalledOnPlatform(ids[0]) {
				t.Error("recalled although the request expired")
			}
		})
	}
}
