package main

import (
	"strings"
	"testing"
	"time"
)

// TestSendAPIDigests: bad digests are refused naming the field; notices wait, fold into
// one message when max have gathered, and the API says which message carried each; a
// high priority notice goes out on its own.
func TestSendAPIDigests(t *testing.T) {
	t.Parallel()
	h := startHerald(t, testEnv(t))
	api := newAPIKey(t, h, "send,read")
	send := func(subject, priority, digest string) (int, map[string]any) {
		t.Helper()
		status, body, _ := api.Call("POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2001"],"priority":"`+priority+
			`","content":{"subject":"`+subject+`","text":"详情见系统"},"digest":`+digest+`}`)
		return status, body
	}
	for _, tt := range []struct {
		name, digest, field string
		status              int
	}{
		{"no key", `{"window":"5m","max":20}`, "digest.key", 422},
		{"window too short", `{"key":"k","window":"5s","max":20}`, "digest.window", 422},
		{"window too long", `{"key":"k","window":"25h","max":20}`, "digest.window", 422},
		{"window unreadable", `{"key":"k","window":"soon","max":20}`, "digest.window", 422},
		{"max too small", `{"key":"k","window":"5m","max":1}`, "digest.max", 422},
		{"max too large", `{"key":"k","window":"5m","max":501}`, "digest.max", 422},
		{"unknown field", `{"key":"k","window":"5m","max":20,"colour":"red"}`, "colour", 400},
	} {
		batches, messages := countRows(t, h, "batches"), countRows(t, h, "messages")
		status, body := send("x", "normal", tt.digest)
		if status != tt.status || errorField(body) != tt.field {
			t.Errorf("%s: %d naming %q, want %d naming %q: %.300s", tt.name, status, errorField(body), tt.status, tt.field, body["_raw"])
		}
		if b, m := countRows(t, h, "batches"), countRows(t, h, "messages"); b != batches || m != messages {
			t.Errorf("%s: a refused request wrote rows", tt.name)
		}
	}

	digest := `{"key":"eod","window":"10m","max":3}`
	var notices []string
	for _, subject := range []string{"日终批量失败", "对账失败", "清算延迟"} {
		status, body := send(subject, "normal", digest)
		if status != 202 {
			t.Fatalf("send: %d %s", status, body["_raw"])
		}
		notices = append(notices, body["messages"].([]any)[0].(map[string]any)["id"].(string))
	}
	status, body := send("核心系统宕机", "high", digest)
	if status != 202 {
		t.Fatalf("send high: %d %s", status, body["_raw"])
	}
	high := body["messages"].([]any)[0].(map[string]any)["id"].(string)

	_, first, _ := api.Call("GET", "/api/v1/messages/"+notices[0], "")
	digestID, _ := first["digest_message_id"].(string)
	if first["status"] != "digested" || digestID == "" {
		t.Fatalf("first notice: %s", first["_raw"])
	}
	for _, id := range notices[1:] {
		if _, m, _ := api.Call("GET", "/api/v1/messages/"+id, ""); m["status"] != "digested" || m["digest_message_id"] != digestID {
			t.Errorf("notice %s: %s", id, m["_raw"])
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, d, _ := api.Call("GET", "/api/v1/messages/"+digestID, "")
		_, hm, _ := api.Call("GET", "/api/v1/messages/"+high, "")
		if d["status"] == "sent" && hm["status"] == "sent" {
			if hm["digest_message_id"] != nil {
				t.Errorf("high notice carried by a digest: %s", hm["_raw"])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not sent after 15 s: digest %s, high %s", d["_raw"], hm["_raw"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	var got []string
	for _, d := range h.App.Sim.Deliveries() {
		got = append(got, d.Content)
	}
	want := "• 日终批量失败\n• 对账失败\n• 清算延迟"
	if !strings.Contains(strings.Join(got, "\n--\n"), want) || len(got) != 2 {
		t.Errorf("deliveries %q: want the digest %q and the high notice, nothing else", got, want)
	}

	// The digest is an ordinary message of its account: inside the account's quiet hours
	// it waits for them to end, as any normal message does.
	now := time.Now().In(h.App.Config.Location)
	admin := newAPIKey(t, h, "admin")
	quiet := `{"name":"quiet","platform":"sandbox","quiet_hours":{"start":"` + now.Add(-time.Hour).Format("15:04") +
		`","end":"` + now.Add(time.Hour).Format("15:04") + `"}}`
	if status, body, _ := admin.Call("POST", "/api/v1/accounts", quiet); status != 201 {
		t.Fatalf("quiet account: %d %s", status, body["_raw"])
	}
	// A template's default digest, through the template API.
	tmpl := `{"name":"night-batch","msg_type":"text","body":"夜间批量 {{.job}}","variables":["job"],"digest":{"key":"night","window":"WINDOW","max":2}}`
	if status, body, _ := admin.Call("POST", "/api/v1/templates", strings.Replace(tmpl, "WINDOW", "1s", 1)); status != 422 || errorField(body) != "digest.window" {
		t.Errorf("template with a 1s window: %d %s, want 422 naming digest.window", status, body["_raw"])
	}
	status, body, _ = admin.Call("POST", "/api/v1/templates", strings.Replace(tmpl, "WINDOW", "1h", 1))
	if d, _ := body["digest"].(map[string]any); status != 201 || d["window"] != "1h" || d["key"] != "night" || d["max"] != 2.0 {
		t.Fatalf("template with a digest: %d %s", status, body["_raw"])
	}
	// The first names the digest itself, the second takes the template's: one key, one group.
	for _, digest := range []string{`,"digest":{"key":"night","window":"1h","max":2}`, ""} {
		status, body, _ := api.Call("POST", "/api/v1/messages", `{"account":"quiet","recipients":["E2002"],"template":"night-batch","variables":{"job":"日终"}`+digest+`}`)
		if status != 202 {
			t.Fatalf("send on the quiet account: %d %s", status, body["_raw"])
		}
		notices = append(notices, body["messages"].([]any)[0].(map[string]any)["id"].(string))
	}
	_, folded, _ := api.Call("GET", "/api/v1/messages/"+notices[len(notices)-1], "")
	quietDigest, _ := folded["digest_message_id"].(string)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, d, _ := api.Call("GET", "/api/v1/messages/"+quietDigest, "")
		if d["status"] == "pending" && d["error_class"] == "quiet_hours" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("digest on the quiet account: %s, want pending for quiet hours", d["_raw"])
		}
	}
}
