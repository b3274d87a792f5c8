package testenv

import (
	"net/http"
	"strings"
	"testing"
)

// The checker must accept an answer the description allows and name what is wrong in
// one it does not, or the API tests that rely on it prove nothing.
func TestAPIAnswerProblems(t *testing.T) {
	json := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
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
			problems, err := APIAnswerProblems(req, tt.status, json, []byte(tt.body))
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
