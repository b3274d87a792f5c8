package testenv

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"herald/docs"
)

// apiDescription is the validator of docs.OpenAPI, built once per test binary. The
// validator keeps caches, so calls go one at a time.
var apiDescription = sync.OnceValues(func() (*lockedValidator, error) {
	doc, err := libopenapi.NewDocument(docs.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("docs/openapi.json: %w", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("docs/openapi.json: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("docs/openapi.json is not a valid OpenAPI document: %s", describe(verrs))
	}
	return &lockedValidator{v: v}, nil
})

type lockedValidator struct {
	mu sync.Mutex
	v  validator.Validator
}

// APIAnswerProblems checks one answer of /api/v1 against the OpenAPI description and
// returns what does not match it, or "" when it matches. An answer to a path the
// description does not have is a problem unless it is a 404 or 405 (tests call unknown
// endpoints on purpose); answers outside /api/v1 are not checked.
func APIAnswerProblems(req *http.Request, status int, header http.Header, body []byte) (string, error) {
	if !strings.HasPrefix(req.URL.Path, "/api/v1/") {
		return "", nil
	}
	lv, err := apiDescription()
	if err != nil {
		return "", err
	}
	resp := &http.Response{StatusCode: status, Header: header.Clone(), Body: io.NopCloser(bytes.NewReader(body)), Request: req}
	lv.mu.Lock()
	ok, verrs := lv.v.ValidateHttpResponse(req, resp)
	lv.mu.Unlock()
	if ok {
		return "", nil
	}
	if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
		for _, e := range verrs {
			if e.ValidationType == "path" {
				return "", nil
			}
		}
	}
	return describe(verrs), nil
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

func describe(verrs []*errors.ValidationError) string {
	var b strings.Builder
	for _, e := range verrs {
		fmt.Fprintf(&b, "\n  %s: %s", e.Message, e.Reason)
		for _, s := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n    %s: %s", s.FieldPath, s.Reason)
		}
	}
	return b.String()
}

// CheckSchema fails the test when body does not match the schema called name among
// docs/openapi.json's components: for what Herald sends rather than answers, such as
// a status callback event (CallbackEvent).
func CheckSchema(t testing.TB, name string, body []byte) {
	t.Helper()
	model, err := apiModel()
	if err != nil {
		t.Fatalf("docs/openapi.json: %v", err)
	}
	// The model builds its schemas lazily: one check at a time.
	schemaMu.Lock()
	defer schemaMu.Unlock()
	proxy, ok := model.Model.Components.Schemas.Get(name)
	if !ok {
		t.Fatalf("docs/openapi.json has no schema %s", name)
	}
	if ok, verrs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(proxy.Schema(), body); !ok {
		t.Errorf("%s does not match the schema %s of docs/openapi.json: %s", body, name, describe(verrs))
	}
}

var schemaMu sync.Mutex

// apiModel is docs.OpenAPI's model, built once per test binary.
var apiModel = sync.OnceValues(func() (*libopenapi.DocumentModel[v3.Document], error) {
	doc, err := libopenapi.NewDocument(docs.OpenAPI)
	if err != nil {
		return nil, err
	}
	return doc.BuildV3Model()
})
