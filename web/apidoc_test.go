package web_test

import (
	"bytes"
	"encoding/json"
	"html"
	"net/http"
	"testing"

	"herald/docs"
	"herald/i18n"
)

// operationIDs lists the operations of the OpenAPI description.
func operationIDs(t *testing.T) []string {
	t.Helper()
	var d struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		}
	}
	if err := json.Unmarshal(docs.OpenAPI, &d); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ops := range d.Paths {
		for _, op := range ops {
			ids = append(ids, op.OperationID)
		}
	}
	return ids
}

func TestAPIReference(t *testing.T) {
	t.Parallel()
	c := newConsole(t)

	t.Run("the description needs no key", func(t *testing.T) {
		resp, body := c.as("").get("/api/v1/openapi.json")
		wantStatus(t, "openapi.json", resp, body, http.StatusOK)
		if !bytes.Equal([]byte(body), docs.OpenAPI) || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("openapi.json served as %q, %d bytes; want docs/openapi.json (%d bytes) as JSON", resp.Header.Get("Content-Type"), len(body), len(docs.OpenAPI))
		}
	})

	ids := operationIDs(t)
	if len(ids) < 25 {
		t.Fatalf("the description has %d operations; want every /api/v1 operation", len(ids))
	}
	for _, lang := range i18n.Languages {
		t.Run("every operation in "+lang, func(t *testing.T) {
			resp, body := c.as(viewerUser).do("GET", "/api-reference", "", nil, map[string]string{"Accept-Language": lang})
			wantStatus(t, "reference page", resp, body, http.StatusOK)
			for _, id := range ids {
				summary := i18n.In(lang, "apidoc.op."+id)
				if summary == "apidoc.op."+id || summary == "" {
					t.Errorf("operation %s has no summary in the %s catalog (apidoc.op.%s)", id, lang, id)
					continue
				}
				wantContains(t, "reference page in "+lang, body, `id="op-`+id+`"`, html.EscapeString(summary))
			}
			// The status events a callback URL receives, with their headers and body.
			inHeader := i18n.In(lang, "apidoc.in_header")
			if inHeader == "apidoc.in_header" || inHeader == "" {
				t.Errorf("the %s catalog has no apidoc.in_header", lang)
			}
			wantContains(t, "reference page in "+lang, body, html.EscapeString(inHeader))
			wantContains(t, "reference page", body, `id="op-event_messageSent"`, `id="op-event_batchCompleted"`, "X-Herald-Signature",
				`<a href="#schema-CallbackEvent"><code>CallbackEvent</code></a>`)
			wantContains(t, "reference page", body, `id="schema-SendResponse"`, `<a href="#schema-Reason"><code>Reason</code></a><code>[]</code>`, `<a href="#schema-Batch"><code>Batch</code></a>`,
				`href="/api/v1/openapi.json"`)
		})
	}

	t.Run("signed-out visitors are sent to sign in", func(t *testing.T) {
		resp, _ := c.as("").get("/api-reference")
		if resp.StatusCode != http.StatusSeeOther {
			t.Errorf("anonymous GET /api-reference: %d, want a redirect to sign in", resp.StatusCode)
		}
	})
}
