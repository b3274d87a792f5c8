package handlers

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"

	"herald/docs"
	"herald/views"
)

// OpenAPIDescription is GET /api/v1/openapi.json: the API's OpenAPI 3.1 description. It
// holds no secret and needs no key, so tools can read it before they are given one.
func (h *Handlers) OpenAPIDescription(c *gin.Context) {
	c.Data(http.StatusOK, "application/json; charset=utf-8", docs.OpenAPI)
}

// APIReference is the console's page that renders the OpenAPI description readably,
// with no script or style from elsewhere.
func (h *Handlers) APIReference(c *gin.Context) {
	ref, err := apiReference()
	if err != nil {
		h.fail(c, err)
		return
	}
	render(c, http.StatusOK, views.APIReferencePage(page(c, tr(c, "title.api_reference"), "apikeys"), ref))
}

// The parts of an OpenAPI document the reference page shows.
type (
	oaDocument struct {
		Tags  []struct{ Name string }
		Paths map[string]map[string]oaOperation
		// Webhooks are the status events Herald posts to a key's callback URL.
		Webhooks   map[string]map[string]oaOperation
		Components struct {
			Schemas    map[string]*oaSchema
			Parameters map[string]oaParameter
		}
	}
	oaOperation struct {
		OperationID string `json:"operationId"`
		Tags        []string
		Summary     string
		Parameters  []oaParameter
		RequestBody *struct {
			Content map[string]struct{ Schema *oaSchema }
		} `json:"requestBody"`
		Responses map[string]struct {
			Ref     string `json:"$ref"`
			Content map[string]struct{ Schema *oaSchema }
		}
	}
	oaParameter struct {
		Ref      string `json:"$ref"`
		Name     string
		In       string
		Required bool
		Schema   *oaSchema
	}
	oaSchema struct {
		Ref                  string `json:"$ref"`
		Type                 any
		Enum                 []any
		Items                *oaSchema
		Properties           map[string]*oaSchema
		PatternProperties    map[string]*oaSchema `json:"patternProperties"`
		AdditionalProperties any                  `json:"additionalProperties"`
		Required             []string
		OneOf                []*oaSchema `json:"oneOf"`
	}
)

// apiReference parses the embedded description once.
var apiReference = sync.OnceValues(func() (views.APIReference, error) {
	var d oaDocument
	if err := json.Unmarshal(docs.OpenAPI, &d); err != nil {
		return views.APIReference{}, fmt.Errorf("handlers: openapi.json: %w", err)
	}
	var ref views.APIReference
	byTag := map[string]*views.APIGroup{}
	for _, t := range d.Tags {
		ref.Groups = append(ref.Groups, views.APIGroup{Tag: t.Name})
	}
	for i := range ref.Groups {
		byTag[ref.Groups[i].Tag] = &ref.Groups[i]
	}
	operation := func(id, method, path string, op oaOperation) views.APIOperation {
		out := views.APIOperation{ID: id, Method: strings.ToUpper(method), Path: path}
		for _, p := range op.Parameters {
			if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
				p = d.Components.Parameters[name]
			}
			out.Parameters = append(out.Parameters, views.APIField{Name: p.Name, In: p.In, Type: schemaType(p.Schema), Required: p.Required})
		}
		if op.RequestBody != nil {
			out.Body = schemaType(op.RequestBody.Content["application/json"].Schema)
		}
		for _, code := range slices.Sorted(maps.Keys(op.Responses)) {
			r := op.Responses[code]
			answer := views.APIAnswer{Code: code}
			if name, ok := strings.CutPrefix(r.Ref, "#/components/responses/"); ok {
				answer.Schema = name
			} else if ct, ok := r.Content["application/json"]; ok {
				answer.Schema = schemaType(ct.Schema)
			}
			out.Answers = append(out.Answers, answer)
		}
		return out
	}
	for _, path := range slices.Sorted(maps.Keys(d.Paths)) {
		for _, method := range []string{"get", "post", "put", "delete"} {
			op, ok := d.Paths[path][method]
			if !ok || len(op.Tags) == 0 || byTag[op.Tags[0]] == nil {
				continue
			}
			g := byTag[op.Tags[0]]
			g.Operations = append(g.Operations, operation(op.OperationID, method, path, op))
		}
	}
	// The events a callback URL receives, with the callback endpoint's group.
	if g := byTag["callbacks"]; g != nil {
		for _, name := range slices.Sorted(maps.Keys(d.Webhooks)) {
			if op, ok := d.Webhooks[name]["post"]; ok {
				g.Operations = append(g.Operations, operation("event_"+name, "post", "{callback URL}", op))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.Components.Schemas)) {
		s := d.Components.Schemas[name]
		out := views.APISchema{Name: name, Type: schemaType(s)}
		for _, field := range slices.Sorted(maps.Keys(s.Properties)) {
			out.Fields = append(out.Fields, views.APIField{Name: field, Type: schemaType(s.Properties[field]), Required: slices.Contains(s.Required, field)})
		}
		for _, pattern := range slices.Sorted(maps.Keys(s.PatternProperties)) {
			out.Fields = append(out.Fields, views.APIField{Name: pattern, Type: schemaType(s.PatternProperties[pattern])})
		}
		ref.Schemas = append(ref.Schemas, out)
	}
	return ref, nil
})

// schemaType writes a schema in a notation that needs no translation: a schema's name,
// a JSON type, X[] for an array, map<string, X> for an object of X, "a" | "b" for the
// allowed values, X | null.
func schemaType(s *oaSchema) string {
	switch {
	case s == nil:
		return ""
	case s.Ref != "":
		return strings.TrimPrefix(s.Ref, "#/components/schemas/")
	case len(s.OneOf) > 0:
		parts := make([]string, len(s.OneOf))
		for i, o := range s.OneOf {
			parts[i] = schemaType(o)
		}
		return strings.Join(parts, " | ")
	}
	var types []string
	switch t := s.Type.(type) {
	case string:
		types = []string{t}
	case []any:
		for _, v := range t {
			types = append(types, fmt.Sprint(v))
		}
	}
	for i, t := range types {
		switch {
		case t == "array" && s.Items != nil:
			types[i] = schemaType(s.Items) + "[]"
		case t == "object" && s.AdditionalProperties != nil && s.Properties == nil:
			if inner, ok := s.AdditionalProperties.(map[string]any); ok {
				b, _ := json.Marshal(inner)
				var sub oaSchema
				_ = json.Unmarshal(b, &sub)
				types[i] = "map<string, " + schemaType(&sub) + ">"
			}
		}
	}
	out := strings.Join(types, " | ")
	if len(s.Enum) > 0 {
		values := make([]string, len(s.Enum))
		for i, v := range s.Enum {
			values[i] = fmt.Sprintf("%q", v)
		}
		out += " (" + strings.Join(values, " | ") + ")"
	}
	return out
}
