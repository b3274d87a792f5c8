package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"herald/alert"
	"herald/audit"
	"herald/channels"
	"herald/chatgroups"
	"herald/dispatch"
	"herald/internal/testenv"
	"herald/models"
	"herald/sending"
)

// chatGroupAccounts adds a WeCom application and a DingTalk robot that chat groups can
// post through.
func (c *console) chatGroupAccounts() {
	c.t.Helper()
	for _, a := range []*sending.Account{
		{Name: "wecom-app", Platform: "wecom", Enabled: true, MaxAttempts: 3, Config: map[string]string{}},
		{Name: "ding-robot", Platform: channels.DingTalkBot, Enabled: true, MaxAttempts: 3, Config: map[string]string{}},
	} {
		if err := c.store.Sending().CreateAccount(context.Background(), a); err != nil {
			c.t.Fatal(err)
		}
	}
}

// TestChatGroupsAPI makes, reads, changes and deletes a chat group through the API, and
// sends to it: an unknown account is 422 naming account with nothing written, and the
// send's answer names the group beside the person. Every answer is checked against
// docs/openapi.json.
func TestChatGroupsAPI(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.chatGroupAccounts()
	admin := c.apiKey("ops", "admin,send")
	if status, body, _ := admin.call("POST", "/api/v1/chat-groups", `{"name":"ops-core","account":"nope","chat_id":"wr1"}`); status != http.StatusUnprocessableEntity || errorField(body) != "account" {
		t.Fatalf("an unknown account: %d %v", status, body["_raw"])
	}
	if n := c.countRows("chat_groups"); n != 0 {
		t.Fatalf("a refused create wrote %d rows", n)
	}
	status, body, _ := admin.call("POST", "/api/v1/chat-groups", `{"name":"ops-core","account":"wecom-app","chat_id":"wrOpsCore","mention":"on_duty","note":"ops"}`)
	if status != http.StatusCreated || body["platform"] != "wecom" || body["fold"] != true {
		t.Fatalf("create: %d %v", status, body["_raw"])
	}
	if status, body, _ := admin.call("PUT", "/api/v1/chat-groups/ops-core", `{"account":"wecom-app","chat_id":"","mention":"none"}`); status != http.StatusUnprocessableEntity || errorField(body) != "chat_id" {
		t.Errorf("an app chat without its chat id: %d %v", status, body["_raw"])
	}
	if status, body, _ := admin.call("PUT", "/api/v1/chat-groups/ops-core", `{"account":"wecom-app","chat_id":"wrOpsCore","mention":"none","fold":false}`); status != http.StatusOK || body["fold"] != false || body["mention"] != "none" {
		t.Errorf("update: %d %v", status, body["_raw"])
	}
	if status, body, _ := admin.call("GET", "/api/v1/chat-groups", ""); status != http.StatusOK || len(body["list"].([]any)) != 1 {
		t.Errorf("list: %d %v", status, body["_raw"])
	}
	status, body, _ = admin.call("POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2001"],"groups":["ops-core"],"content":{"text":"核心系统批处理延迟"}}`)
	msgs, _ := body["messages"].([]any)
	if status != http.StatusAccepted || len(msgs) != 2 || msgs[1].(map[string]any)["group"] != "ops-core" {
		t.Fatalf("send to a person and a group: %d %v", status, body["_raw"])
	}
	postID, _ := msgs[1].(map[string]any)["id"].(string)
	if status, body, _ := admin.call("GET", "/api/v1/messages/"+postID, ""); status != http.StatusOK || body["group"] != "ops-core" || body["address"] != "wrOpsCore" {
		t.Errorf("the post read back: %d %v", status, body["_raw"])
	}
	if status, body, _ := admin.call("POST", "/api/v1/messages", `{"groups":["ops-core"],"mention":["on_duty","E9999"],"content":{"text":"x"}}`); status != http.StatusUnprocessableEntity || errorField(body) != "mention[1]" {
		t.Errorf("an unknown person to @: %d %v", status, body["_raw"])
	}
	if status, _, _ := admin.call("DELETE", "/api/v1/chat-groups/ops-core", ""); status != http.StatusNoContent {
		t.Errorf("delete: %d", status)
	}
	if status, _, _ := admin.call("GET", "/api/v1/chat-groups/ops-core", ""); status != http.StatusNotFound {
		t.Errorf("after delete: %d", status)
	}
	if n := c.auditCount("chat_group."); n != 3 {
		t.Errorf("%d chat group audit entries, want 3", n)
	}
}

// TestBrowserChatGroupsPage opens the 群 page from the accounts page and submits its
// form at 1366, 768 and 390 px: the
// empty list says what to do, a form without the app chat's id shows the error beside
// that field, and the group then saved is listed; the page never scrolls sideways.
func TestBrowserChatGroupsPage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(adminUser)
	c.chatGroupAccounts()
	ctx := testenv.Chrome(t)
	q := chromedp.ByQuery
	browserSignIn(t, ctx, c, adminUser)
	for i, width := range []int{1366, 768, 390} {
		name := fmt.Sprintf("ops-%d", width)
		var scroll int
		var empty string
		err := chromedp.Run(ctx,
			chromedp.EmulateViewport(int64(width), 900),
			chromedp.Navigate(c.url+"/accounts"),
			chromedp.WaitVisible(`#chat-groups-link`, q),
			chromedp.Click(`#chat-groups-link`, q),
			chromedp.WaitVisible(`#new-chat-group`, q),
			chromedp.Evaluate(`document.scrollingElement.scrollWidth`, &scroll),
		)
		if err != nil {
			t.Fatalf("%d px: %v", width, err)
		}
		if i == 0 {
			if err := chromedp.Run(ctx, chromedp.Text(`#chat-groups-empty`, &empty, q)); err != nil || !strings.Contains(empty, "Accounts") {
				t.Errorf("the empty list says %q (%v); it should say what to do", empty, err)
			}
		}
		if scroll > width {
			t.Errorf("the list is %d px wide at %d px", scroll, width)
		}
		err = chromedp.Run(ctx,
			chromedp.Click(`#new-chat-group`, q),
			chromedp.WaitVisible(`#chat-group-form`, q),
			chromedp.SendKeys(`#name`, name, q),
			chromedp.SetValue(`#account`, "wecom-app", q),
			chromedp.Submit(`#name`, q),
		)
		if err != nil {
			t.Fatalf("%d px: %v", width, err)
		}
		if err := waitFor(ctx, `#chat-group-form`, "needs its chat id"); err != nil {
			t.Fatalf("%d px: no error beside the chat id: %v", width, err)
		}
		err = chromedp.Run(ctx,
			chromedp.Evaluate(`document.scrollingElement.scrollWidth`, &scroll),
			chromedp.SendKeys(`#chat_id`, "wr"+name, q),
			chromedp.SetValue(`#mention`, "none", q),
			chromedp.Submit(`#name`, q),
			chromedp.WaitVisible(fmt.Sprintf(`tr[data-chat-group=%q]`, name), q),
		)
		if err != nil {
			t.Fatalf("%d px: %v", width, err)
		}
		if scroll > width {
			t.Errorf("the form is %d px wide at %d px", scroll, width)
		}
		g, err := dispatch.ChatGroups(c.h.Dispatch).Group(context.Background(), name)
		if err != nil || g.ChatID != "wr"+name || g.Mention != "none" || !g.Fold {
			t.Errorf("%d px: saved %+v, %v", width, g, err)
		}
	}
}

// TestBrowserComposeToAChatGroup ticks a chat group on the compose form at 1366, 768
// and 390 px and sends: the batch page lists the post under the group's name, and the
// message went to the group's chat.
func TestBrowserComposeToAChatGroup(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(operatorUser)
	c.chatGroupAccounts()
	if _, err := dispatch.ChatGroups(c.h.Dispatch).Create(context.Background(), audit.Actor{Name: "admin", Type: audit.ActorUser},
		chatgroups.Input{Name: "ops-core", Account: "wecom-app", ChatID: "wrOpsCore", Mention: chatgroups.MentionOnDuty}); err != nil {
		t.Fatal(err)
	}
	ctx := testenv.Chrome(t)
	q := chromedp.ByQuery
	browserSignIn(t, ctx, c, operatorUser)
	for _, width := range []int{1366, 768, 390} {
		text := fmt.Sprintf("Core banking batch late (%d px)", width)
		var scroll int
		err := chromedp.Run(ctx,
			chromedp.EmulateViewport(int64(width), 900),
			chromedp.Navigate(c.url+"/compose"),
			chromedp.WaitVisible(`#compose-groups summary`, q),
			chromedp.Click(`#compose-groups summary`, q),
			chromedp.WaitVisible(`input[name="group"][value="ops-core"]`, q),
			chromedp.Click(`input[name="group"][value="ops-core"]`, q),
			chromedp.SendKeys(`#text`, text, q),
			chromedp.Evaluate(`document.scrollingElement.scrollWidth`, &scroll),
			chromedp.Submit(`#text`, q),
		)
		if err != nil {
			t.Fatalf("%d px: %v", width, err)
		}
		if scroll > width {
			t.Errorf("the compose form is %d px wide at %d px", scroll, width)
		}
		// The compose form lists ops-core too: wait for the batch page itself.
		if err := chromedp.Run(ctx, chromedp.WaitVisible(`#batch-actions`, q)); err != nil {
			t.Fatalf("%d px: no batch page after sending: %v", width, err)
		}
		if err := waitFor(ctx, `main`, "ops-core"); err != nil {
			t.Fatalf("%d px: the batch page does not list the post to ops-core: %v", width, err)
		}
		var n int
		if err := c.store.SQL().QueryRow("SELECT COUNT(*) FROM messages WHERE chat_group_id IS NOT NULL AND address = 'wrOpsCore' AND content LIKE ?", text+"%").Scan(&n); err != nil || n != 1 {
			t.Errorf("%d px: %d posts to the group's chat (%v), want 1", width, n, err)
		}
	}
}

// An escalation step may post to a chat group (group:<name>; an unknown group is 422
// naming the target). The post carries the alert's link; its page offers the people
// the post @-ed, and whoever taps acknowledges as the person they pick, recorded via
// the group link. A staff id nobody has is refused on the page, and nothing changes.
func TestGroupAlertAcknowledgedFromItsLinkAsAChosenPerson(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.chatGroupAccounts()
	ctx := context.Background()
	d := c.h.Dispatch
	if _, err := dispatch.ChatGroups(d).Create(ctx, audit.System("test"),
		chatgroups.Input{Name: "ops-core", Account: "wecom-app", ChatID: "wrOpsCore", Mention: chatgroups.MentionOnDuty}); err != nil {
		t.Fatal(err)
	}
	admin := c.apiKey("ops", "admin,send")
	if status, body, _ := admin.call("POST", "/api/v1/escalation-policies", `{"name":"to-group","steps":[{"targets":["group:nope"],"wait":"10m"}]}`); status != http.StatusUnprocessableEntity ||
		errorField(body) != "steps[0].targets[0]" {
		t.Fatalf("a step to an unknown group: %d %v", status, body["_raw"])
	}
	if status, body, _ := admin.call("POST", "/api/v1/escalation-policies", `{"name":"to-group","steps":[{"targets":["group:ops-core"],"wait":"10m"}]}`); status != http.StatusCreated {
		t.Fatalf("policy: %d %v", status, body["_raw"])
	}
	status, body, _ := admin.call("POST", "/api/v1/messages", `{"platform":"sandbox","content":{"subject":"Core banking alarm","text":"Transfers failing"},"ack":{"policy":"to-group"}}`)
	if status != http.StatusAccepted {
		t.Fatalf("send: %d %v", status, body["_raw"])
	}
	alertID := int64(body["alert_id"].(float64))
	var postID, content, mentions string
	if err := c.store.SQL().QueryRow("SELECT id, content, mentions FROM messages WHERE chat_group_id IS NOT NULL AND alert_id = ?", alertID).
		Scan(&postID, &content, &mentions); err != nil {
		t.Fatalf("the step's post to the group: %v", err)
	}
	path := alert.AckLinkPath + c.ackLinks.Token(postID, 0)
	if !strings.Contains(content, path) {
		t.Errorf("the post %q does not carry its link %s", content, path)
	}
	page := c.as("")
	resp, html := page.get(path)
	if resp.StatusCode != http.StatusOK || !strings.Contains(html, `id="ack-as"`) || !strings.Contains(html, "ops-core") {
		t.Fatalf("the link's page: %d\n%s", resp.StatusCode, html)
	}
	m, err := c.store.MessageByID(ctx, postID)
	if err != nil {
		t.Fatal(err)
	}
	mentioned := models.MentionsOf(m.Mentions)
	if len(mentioned) == 0 {
		t.Fatalf("the post @s nobody: %q", mentions)
	}
	chosen := mentioned[len(mentioned)-1]
	if !strings.Contains(html, fmt.Sprintf(`value="%s"`, chosen.ExternalID)) {
		t.Errorf("the page does not offer %s, whom the post @-ed", chosen.ExternalID)
	}
	resp, html = page.post(path, url.Values{"group": {"1"}, "as": {chosen.ExternalID}, "as_id": {"E9999"}, "action": {"ack"}})
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(html, `id="ack-as-error"`) {
		t.Errorf("a staff id nobody has: %d\n%s", resp.StatusCode, html)
	}
	if a := c.alert(alertID); a.State != alert.AlertOpen {
		t.Fatalf("a refused tap moved the alert to %s", a.State)
	}
	resp, _ = page.post(path, url.Values{"group": {"1"}, "as": {chosen.ExternalID}, "action": {"ack"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the tap: %d", resp.StatusCode)
	}
	a := c.alert(alertID)
	if a.State != alert.AlertAcknowledged || a.AcknowledgedBy != chosen.ExternalID || a.AcknowledgedVia != alert.AckViaGroupLink {
		t.Errorf("after the tap: %s by %q via %q; want acknowledged by %s via the group link", a.State, a.AcknowledgedBy, a.AcknowledgedVia, chosen.ExternalID)
	}
	if _, html = page.get(path); !strings.Contains(html, `id="ack-outcome"`) {
		t.Errorf("the page after the tap says nobody took it:\n%s", html)
	}
}
