package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/directory"
	"herald/dispatch"
	"herald/sending"
	"herald/simulator"
)

// wecomAckAESKey is an EncodingAESKey as WeCom's admin console generates them.
const wecomAckAESKey = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"

// A notice of an alert goes to a WeCom member as a card with 我来处理 and 已解决; the
// member clicks 我来处理 in the simulator, which reports the click to Herald's callback
// the way WeCom does (signed, encrypted), and the alert is acknowledged by that member
// via "wecom". A click signed with another token changes nothing.
func TestWeComCardClickAcknowledges(t *testing.T) {
	t.Parallel()
	r := startHerald(t, testEnv(t))
	ctx := context.Background()
	sim := simulator.New(simulator.Faults{})
	simSrv := httptest.NewServer(sim.Handler())
	t.Cleanup(simSrv.Close)

	store, d := r.App.Store, r.App.Dispatch
	const corpID, account = "ww-ack-test", "wecom-ack"
	if err := store.Sending().SaveAccount(ctx, &sending.Account{Name: account, Platform: "wecom", Enabled: true, MaxAttempts: 3,
		AllowPrivateNetwork: true, Config: map[string]string{"corp_id": corpID, "agent_id": "1000002", "secret": "s3cret",
			"base_url": simSrv.URL + "/wecom", "callback_token": "cb-token", "encoding_aes_key": wecomAckAESKey}}); err != nil {
		t.Fatal(err)
	}
	if err := store.Directory().CreateRecipient(ctx, &directory.Recipient{ExternalID: "W3001", Name: "王芳", OrgType: directory.Branch,
		WecomUserid: "wangfang", Active: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Alerts().CreatePolicy(ctx, audit.System("test"), alert.EscalationPolicy{Name: "wecom-ack",
		Steps: []alert.PolicyStep{{Targets: []string{"W3001"}, Wait: "10m"}}}); err != nil {
		t.Fatal(err)
	}
	res, err := d.Submit(ctx, dispatch.Request{Source: "api", Actor: "test", Account: account, Recipients: []string{"W3001"},
		Subject: "核心系统告警", Text: "转账交易失败率 12%", Ack: &dispatch.AckRequest{Policy: "wecom-ack"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Alert == nil || len(res.Messages) != 1 {
		t.Fatalf("send opened alert %v with %d messages, want an alert with one", res.Alert, len(res.Messages))
	}
	msg := res.Messages[0]

	card := waitCard(t, sim, msg.ID)
	labels := []string{}
	for _, b := range card.Card.Buttons {
		labels = append(labels, b.Text+"="+b.Key)
	}
	if got := strings.Join(labels, ","); got != "我来处理=ack,已解决=resolve" || card.To != "wangfang" {
		t.Errorf("card to %s with buttons %s, want wangfang with 我来处理=ack,已解决=resolve", card.To, got)
	}

	callbackURL := r.URL + "/callbacks/wecom/" + account
	simPost := func(path string, body any) (int, string) {
		b, _ := json.Marshal(body)
		resp, err := http.Post(simSrv.URL+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	// WeCom checks the URL before it keeps the setting: Herald must answer the echostr.
	// With a token Herald does not hold, the check fails.
	if status, body := simPost("/_sim/wecom/callback", map[string]string{"url": callbackURL, "token": "not-the-token",
		"encoding_aes_key": wecomAckAESKey, "corp_id": corpID}); status != http.StatusBadGateway {
		t.Fatalf("callback with a wrong token: %d %s, want the URL check to fail", status, body)
	}
	if status, body := simPost("/_sim/wecom/callback", map[string]string{"url": callbackURL, "token": "cb-token",
		"encoding_aes_key": wecomAckAESKey, "corp_id": corpID}); status != http.StatusNoContent {
		t.Fatalf("callback setting: %d %s", status, body)
	}
	// A forged callback (no valid signature) is refused, before any real click.
	resp, err := http.Post(callbackURL+"?msg_signature=0000&timestamp=1&nonce=2", "text/xml", strings.NewReader(
		"<xml><ToUserName><![CDATA["+corpID+"]]></ToUserName><Encrypt><![CDATA[AAAA]]></Encrypt></xml>"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a forged callback: %d, want 403", resp.StatusCode)
	}
	if a, err := alert.Of(store).AlertByID(ctx, res.Alert.ID); err != nil || a.State != alert.AlertOpen {
		t.Fatalf("alert after a forged callback: %+v, %v; want open", a, err)
	}
	status, body := simPost("/_sim/wecom/click", map[string]string{"task_id": msg.ID, "key": "ack", "userid": "wangfang"})
	if status != http.StatusOK || !strings.Contains(body, `"status":200`) {
		t.Fatalf("click: %d %s", status, body)
	}
	a, err := alert.Of(store).AlertByID(ctx, res.Alert.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != alert.AlertAcknowledged || a.AcknowledgedBy != "W3001" || a.AcknowledgedVia != alert.AckViaWeCom {
		t.Errorf("alert after the click: state %s by %q via %q; want acknowledged by W3001 via wecom", a.State, a.AcknowledgedBy, a.AcknowledgedVia)
	}

	status, body = simPost("/_sim/wecom/click", map[string]string{"task_id": msg.ID, "key": "resolve"})
	if status != http.StatusOK || !strings.Contains(body, `"status":200`) {
		t.Fatalf("click 已解决: %d %s", status, body)
	}
	if a, err = alert.Of(store).AlertByID(ctx, res.Alert.ID); err != nil || a.State != alert.AlertResolved || a.ResolvedVia != alert.AckViaWeCom {
		t.Errorf("alert after 已解决: %+v, %v; want resolved via wecom", a, err)
	}
}

// waitCard waits for the simulator to receive the card of a message.
func waitCard(t *testing.T, sim *simulator.Simulator, messageID string) simulator.Delivery {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, d := range sim.Deliveries() {
			if d.Card != nil && d.Card.TaskID == messageID {
				return d
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no card with task id %s reached the simulator; it has %+v", messageID, sim.Deliveries())
	return simulator.Delivery{}
}
