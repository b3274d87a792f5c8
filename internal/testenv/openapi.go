package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"herald/docs"
)

// apiDoc is docs/openapi.json read for checking answers against it: the document itself
// for finding an operation's responses, and a JSON Schema compiler that holds it as one
// resource, so that a schema anywhere in it (a response's, a component's) compiles with
// its references, once, on first use.
type apiDoc struct {
	doc   map[string]any
	paths []apiPath

	mu       sync.Mutex // the compiler and the cache are not safe for concurrent use
	compiler *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema
}

// apiPath is one path of the description, split into its segments; a segment in
// braces is a parameter and matches any one segment.
type apiPath struct {
	template string
	segments []string
	item     map[string]any
}

// apiLocation is the URL the description is known to the compiler by.
const apiLocation = "file:///herald/docs/openapi.json"

// apiDescription is docs.OpenAPI, read and checked once per test binary.
var apiDescription = sync.OnceValues(func() (*apiDoc, error) { return readAPIDoc(docs.OpenAPI) })

// readAPIDoc reads an OpenAPI 3.1 description and checks that it holds together (see
// problems): answers checked against a broken description would prove nothing.
func readAPIDoc(text []byte) (*apiDoc, error) {
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("docs/openapi.json: %w", err)
	}
	doc, ok := raw.(map[string]any)
	if !ok {
		return nil, errors.New("docs/openapi.json: not a JSON object")
	}
	d := &apiDoc{doc: doc, compiler: jsonschema.NewCompiler(), schemas: map[string]*jsonschema.Schema{}}
	// OpenAPI 3.1's schemas are JSON Schema 2020-12. Formats are not asserted, as
	// JSON Schema's default has it.
	d.compiler.DefaultDraft(jsonschema.Draft2020)
	if err := d.compiler.AddResource(apiLocation, doc); err != nil {
		return nil, fmt.Errorf("docs/openapi.json: %w", err)
	}
	paths, _ := doc["paths"].(map[string]any)
	for template, item := range paths {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("docs/openapi.json: path %s is not an object", template)
		}
		d.paths = append(d.paths, apiPath{template: template, segments: strings.Split(template, "/"), item: m})
	}
	if problems := d.problems(); len(problems) > 0 {
		return nil, fmt.Errorf("docs/openapi.json does not hold together:\n  %s", strings.Join(problems, "\n  "))
	}
	return d, nil
}

// operationMethods are the path item's keys that hold operations.
var operationMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// problems lists what is wrong with the description as a whole: its version, paths
// that do not begin with a slash, operations without an operationId (or with one
// another operation has) or without answers, answers (followed through their
// references) without a description, and schemas, of every answer and every
// component, that do not compile as JSON Schema 2020-12 with their references.
func (d *apiDoc) problems() []string {
	var problems []string
	if v, _ := d.doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		problems = append(problems, fmt.Sprintf("openapi is %q, want 3.1.x", d.doc["openapi"]))
	}
	if len(d.paths) == 0 {
		problems = append(problems, "no paths")
	}
	ids := map[string]string{}
	for _, p := range d.paths {
		if !strings.HasPrefix(p.template, "/") {
			problems = append(problems, fmt.Sprintf("path %s does not begin with /", p.template))
		}
		for _, method := range operationMethods {
			op, ok := p.item[method].(map[string]any)
			if !ok {
				continue
			}
			where := strings.ToUpper(method) + " " + p.template
			id, _ := op["operationId"].(string)
			switch {
			case id == "":
				problems = append(problems, where+": no operationId")
			case ids[id] != "":
				problems = append(problems, fmt.Sprintf("%s: operationId %s is also %s's", where, id, ids[id]))
			default:
				ids[id] = where
			}
			responses, _ := op["responses"].(map[string]any)
			if len(responses) == 0 {
				problems = append(problems, where+": no responses")
			}
			for _, code := range slices.Sorted(maps.Keys(responses)) {
				ptr := responsePointer(p.template, method, code)
				resp, ptr, err := d.resolve(responses[code], ptr)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s answer %s: %v", where, code, err))
					continue
				}
				r, _ := resp.(map[string]any)
				if desc, _ := r["description"].(string); desc == "" {
					problems = append(problems, fmt.Sprintf("%s answer %s: no description", where, code))
				}
				content, _ := r["content"].(map[string]any)
				for _, mt := range slices.Sorted(maps.Keys(content)) {
					if media, _ := content[mt].(map[string]any); media["schema"] != nil {
						if _, err := d.schema(ptr + "/content/" + pointerToken(mt) + "/schema"); err != nil {
							problems = append(problems, fmt.Sprintf("%s answer %s: %v", where, code, err))
						}
					}
				}
			}
		}
	}
	schemas, _ := d.doc["components"].(map[string]any)["schemas"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(schemas)) {
		if _, err := d.schema("/components/schemas/" + pointerToken(name)); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return problems
}

// find returns the path that urlPath falls under: of the templates that match it, the
// one whose literal segments come first (/messages/search before /messages/{id}).
func (d *apiDoc) find(urlPath string) (apiPath, bool) {
	segments := strings.Split(urlPath, "/")
	var best apiPath
	var bestScore []bool
	found := false
	for _, p := range d.paths {
		if len(p.segments) != len(segments) {
			continue
		}
		score := make([]bool, len(segments))
		match := true
		for i, s := range p.segments {
			switch {
			case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
				match = segments[i] != ""
			case s == segments[i]:
				score[i] = true
			default:
				match = false
			}
			if !match {
				break
			}
		}
		if match && (!found || literalFirst(score, bestScore)) {
			best, bestScore, found = p, score, true
		}
	}
	return best, found
}

// literalFirst reports whether a, a list of which segments matched literally, ranks
// before b: at the first segment where they differ, a's is literal.
func literalFirst(a, b []bool) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i]
		}
	}
	return false
}

// resolve follows a local reference ("#/components/responses/NotFound") to what it
// points at, with the JSON pointer of that place; anything else is returned as it is.
func (d *apiDoc) resolve(v any, ptr string) (any, string, error) {
	for range 16 {
		m, ok := v.(map[string]any)
		if !ok {
			return v, ptr, nil
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return v, ptr, nil
		}
		target, ok := strings.CutPrefix(ref, "#")
		if !ok {
			return nil, "", fmt.Errorf("reference %s is not local", ref)
		}
		v, ptr = any(d.doc), target
		for _, tok := range strings.Split(strings.TrimPrefix(target, "/"), "/") {
			tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
			obj, ok := v.(map[string]any)
			if !ok {
				return nil, "", fmt.Errorf("reference %s points at nothing", ref)
			}
			if v, ok = obj[tok]; !ok {
				return nil, "", fmt.Errorf("reference %s points at nothing", ref)
			}
		}
	}
	return nil, "", fmt.Errorf("references at %s go round in a circle", ptr)
}

// schema returns the schema at the JSON pointer ptr of the description, compiled.
func (d *apiDoc) schema(ptr string) (*jsonschema.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.schemas[ptr]; ok {
		return s, nil
	}
	s, err := d.compiler.Compile(apiLocation + "#" + ptr)
	if err != nil {
		return nil, fmt.Errorf("docs/openapi.json: the schema at %s does not compile: %w", ptr, err)
	}
	d.schemas[ptr] = s
	return s, nil
}

// responsePointer is the JSON pointer of an operation's answer for code.
func responsePointer(template, method, code string) string {
	return "/paths/" + pointerToken(template) + "/" + method + "/responses/" + pointerToken(code)
}

// pointerToken escapes one token of a JSON pointer.
func pointerToken(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// APIAnswerProblems checks one answer of /api/v1 against the OpenAPI description and
// returns what does not match it, or "" when it matches: the path and method must be
// described, the status among the operation's answers (exactly, as 4XX, or as the
// default), the Content-Type among that answer's media types when it has any, and the
// body valid against that media type's schema. An answer to a path or method the
// description does not have is a problem unless it is a 404 or 405 (tests call unknown
// endpoints on purpose); answers outside /api/v1 are not checked.
func APIAnswerProblems(req *http.Request, status int, header http.Header, body []byte) (string, error) {
	if !strings.HasPrefix(req.URL.Path, "/api/v1/") {
		return "", nil
	}
	d, err := apiDescription()
	if err != nil {
		return "", err
	}
	unknown := status == http.StatusNotFound || status == http.StatusMethodNotAllowed
	path, ok := d.find(req.URL.Path)
	if !ok {
		if unknown {
			return "", nil
		}
		return fmt.Sprintf("\n  %s %s: no such path in the description", req.Method, req.URL.Path), nil
	}
	method := strings.ToLower(req.Method)
	op, ok := path.item[method].(map[string]any)
	if !ok {
		if unknown {
			return "", nil
		}
		return fmt.Sprintf("\n  %s %s: the path %s has no operation %s", req.Method, req.URL.Path, path.template, req.Method), nil
	}
	responses, _ := op["responses"].(map[string]any)
	code := strconv.Itoa(status)
	resp, ok := responses[code]
	if !ok {
		code = fmt.Sprintf("%dXX", status/100)
		resp, ok = responses[code]
	}
	if !ok {
		code = "default"
		resp, ok = responses[code]
	}
	if !ok {
		return fmt.Sprintf("\n  %s %s answered %d, which is not among the operation's answers (%s)",
			req.Method, path.template, status, strings.Join(slices.Sorted(maps.Keys(responses)), ", ")), nil
	}
	ptr := responsePointer(path.template, method, code)
	resp, ptr, err = d.resolve(resp, ptr)
	if err != nil {
		return "", fmt.Errorf("docs/openapi.json: %s %s: %w", req.Method, path.template, err)
	}
	content, _ := resp.(map[string]any)["content"].(map[string]any)
	if len(content) == 0 {
		return "", nil
	}
	mediaType, _, err := mime.ParseMediaType(header.Get("Content-Type"))
	media, ok := content[mediaType].(map[string]any)
	if err != nil || !ok {
		return fmt.Sprintf("\n  %s %s answered %d with Content-Type %q; the description has %s",
			req.Method, path.template, status, header.Get("Content-Type"), strings.Join(slices.Sorted(maps.Keys(content)), ", ")), nil
	}
	if _, ok := media["schema"]; !ok {
		return "", nil
	}
	if !strings.Contains(mediaType, "json") {
		return "", nil
	}
	schema, err := d.schema(ptr + "/content/" + pointerToken(mediaType) + "/schema")
	if err != nil {
		return "", err
	}
	return schemaProblems(schema, body), nil
}

// schemaProblems validates body, JSON, against schema and returns each problem on its
// own line, with where in the body it is ($.skipped[0].reason), or "" when it is valid.
func schemaProblems(schema *jsonschema.Schema, body []byte) string {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return "\n  the body is not JSON: " + err.Error()
	}
	err = schema.Validate(inst)
	if err == nil {
		return ""
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return "\n  " + err.Error()
	}
	var b strings.Builder
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			fmt.Fprintf(&b, "\n  %s: %s", fieldPath(e.InstanceLocation), e.ErrorKind.LocalizedString(english))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(verr)
	return b.String()
}

var english = message.NewPrinter(language.English)

// fieldPath writes an instance location as JSONPath: $.skipped[0].reason.
func fieldPath(location []string) string {
	var b strings.Builder
	b.WriteString("$")
	for _, tok := range location {
		if _, err := strconv.Atoi(tok); err == nil {
			fmt.Fprintf(&b, "[%s]", tok)
		} else {
			b.WriteString("." + tok)
		}
	}
	return b.String()
}

// CheckAPIAnswer fails the test when an answer of /api/v1 does not match the OpenAPI
// description (see APIAnswerProblems).
func CheckAPIAnswer(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	problems, err := APIAnswerProblems(req, status, header, body)
	if err != nil {
		t.Fatal(err)
	}
	if problems != "" {
		t.Errorf("%s %s answered %d, which docs/openapi.json does not describe: %s\nbody: %.500s", req.Method, req.URL.Path, status, problems, body)
	}
}

// CheckSchema fails the test when body does not match the schema called name among
// docs/openapi.json's components: for what Herald sends rather than answers, such as
// a status callback event (CallbackEvent).
func CheckSchema(t testing.TB, name string, body []byte) {
	t.Helper()
	d, err := apiDescription()
	if err != nil {
		t.Fatal(err)
	}
	schemas, _ := d.doc["components"].(map[string]any)["schemas"].(map[string]any)
	if _, ok := schemas[name]; !ok {
		t.Fatalf("docs/openapi.json has no schema %s", name)
	}
	schema, err := d.schema("/components/schemas/" + pointerToken(name))
	if err != nil {
		t.Fatal(err)
	}
	if problems := schemaProblems(schema, body); problems != "" {
		t.Errorf("%s does not match the schema %s of docs/openapi.json: %s", body, name, problems)
	}
}
