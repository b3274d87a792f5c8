package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode"

	"herald/i18n"
	"herald/web"
)

// apiClient calls the JSON API with a bearer key, as a system integrating with Herald
// does, and decodes the answer.
type apiClient struct {
	t   *testing.T
	cl  *client
	key string
	// lang, when set, is sent as Accept-Language.
	lang string
}

// api returns a client of the API calling with key ("" for none).
func (c *console) api(key string) *apiClient {
	return &apiClient{t: c.t, cl: c.as(""), key: key}
}

// apiKey makes an API key with scopes and returns a client calling with it.
func (c *console) apiKey(name, scopes string) *apiClient {
	return c.api(newKey(c.t, c, name, scopes))
}

// in returns a client with the same key asking for answers in lang.
func (a *apiClient) in(lang string) *apiClient {
	other := *a
	other.lang = lang
	return &other
}

// call sends a raw body and decodes the JSON answer into a generic map; a list answer
// is under "list", and the raw answer under "_raw".
func (a *apiClient) call(method, path, body string) (int, map[string]any, http.Header) {
	a.t.Helper()
	header := map[string]string{}
	if a.key != "" {
		header["Authorization"] = "Bearer " + a.key
	}
	if a.lang != "" {
		header["Accept-Language"] = a.lang
	}
	resp, raw := a.cl.do(method, path, "application/json", strings.NewReader(body), header)
	out := map[string]any{}
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			a.t.Fatalf("%s %s: answer is not JSON: %s", method, path, raw)
		}
	} else if len(raw) > 0 && raw[0] == '[' {
		var list []any
		_ = json.Unmarshal([]byte(raw), &list)
		out["list"] = list
	}
	out["_raw"] = raw
	return resp.StatusCode, out, resp.Header
}

// errorField is the field an API error answer names, or "".
func errorField(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	f, _ := e["field"].(string)
	return f
}

// errorMessage is the message of an API error answer, or "".
func errorMessage(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// countRows counts the rows of a table (with an optional WHERE after its name).
func (c *console) countRows(table string) int {
	c.t.Helper()
	var n int
	if err := c.store.SQL().QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		c.t.Fatal(err)
	}
	return n
}

func TestSendAPIRejectsBadInputAndWritesNothing(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	api := c.apiKey("test-send-read", "send,read")
	future := time.Now().Add(48 * time.Hour).Format(time.RFC3339)
	many := make([]string, 10001)
	for i := range many {
		many[i] = fmt.Sprintf("E%05d", i)
	}
	manyJSON, _ := json.Marshal(many)
	big := `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"` + strings.Repeat("x", 1<<20) + `"}}`

	tests := []struct {
		name   string
		body   string
		status int
		field  string
	}{
		{"not json", `{"platform":`, 400, ""},
		{"unknown field", `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"hi"},"colour":"red"}`, 400, "colour"},
		{"duplicate key", `{"platform":"sandbox","platform":"wecom","recipients":["E2001"],"content":{"text":"hi"}}`, 400, ""},
		{"invalid utf-8", "{\"platform\":\"sandbox\",\"recipients\":[\"E2001\"],\"content\":{\"text\":\"\xff\xfe\"}}", 400, ""},
		{"body over 1 MiB", big, 413, ""},
		{"wrong type", `{"platform":"sandbox","recipients":"E2001","content":{"text":"hi"}}`, 422, "recipients"},
		{"body not an object", `["E2001"]`, 400, ""},
		{"NUL in the text", `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"hi\u0000there"}}`, 422, "content.text"},
		{"escape character in the subject", `{"platform":"sandbox","recipients":["E2001"],"content":{"subject":"a\u001bb","text":"hi"}}`, 422, "content.subject"},
		{"control character in a variable", `{"platform":"sandbox","recipients":["E2001"],"template":"task-overdue","variables":{"task":"x\u0007"}}`, 422, "variables.task"},
		{"newlines and tabs are text", `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"line one\r\n\tline two"}}`, 202, ""},
		{"no platform or account", `{"recipients":["E2001"],"content":{"text":"hi"}}`, 422, "platform"},
		{"unknown platform", `{"platform":"fax","recipients":["E2001"],"content":{"text":"hi"}}`, 422, "platform"},
		{"unknown account", `{"account":"nope","recipients":["E2001"],"content":{"text":"hi"}}`, 422, "account"},
		{"account on another platform", `{"platform":"wecom","account":"sandbox","recipients":["E2001"],"content":{"text":"hi"}}`, 422, "account"},
		{"platform without default account", `{"platform":"wecom","recipients":["E2001"],"content":{"text":"hi"}}`, 422, "platform"},
		{"no recipients", `{"platform":"sandbox","recipients":[],"content":{"text":"hi"}}`, 422, "recipients"},
		{"too many recipients", `{"platform":"sandbox","recipients":` + string(manyJSON) + `,"content":{"text":"hi"}}`, 422, "recipients"},
		{"empty recipient id", `{"platform":"sandbox","recipients":["E2001",""],"content":{"text":"hi"}}`, 422, "recipients[1]"},
		{"no content", `{"platform":"sandbox","recipients":["E2001"]}`, 422, "content.text"},
		{"template and content", `{"platform":"sandbox","recipients":["E2001"],"template":"task-overdue","variables":{"task":"x"},"content":{"text":"hi"}}`, 422, "content"},
		{"unknown template", `{"platform":"sandbox","recipients":["E2001"],"template":"nope"}`, 422, "template"},
		{"missing variable", `{"platform":"sandbox","recipients":["E2001"],"template":"task-overdue","variables":{}}`, 422, "variables.task"},
		{"undeclared variable", `{"platform":"sandbox","recipients":["E2001"],"template":"task-overdue","variables":{"task":"x","colour":"red"}}`, 422, "variables.colour"},
		{"bad priority", `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"hi"},"priority":"urgent"}`, 422, "priority"},
		{"send_at without offset", `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"hi"},"send_at":"2026-12-01T09:00:00"}`, 422, "send_at"},
		{"send_at in the past", `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"hi"},"send_at":"2020-01-01T09:00:00+08:00"}`, 422, "send_at"},
		{"send_at too far ahead", `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"hi"},"send_at":"` + time.Now().AddDate(0, 4, 0).Format(time.RFC3339) + `"}`, 422, "send_at"},
		{"content too long for the platform", `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"` + strings.Repeat("长", 2000) + `"}}`, 422, "content.text"},
		{"idempotency key too long", `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"hi"},"idempotency_key":"` + strings.Repeat("k", 129) + `"}`, 422, "idempotency_key"},
		{"valid future send is accepted", `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"hi"},"send_at":"` + future + `"}`, 202, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			batches, messages := c.countRows("batches"), c.countRows("messages")
			status, body, _ := api.call("POST", "/api/v1/messages", tt.body)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %.300s", status, tt.status, body["_raw"])
			}
			if msg := errorMessage(body); tt.status != 202 && (msg == "" || strings.HasPrefix(msg, " ")) {
				t.Errorf("error message %q does not say what is wrong", msg)
			}
			if got := errorField(body); got != tt.field {
				t.Errorf("error field %q, want %q: %.300s", got, tt.field, body["_raw"])
			}
			if tt.status == 202 {
				return
			}
			if b, m := c.countRows("batches"), c.countRows("messages"); b != batches || m != messages {
				t.Errorf("a rejected request wrote rows: batches %d→%d, messages %d→%d", batches, b, messages, m)
			}
		})
	}
}

// TestAPIErrorMessagesFollowAcceptLanguage: an invalid request gets the same status,
// code and field whatever the caller's language; its message is English unless the
// caller asks for Chinese with Accept-Language, even where the console's own default
// is Chinese.
func TestAPIErrorMessagesFollowAcceptLanguage(t *testing.T) {
	t.Parallel()
	c := newConsole(t, func(o *web.Options) { o.DefaultLanguage = i18n.Chinese })
	en := c.apiKey("test-send-read", "send,read")
	zh := en.in("zh-CN,zh;q=0.9")
	english := en.in("en-US,en;q=0.9")
	hasHan := func(s string) bool {
		for _, r := range s {
			if unicode.Is(unicode.Han, r) {
				return true
			}
		}
		return false
	}
	tests := []struct {
		name, method, path, body string
		status                   int
		code, field              string
		wantEN, wantZH           string // parts of the message
	}{
		{"bad priority", "POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"hi"},"priority":"urgent"}`,
			422, "validation_failed", "priority", "priority must be high, normal or low", "priority：必须是 high、normal 或 low"},
		{"send_at without offset", "POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"hi"},"send_at":"2026-12-01T09:00:00"}`,
			422, "validation_failed", "send_at", "send_at must include a UTC offset", "send_at：必须包含 UTC 偏移"},
		{"no recipients", "POST", "/api/v1/messages", `{"platform":"sandbox","recipients":[],"content":{"text":"hi"}}`,
			422, "validation_failed", "recipients", "name at least one recipient", "请至少指定一个接收人"},
		{"wrong type", "POST", "/api/v1/messages", `{"platform":"sandbox","recipients":"E2001","content":{"text":"hi"}}`,
			422, "validation_failed", "recipients", "recipients must be an array, not a string", "recipients 必须是数组，而不是字符串"},
		{"body not an object", "POST", "/api/v1/messages", `["E2001"]`,
			400, "invalid_json", "", "the body must be an object, not an array", "请求体必须是对象，而不是数组"},
		{"unknown field", "POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"hi"},"colour":"red"}`,
			400, "invalid_json", "colour", "unknown field colour", "未知字段 colour"},
		{"duplicate key", "POST", "/api/v1/messages", `{"platform":"sandbox","platform":"wecom","recipients":["E2001"],"content":{"text":"hi"}}`,
			400, "invalid_json", "", `duplicate key "platform"`, `重复的键 "platform"`},
		{"no such message", "GET", "/api/v1/messages/no-such-message", "",
			404, "not_found", "", "no such resource", "资源不存在"},
		{"no such endpoint", "GET", "/api/v1/no-such-endpoint", "",
			404, "not_found", "", "no such endpoint", "接口不存在"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var codes, fields, messages [3]string
			for i, a := range []*apiClient{en, english, zh} {
				status, body, _ := a.call(tt.method, tt.path, tt.body)
				if status != tt.status {
					t.Fatalf("Accept-Language %q: status %d, want %d: %s", a.lang, status, tt.status, body["_raw"])
				}
				e, _ := body["error"].(map[string]any)
				codes[i], _ = e["code"].(string)
				fields[i], messages[i] = errorField(body), errorMessage(body)
			}
			for i := range codes {
				if codes[i] != tt.code || fields[i] != tt.field {
					t.Errorf("answer %d: code %q field %q, want %q %q", i, codes[i], fields[i], tt.code, tt.field)
				}
			}
			for i, m := range messages[:2] {
				if !strings.Contains(m, tt.wantEN) || hasHan(m) {
					t.Errorf("English answer %d: message %q, want English saying %q", i, m, tt.wantEN)
				}
			}
			if !strings.Contains(messages[2], tt.wantZH) {
				t.Errorf("Chinese answer: message %q, want %q", messages[2], tt.wantZH)
			}
		})
	}
	// Refused keys answer in the caller's language too.
	anonymous := c.api("").in("zh-CN")
	if status, body, _ := anonymous.call("GET", "/api/v1/batches/x", ""); status != 401 || !hasHan(errorMessage(body)) {
		t.Errorf("no key, Chinese caller: %d %s, want 401 in Chinese", status, body["_raw"])
	}
}

func TestSendAPICancelScheduledMessage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	api := c.apiKey("test-send-read", "send,read")
	at := time.Now().Add(time.Hour).Format(time.RFC3339)
	status, body, _ := api.call("POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2002"],"content":{"text":"later"},"send_at":"`+at+`"}`)
	if status != 202 {
		t.Fatalf("send: %d %s", status, body["_raw"])
	}
	id := body["messages"].([]any)[0].(map[string]any)["id"].(string)
	if status, body, _ := api.call("POST", "/api/v1/messages/"+id+"/cancel", ""); status != 200 || body["status"] != "cancelled" {
		t.Fatalf("cancel: %d %s", status, body["_raw"])
	}
	if status, _, _ := api.call("POST", "/api/v1/messages/"+id+"/cancel", ""); status != 409 {
		t.Errorf("cancel twice: %d, want 409", status)
	}
}

func TestSendAPIIdempotency(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	api := c.apiKey("test-send", "send")
	body := `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"once"},"idempotency_key":"order-42"}`
	status, first, _ := api.call("POST", "/api/v1/messages", body)
	if status != 202 {
		t.Fatalf("first: %d %s", status, first["_raw"])
	}
	// The same body, even with other whitespace and key order, replays the first answer.
	again := `{ "idempotency_key":"order-42", "content":{"text":"once"}, "recipients":["E2001"], "platform":"sandbox" }`
	status, replay, hdr := api.call("POST", "/api/v1/messages", again)
	if status != 202 || replay["_raw"] != first["_raw"] || hdr.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %d %s (replayed=%q), want the first answer %s", status, replay["_raw"], hdr.Get("Idempotent-Replayed"), first["_raw"])
	}
	if n := c.countRows("batches"); n != 1 {
		t.Errorf("%d batches after a replay, want 1", n)
	}
	status, mismatch, _ := api.call("POST", "/api/v1/messages", strings.Replace(body, "once", "twice", 1))
	if status != 422 || errorField(mismatch) != "idempotency_key" {
		t.Errorf("different body: %d %s, want 422 naming idempotency_key", status, mismatch["_raw"])
	}
	// A request still in flight: claim a key as another request would, then collide.
	k, _ := c.store.Access().AuthenticateAPIKey(context.Background(), api.key)
	if _, err := c.store.Intake().BeginIdempotent(context.Background(), k.ID, "order-43", "somehash"); err != nil {
		t.Fatal(err)
	}
	status, inflight, _ := api.call("POST", "/api/v1/messages", strings.Replace(body, "order-42", "order-43", 1))
	if status != 409 {
		t.Errorf("in flight: %d %s, want 409", status, inflight["_raw"])
	}
	// A rejected request frees its key for a corrected retry.
	bad := `{"platform":"sandbox","recipients":["E2001"],"idempotency_key":"order-44"}`
	if status, _, _ := api.call("POST", "/api/v1/messages", bad); status != 422 {
		t.Fatalf("bad request: %d", status)
	}
	good := `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"fixed"},"idempotency_key":"order-44"}`
	if status, body, _ := api.call("POST", "/api/v1/messages", good); status != 202 {
		t.Errorf("corrected retry with the same key: %d %s", status, body["_raw"])
	}
}

func TestAPIAuthAndScopes(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	reader := c.apiKey("test-read", "read")
	tests := []struct {
		name   string
		client *apiClient
		method string
		path   string
		status int
	}{
		{"no key", c.api(""), "GET", "/api/v1/batches/x", 401},
		{"wrong key", c.api("hk_000000000000_bad"), "GET", "/api/v1/batches/x", 401},
		{"read key cannot send", reader, "POST", "/api/v1/messages", 403},
		{"read key cannot admin", reader, "GET", "/api/v1/recipients", 403},
		{"read key reads", reader, "GET", "/api/v1/batches/none", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if status, body, _ := tt.client.call(tt.method, tt.path, "{}"); status != tt.status {
				t.Errorf("%s %s: %d, want %d: %s", tt.method, tt.path, status, tt.status, body["_raw"])
			}
		})
	}
	k, _ := c.store.Access().AuthenticateAPIKey(context.Background(), reader.key)
	if err := c.store.Access().RevokeAPIKey(context.Background(), k.ID); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := reader.call("GET", "/api/v1/batches/none", ""); status != 401 {
		t.Errorf("revoked key: %d, want 401", status)
	}
}

func TestAdminAPISetsHeraldUpWithoutABrowser(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	api := c.apiKey("test-admin", "admin")

	status, body, _ := api.call("PUT", "/api/v1/recipients", `[
		{"external_id":"H1","name":"Head One","org_type":"head_office","tianyuan_id":"ty1"},
		{"external_id":"B1","name":"Branch One","org_type":"branch","branch":"Pudong","tianyuan_id":"ty2"},
		{"external_id":"E1001","name":"Li Wei (renamed)","org_type":"head_office","tianyuan_id":"ty_E1001"}]`)
	if status != 200 || body["created"] != 2.0 || body["updated"] != 1.0 {
		t.Fatalf("upsert: %d %s", status, body["_raw"])
	}
	status, body, _ = api.call("PUT", "/api/v1/recipients", `[{"external_id":"H2","name":"x","org_type":"head_office"},{"external_id":"H3","name":"y","org_type":"board"}]`)
	if status != 422 || errorField(body) != "[1].org_type" {
		t.Errorf("bad upsert: %d %s, want 422 naming [1].org_type", status, body["_raw"])
	}
	if _, list, _ := api.call("GET", "/api/v1/recipients?q=H2", ""); len(list["recipients"].([]any)) != 0 {
		t.Errorf("a rejected upsert wrote H2: %s", list["_raw"])
	}

	week := `{"1":["H1"],"2":["H1"],"3":["H1"],"4":["H1"],"5":["H1"],"6":["H1"],"7":["H1"]}`
	if status, body, _ := api.call("PUT", "/api/v1/duty/week", week); status != 200 || body["3"].([]any)[0] != "H1" {
		t.Fatalf("duty week: %d %s", status, body["_raw"])
	}
	// Each bulk change is audited per recipient and the week before and after, so an
	// auditor can answer who changed E1001, when and from where.
	for target, want := range map[string]string{
		"H1":    `recipient.create|apikey:test-admin|{"external_id":"H1",`,
		"E1001": `recipient.update|apikey:test-admin|{"changes":"name: `,
	} {
		var action, actor, params, ip string
		err := c.store.SQL().QueryRow(`SELECT action, actor, params, ip FROM audit_log WHERE target_type = 'recipient' AND target_id = ?`, target).
			Scan(&action, &actor, &params, &ip)
		if got := action + "|" + actor + "|" + params; err != nil || !strings.HasPrefix(got, want) || !strings.Contains(params, `"via":"api"`) || ip == "" {
			t.Errorf("audit entry of %s: %q from %q (%v), want %q… with the caller's address", target, got, ip, err, want)
		}
	}
	var weekParams string
	if err := c.store.SQL().QueryRow(`SELECT params FROM audit_log WHERE action = 'duty.week.replace' ORDER BY id DESC LIMIT 1`).Scan(&weekParams); err != nil ||
		!strings.Contains(weekParams, "3: ") || !strings.Contains(weekParams, "→ H1") {
		t.Errorf("duty week audit params %q (%v), want each changed weekday before → after", weekParams, err)
	}
	if status, body, _ := api.call("PUT", "/api/v1/duty/week", `{"1":["B1"]}`); status != 422 || errorField(body) != "1[0]" {
		t.Errorf("branch person on duty: %d %s, want 422 naming 1[0]", status, body["_raw"])
	}
	// The next Friday: make it a day off, and the Sunday after it a workday as Monday.
	// (An override must be dated today or later.)
	friday := time.Now().AddDate(0, 0, 2)
	for friday.Weekday() != time.Friday {
		friday = friday.AddDate(0, 0, 1)
	}
	fri, sun := friday.Format(time.DateOnly), friday.AddDate(0, 0, 2).Format(time.DateOnly)
	hol := `[{"date":"` + fri + `","kind":"off","name":"Closed"},{"date":"` + sun + `","kind":"workday","as_weekday":1}]`
	if status, body, _ := api.call("PUT", "/api/v1/duty/holidays", hol); status != 200 {
		t.Fatalf("holidays: %d %s", status, body["_raw"])
	}
	if status, body, _ := api.call("GET", "/api/v1/duty/roster?date="+fri, ""); status != 200 || body["day_off"] != true || body["configured"] != true ||
		len(body["on_duty"].([]any)) != 0 {
		t.Errorf("roster on a day off: %d %s, want a day off with nobody on duty, not a missing schedule", status, body["_raw"])
	}
	if status, body, _ := api.call("PUT", "/api/v1/duty/overrides", `{"date":"`+fri+`","recipient":"H1","action":"add"}`); status != 200 {
		t.Fatalf("override: %d %s", status, body["_raw"])
	}
	_, roster, _ := api.call("GET", "/api/v1/duty/roster?date="+fri, "")
	if onDuty, _ := json.Marshal(roster["on_duty"]); !bytes.Contains(onDuty, []byte(`"H1"`)) {
		t.Errorf("roster after add override: %s", roster["_raw"])
	}

	tmpl := `{"name":"ledger","msg_type":"text","subject":"Ledger","body":"Hello {{.recipient.name}}: {{.item}}","variables":["item"]}`
	if status, body, _ := api.call("POST", "/api/v1/templates", tmpl); status != 201 {
		t.Fatalf("template: %d %s", status, body["_raw"])
	}
	if status, body, _ := api.call("POST", "/api/v1/templates", `{"name":"bad","msg_type":"text","body":"{{.undeclared}}","variables":[]}`); status != 422 || errorField(body) != "body" {
		t.Errorf("template using an undeclared variable: %d %s, want 422 naming body", status, body["_raw"])
	}
	if status, body, _ := api.call("POST", "/api/v1/templates", `{"name":"bad2","msg_type":"text","body":"{{.x","variables":["x"]}`); status != 422 || errorField(body) != "body" {
		t.Errorf("template with a syntax error: %d %s, want 422 naming body", status, body["_raw"])
	}
	for _, runaway := range []struct{ body, message string }{
		{`{"name":"runaway","msg_type":"text","body":"{{range 20}}{{printf \"%999999d\" 0}}{{end}}"}`, "range is not allowed"},
		{`{"name":"runaway2","msg_type":"text","body":"{{printf \"%999999d\" 0}}"}`, "printf width 999999 exceeds 100"},
	} {
		status, body, _ := api.call("POST", "/api/v1/templates", runaway.body)
		e, _ := body["error"].(map[string]any)
		if message, _ := e["message"].(string); status != 422 || errorField(body) != "body" || !strings.Contains(message, runaway.message) {
			t.Errorf("runaway template: %d %s, want 422 naming body, saying %q", status, body["_raw"], runaway.message)
		}
	}
	if status, body, _ := api.call("PUT", "/api/v1/templates/ledger", `{"msg_type":"text","body":"{{range 1000}}{{range 1000}}{{$.item}}{{end}}{{end}}","variables":["item"]}`); status != 422 || errorField(body) != "body" {
		t.Errorf("nested ranges on update: %d %s, want 422 naming body", status, body["_raw"])
	}

	acct := fmt.Sprintf(`{"name":"ty-main","platform":"tianyuan","is_default":true,"allow_private_network":true,
		"config":{"base_url":"http://127.0.0.1:1","token":"s3cret-token"},"limits":{"per_second":10}}`)
	status, body, _ = api.call("POST", "/api/v1/accounts", acct)
	if status != 201 {
		t.Fatalf("account: %d %s", status, body["_raw"])
	}
	if strings.Contains(body["_raw"].(string), "s3cret-token") {
		t.Errorf("account answer reveals the token: %s", body["_raw"])
	}
	status, body, _ = api.call("POST", "/api/v1/accounts", `{"name":"ty-odd","platform":"tianyuan","allow_private_network":true,
		"config":{"base_url":"http://127.0.0.1:1","token":"t"},"limits":{"per_second":20,"per_minute":10}}`)
	if warnings, _ := body["warnings"].([]any); status != 201 || len(warnings) == 0 {
		t.Errorf("per_second above per_minute: %d %s, want created with a warning", status, body["_raw"])
	}
	status, body, _ = api.call("PUT", "/api/v1/accounts/ty-main", `{"platform":"tianyuan","is_default":true,"allow_private_network":true,
		"config":{"base_url":"http://127.0.0.1:1","token":"********"},"limits":{"per_second":5}}`)
	if status != 200 {
		t.Fatalf("account update: %d %s", status, body["_raw"])
	}
	stored, err := c.store.Sending().AccountByName(context.Background(), "ty-main")
	if err != nil || stored.Config["token"] != "s3cret-token" || stored.Limits.PerSecond != 5 {
		t.Errorf("masked token on update must keep the stored one: %+v %v", stored, err)
	}
	status, body, _ = api.call("PUT", "/api/v1/accounts/ty-main", `{"platform":"tianyuan","is_default":true,"allow_private_network":true,
		"config":{"base_url":"http://127.0.0.1:2","token":"********"}}`)
	if status != 422 || errorField(body) != "config.token" {
		t.Errorf("masked token with a new base_url: %d %s, want 422 naming config.token", status, body["_raw"])
	}
	if status, body, _ := api.call("POST", "/api/v1/accounts", `{"name":"ty2","platform":"tianyuan","config":{"token":"t"}}`); status != 422 || errorField(body) != "config.base_url" {
		t.Errorf("account without base_url: %d %s, want 422 naming config.base_url", status, body["_raw"])
	}
	if status, body, _ := api.call("POST", "/api/v1/accounts", `{"name":"ty3","platform":"tianyuan","config":{"base_url":"http://10.0.0.1","token":"t"}}`); status != 422 || errorField(body) != "config.base_url" {
		t.Errorf("private base_url without allow_private_network: %d %s, want 422", status, body["_raw"])
	}
	if status, body, _ := api.call("POST", "/api/v1/accounts", `{"name":"ty4","platform":"tianyuan","config":{"base_url":"http://127.0.0.1","token":"t"},"limits":{"per_minute":-1}}`); status != 422 || errorField(body) != "limits.per_minute" {
		t.Errorf("negative limit: %d %s, want 422 naming limits.per_minute", status, body["_raw"])
	}
	if status, body, _ := api.call("POST", "/api/v1/accounts", `{"name":"ty5","platform":"tianyuan","config":{"base_url":"http://127.0.0.1","token":"t"},
		"retry_policy":{"throttled":{"max_retries":1}}}`); status != 422 || errorField(body) != "retry_policy.throttled" {
		t.Errorf("adjusting throttled retries: %d %s, want 422 naming retry_policy.throttled", status, body["_raw"])
	}
	status, body, _ = api.call("POST", "/api/v1/accounts", `{"name":"ty6","platform":"tianyuan","allow_private_network":true,
		"config":{"base_url":"http://127.0.0.1","token":"t"},"retry_policy":{"rate_limited":{"max_retries":3,"delay_seconds":30}}}`)
	if policy, _ := body["retry_policy"].(map[string]any); status != 201 || fmt.Sprint(policy["rate_limited"]) != "map[delay_seconds:30 max_retries:3]" {
		t.Errorf("account with a retry policy: %d %s", status, body["_raw"])
	}
}

// TestSendAPIToWholeGroups: a send may name whole departments and branches, which
// expand to their active members (with duty applied to head-office staff, as for named
// recipients); a person in both is sent one message.
func TestSendAPIToWholeGroups(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	api := c.apiKey("test-send-read", "send,read")
	status, out, _ := api.call("POST", "/api/v1/messages",
		`{"platform":"sandbox","departments":["Credit"],"branches":["Pudong Branch"],"content":{"text":"branch notice"}}`)
	if status != http.StatusAccepted {
		t.Fatalf("send to groups: %d %v", status, out)
	}
	got := map[string]bool{}
	for _, m := range out["messages"].([]any) {
		got[m.(map[string]any)["recipient"].(string)] = true
	}
	// Pudong Branch: E2001, E2003; Credit: E2003.
	if len(got) != 2 || !got["E2001"] || !got["E2003"] {
		t.Errorf("messages to %v, want E2001 and E2003 once each", got)
	}
	if status, out, _ := api.call("POST", "/api/v1/messages", `{"platform":"sandbox","branches":["No Such Branch"],"content":{"text":"x"}}`); status != http.StatusUnprocessableEntity {
		t.Errorf("a branch with nobody in it: %d %v, want 422", status, out)
	}
}
