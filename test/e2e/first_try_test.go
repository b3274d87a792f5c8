package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"herald/models"
)

// TestFirstTryReachesEveryPlatform starts Herald as `make run` does, with Chinese as the
// console's language: the demo is in Chinese, and its WeCom, Feishu, DingTalk and email
// accounts deliver to the simulator Herald runs in-process, over HTTP and SMTP, without
// a second process.
func TestFirstTryReachesEveryPlatform(t *testing.T) {
	t.Parallel()
	env := embeddedEnv(t)
	env["HERALD_DEFAULT_LANGUAGE"] = "zh-CN"
	simAddr, smtpAddr := freeAddr(t), freeAddr(t)
	env["HERALD_SIMULATOR_ADDR"], env["HERALD_SIMULATOR_SMTP_ADDR"] = simAddr, smtpAddr
	h := startHerald(t, env)
	waitHTTP(t, h.URL+"/healthz")
	ctx := context.Background()

	p, err := h.App.Store.Directory().RecipientByExternalID(ctx, "E2001")
	if err != nil || p.Name != "刘洋" || p.Branch != "浦东分行" || p.Department != "营业部" {
		t.Errorf("demo person E2001: %+v %v, want 刘洋 of 浦东分行's 营业部", p, err)
	}
	api := newAPIKey(t, h, "send,read")
	want := map[string]string{ // account → the platform and address the simulator must see
		models.DemoWeComAccount:    "wecom wx_E2001",
		models.DemoFeishuAccount:   "feishu fs_E2001",
		models.DemoDingTalkAccount: "dingtalk dt_E2001",
		models.DemoEmailAccount:    "email E2001@example.com",
		// A robot posts to its own group, whoever the message names: the simulator
		// records the robot it came through.
		models.DemoWeComRobotAccount:    "wecom_bot demo",
		models.DemoDingTalkRobotAccount: "dingtalk_bot demo",
		models.DemoFeishuRobotAccount:   "feishu_bot demo",
	}
	sent := map[string]string{} // message id → account
	for account := range want {
		status, body, _ := api.Call("POST", "/api/v1/messages",
			fmt.Sprintf(`{"account":%q,"recipients":["E2001"],"content":{"subject":"试用","text":"第一次试用：%s"}}`, account, account))
		if status != http.StatusAccepted {
			t.Fatalf("send by %s: %d %v", account, status, body["_raw"])
		}
		for _, m := range body["messages"].([]any) {
			sent[m.(map[string]any)["id"].(string)] = account
		}
	}
	// The simulator's own record, read over its HTTP control API as a user would.
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := map[string]string{}
		resp, err := http.Get("http://" + simAddr + "/_sim/deliveries")
		if err != nil {
			t.Fatal(err)
		}
		var list []struct {
			Platform  string `json:"platform"`
			To        string `json:"to"`
			RequestID string `json:"request_id"`
		}
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range list {
			if account, ok := sent[d.RequestID]; ok {
				got[account] = d.Platform + " " + d.To
			}
		}
		if len(got) == len(want) {
			for account, w := range want {
				if got[account] != w {
					t.Errorf("%s delivered as %q, want %q", account, got[account], w)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			for id := range sent {
				if m, err := h.App.Store.MessageByID(ctx, id); err == nil {
					t.Logf("message %s on %s: %s %s", id, m.Platform, m.Status, m.LastError)
				}
			}
			t.Fatalf("deliveries after 20 s: %v, want one for each of %v", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
