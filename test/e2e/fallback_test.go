package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"herald/access"
	"herald/directory"
	"herald/internal/testenv"
	"herald/models"
	"herald/sending"
	"herald/simulator"
)

// TestFallbackChains: a request names a chain; people with no Tianyuan address, and
// people whose Tianyuan message stops (the platform is unreachable and allows no retry),
// get a Zhaohu message linked to the first, within the Zhaohu account's own limit; a
// person with an address on neither is stopped for good; the batch counts who was
// reached, and a callback key hears batch.completed only once every chain has ended.
func TestFallbackChains(t *testing.T) {
	env := testEnv(t)
	h := startHerald(t, env, sweepAtOnce)
	ctx := context.Background()
	sim := simulator.NewWithOptions(simulator.Faults{}, simulator.Options{Seed: 7})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)

	none := 0
	dead := &sending.Account{Name: "ty-dead", Platform: "tianyuan", IsDefault: true, Enabled: true, AllowPrivateNetwork: true,
		MaxAttempts: 3, Healthy: true, RetryPolicy: sending.RetryPolicy{"transient": {MaxRetries: &none}},
		Config: map[string]string{"base_url": "http://127.0.0.1:1/tianyuan", "path": "/messages", "token": "t0ken"}}
	const perSecond = 10
	zh := &sending.Account{Name: "zh-main", Platform: "zhaohu", IsDefault: true, Enabled: true, AllowPrivateNetwork: true,
		MaxAttempts: 3, Healthy: true, Limits: sending.Limits{PerSecond: perSecond},
		Config: map[string]string{"base_url": srv.URL + "/zhaohu", "path": "/messages", "token": "t0ken"}}
	for _, a := range []*sending.Account{dead, zh} {
		if err := h.App.Store.Sending().SaveAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	var people []directory.Recipient
	var ids []string
	for i := range 30 {
		p := directory.Recipient{ExternalID: fmt.Sprintf("FB%03d", i), Name: fmt.Sprintf("Fallback %d", i), OrgType: directory.Branch,
			TianyuanID: fmt.Sprintf("ty_%d", i), ZhaohuID: fmt.Sprintf("zh_%d", i), Active: true}
		switch {
		case i%3 == 0:
			p.TianyuanID = "" // straight to Zhaohu
		case i == 29:
			p.ZhaohuID = "" // nowhere to fall back to
		}
		people = append(people, p)
		ids = append(ids, p.ExternalID)
	}
	if _, err := h.App.Store.Directory().UpsertRecipients(ctx, people); err != nil {
		t.Fatal(err)
	}
	recv := newCallbackReceiver(t)
	cb := &access.CallbackSetting{URL: recv.url, AllowPrivate: true}
	_, secret, err := h.App.Store.Access().CreateCallbackAPIKey(ctx, "crm", "send,read", "test", access.KeyLimits{}, cb)
	if err != nil {
		t.Fatal(err)
	}
	recv.secret.Store(cb.Secret)
	api := &apiClient{T: t, Base: h.URL, Key: secret}

	code, body, _ := api.Call("POST", "/api/v1/messages", `{"platform":"tianyuan","recipients":["FB000"],"content":{"text":"x"},"fallback":["tianyuan"]}`)
	if code != http.StatusUnprocessableEntity || errorField(body) != "fallback" {
		t.Fatalf("a chain back to the first platform: %d %v", code, body["_raw"])
	}
	code, body, _ = api.Call("POST", "/api/v1/messages", `{"platform":"tianyuan","recipients":`+jsonList(ids)+`,"content":{"text":"ledger closed"},"fallback":["zhaohu"]}`)
	if code != http.StatusAccepted {
		t.Fatalf("send: %d %v", code, body["_raw"])
	}
	batchID := body["batch_id"].(string)
	if rej, _ := body["rejected"].([]any); len(rej) != 0 {
		t.Errorf("people without a Tianyuan address were rejected although the chain reaches them: %v", rej)
	}

	var batch map[string]any
	testenv.WaitFor(t, time.Minute, "every chain to end", func() bool {
		_, batch, _ = api.Call("GET", "/api/v1/batches/"+batchID, "")
		counts := batch["counts"].(map[string]any)
		return counts["pending"].(float64)+counts["sending"].(float64)+counts["failed"].(float64) == 0 &&
			counts["sent"].(float64) == 29
	})
	counts := batch["counts"].(map[string]any)
	if counts["reached"].(float64) != 29 || counts["stopped"].(float64) != 30 {
		t.Errorf("counts %v: want 29 people reached over Zhaohu, 30 stopped on Tianyuan", counts)
	}

	// Each chain: a stopped Tianyuan message linked to a sent Zhaohu one.
	rows, err := h.App.Store.SQL().Query("SELECT id, platform, status, error_class, fallback_of, fallback_next, fallback_due FROM messages WHERE batch_id = ?", batchID)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		id, platform, status, class string
		of, next                    *string
		due                         bool
	}
	byID := map[string]row{}
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.platform, &r.status, &r.class, &r.of, &r.next, &r.due); err != nil {
			t.Fatal(err)
		}
		byID[r.id] = r
	}
	rows.Close()
	noAddress, ended := 0, 0
	for _, r := range byID {
		if r.due {
			t.Errorf("message %s still waits for its fallback", r.id)
		}
		switch r.platform {
		case "tianyuan":
			if r.status != "stopped" {
				t.Errorf("tianyuan message %+v", r)
			}
			if r.class == models.ErrorNoAddress {
				noAddress++
			}
			if r.next == nil {
				ended++
				continue
			}
			next, ok := byID[*r.next]
			if !ok || next.of == nil || *next.of != r.id || next.platform != "zhaohu" || next.status != "sent" {
				t.Errorf("chain %s → %+v", r.id, next)
			}
		case "zhaohu":
			if r.of == nil {
				t.Errorf("zhaohu message %s falls back from nothing", r.id)
			}
		}
	}
	if noAddress != 10 || ended != 1 {
		t.Errorf("%d no-address starts (want 10), %d chains ended without a fallback (want 1)", noAddress, ended)
	}
	var one map[string]any
	for _, r := range byID {
		if r.platform == "zhaohu" {
			_, one, _ = api.Call("GET", "/api/v1/messages/"+r.id, "")
			break
		}
	}
	if one["fallback_of"] == nil || one["fallback_next"] != nil {
		t.Errorf("a fallback message over the API: %v", one["_raw"])
	}

	// The Zhaohu account's limit held for the fallbacks.
	var times []int64
	for _, d := range sim.Deliveries() {
		if d.Platform == "zhaohu" {
			times = append(times, d.ReceivedAtMs)
		}
	}
	slices.Sort(times)
	if len(times) != 29 {
		t.Fatalf("zhaohu got %d messages, want 29", len(times))
	}
	for i := range times {
		if j := i + perSecond; j < len(times) && times[j]-times[i] < 1000 {
			t.Fatalf("%d zhaohu deliveries within %d ms: the account's %d a second did not hold", perSecond+1, times[j]-times[i], perSecond)
		}
	}

	// One batch.completed, after every message event of the batch.
	events := recv.waitFor(t, 30+29+1, 30*time.Second)
	completed := slices.IndexFunc(events, func(e callbackEvent) bool { return e.Type == models.EventBatchCompleted })
	if completed != len(events)-1 {
		t.Errorf("batch.completed at %d of %d events", completed, len(events))
	}
}

func jsonList(ids []string) string {
	out := "["
	for i, id := range ids {
		if i > 0 {
			out += ","
		}
		out += `"` + id + `"`
	}
	return out + "]"
}
