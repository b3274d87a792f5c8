package testenv

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"herald/docs"
)

// The checker must accept an answer the description allows and name what is wrong in
// one it does not, or the API tests that rely on it prove nothing.
func TestAPIAnswerProblems(t *testing.T) {
	jsonType := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	tests := []struct {
		name, method, path string
		status             int
		body               string
		want               string // a fragment of the problems; "" = none
	}{
		{"a send answer", "POST", "/api/v1/messages", 202,
			`{"batch_id":"b1","status":"open","accepted":1,"messages":[{"id":"m1","recipient":"E1","status":"pending"}],"skipped":[],"rejected":[{"recipient":"E9","reason":"unknown_recipient"}]}`, ""},
		{"a send answer without its batch", "POST", "/api/v1/messages", 202,
			`{"accepted":1,"messages":[],"skipped":[],"rejected":[]}`, "batch_id"},
		{"an unknown skip reason", "POST", "/api/v1/messages", 202,
			`{"batch_id":"b1","status":"open","accepted":0,"messages":[],"skipped":[{"recipient":"E1","reason":"skipped[0].reason"}],"rejected":[]}`, "skipped[0].reason"},
		{"an error", "GET", "/api/v1/messages/m1", 404, `{"error":{"code":"not_found","message":"no message m1"}}`, ""},
		{"an error code nobody documented", "GET", "/api/v1/messages/m1", 404, `{"error":{"code":"gone","message":"x"}}`, "error.code"},
		{"a status the operation does not answer", "GET", "/api/v1/templates", 409, `{"error":{"code":"invalid_state","message":"x"}}`, "409"},
		{"an unknown endpoint's 404", "GET", "/api/v1/nothing", 404, `{"error":{"code":"not_found","message":"x"}}`, ""},
		{"an unknown endpoint answering 200", "GET", "/api/v1/nothing", 200, `{}`, "nothing"},
		{"outside the API", "GET", "/dashboard", 200, `<html>`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, "http://127.0.0.1:8080"+tt.path, nil)
			problems, err := APIAnswerProblems(req, tt.status, jsonType, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == "" && problems != "":
				t.Errorf("want no problems, got %s", problems)
			case tt.want != "" && !strings.Contains(problems, tt.want):
				t.Errorf("want problems naming %q, got %q", tt.want, problems)
			}
		})
	}
}

// The description's own check must find what breaks a description, or answers checked
// against a broken one would pass or fail for the wrong reason.
func TestAPIDescriptionProblems(t *testing.T) {
	if _, err := apiDescription(); err != nil {
		t.Fatalf("docs/openapi.json: %v", err)
	}
	responses := func(doc map[string]any, path, method string) map[string]any {
		return doc["paths"].(map[string]any)[path].(map[string]any)[method].(map[string]any)["responses"].(map[string]any)
	}
	tests := []struct {
		name   string
		doctor func(doc map[string]any)
		want   string
	}{
		{"an answer without a description", func(doc map[string]any) {
			delete(responses(doc, "/api/v1/messages", "post")["202"].(map[string]any), "description")
		}, "POST /api/v1/messages answer 202: no description"},
		{"a reference to nothing", func(doc map[string]any) {
			responses(doc, "/api/v1/messages", "post")["404"] = map[string]any{"$ref": "#/components/responses/Gone"}
		}, "POST /api/v1/messages answer 404: reference #/components/responses/Gone points at nothing"},
		{"a schema that does not compile", func(doc map[string]any) {
			doc["components"].(map[string]any)["schemas"].(map[string]any)["Error"] = map[string]any{"type": 5}
		}, "/components/schemas/Error does not compile"},
		{"a schema referring to a schema nobody wrote", func(doc map[string]any) {
			responses(doc, "/api/v1/messages", "post")["202"].(map[string]any)["content"] = map[string]any{
				"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Nothing"}}}
		}, "POST /api/v1/messages answer 202: docs/openapi.json: the schema at /paths/~1api~1v1~1messages/post/responses/202/content/application~1json/schema does not compile"},
		{"two operations with one id", func(doc map[string]any) {
			doc["paths"].(map[string]any)["/api/v1/templates"].(map[string]any)["get"].(map[string]any)["operationId"] = "sendMessages"
		}, "operationId sendMessages is also"},
		{"an operation without answers", func(doc map[string]any) {
			doc["paths"].(map[string]any)["/api/v1/templates"].(map[string]any)["get"].(map[string]any)["responses"] = map[string]any{}
		}, "GET /api/v1/templates: no responses"},
		{"another version", func(doc map[string]any) { doc["openapi"] = "3.0.3" }, `openapi is "3.0.3", want 3.1.x`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(docs.OpenAPI, &doc); err != nil {
				t.Fatal(err)
			}
			tt.doctor(doc)
			text, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = readAPIDoc(text)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("want an error naming %q, got %v", tt.want, err)
			}
		})
	}
}
