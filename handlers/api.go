package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"herald/models"
)

// APIKeyKey is the gin context key under which the web middleware stores the API key.
const APIKeyKey = "herald.apikey"

// CurrentAPIKey returns the API key of the request, or nil.
func CurrentAPIKey(c *gin.Context) *models.APIKey { return fromContext[models.APIKey](c, APIKeyKey) }

// MaxBodyBytes is the largest request body the API reads.
const MaxBodyBytes = 1 << 20

// APIError writes the API's error shape: {"error":{"code","message","field"}}.
func APIError(c *gin.Context, status int, code, message, field string) {
	body := gin.H{"code": code, "message": message}
	if field != "" {
		body["field"] = field
	}
	c.AbortWithStatusJSON(status, gin.H{"error": body})
}

// RetryAfterSeconds is what a 503 asks callers to wait before they try again.
const RetryAfterSeconds = "5"

// DatabaseUnavailable answers an API call that the database could not serve in time:
// 503 with Retry-After, so a business system backs off instead of piling up requests.
// Nothing was half-written: a batch is one transaction, and a retry with the same
// idempotency_key replays the answer if it did commit.
func DatabaseUnavailable(c *gin.Context) {
	c.Header("Retry-After", RetryAfterSeconds)
	APIError(c, http.StatusServiceUnavailable, "database_unavailable", "the database is not answering; retry after a few seconds", "")
}

// apiFail answers an error from a store or dispatch call: validation errors are 422
// naming the field, "not found" is 404, anything else is logged and 500.
func (h *Handlers) apiFail(c *gin.Context, err error) {
	var fe *models.FieldError
	switch {
	case errors.As(err, &fe):
		APIError(c, http.StatusUnprocessableEntity, "validation_failed", fe.Field+" "+fe.In(c.Request.Context()), fe.Field)
	case errors.Is(err, models.ErrNotFound):
		APIError(c, http.StatusNotFound, "not_found", "no such resource", "")
	case errors.Is(err, models.ErrStateChanged):
		APIError(c, http.StatusConflict, "invalid_state", "the resource is not in a state that allows this", "")
	case models.Unavailable(err):
		h.Log.Warn("api request: database unavailable", "method", c.Request.Method, "path", c.Request.URL.Path, "error", err)
		DatabaseUnavailable(c)
	default:
		h.Log.Error("api request failed", "method", c.Request.Method, "path", c.Request.URL.Path, "error", err)
		APIError(c, http.StatusInternalServerError, "internal", "the request could not be completed; the error has been logged", "")
	}
}

// decodeJSON reads a request body strictly: at most MaxBodyBytes (413, before reading
// it when its declared length is over), valid UTF-8, no duplicate keys and no unknown
// fields (400), values of the right types (422 naming the field). encoding/json alone
// would silently replace bad UTF-8 and let a duplicate win. It returns false after
// writing the error response.
func decodeJSON(c *gin.Context, dst any) bool {
	tooLarge := func() bool {
		APIError(c, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the body exceeds %d bytes", MaxBodyBytes), "")
		return false
	}
	if c.Request.ContentLength > MaxBodyBytes {
		return tooLarge()
	}
	raw, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxBodyBytes))
	if _, over := errors.AsType[*http.MaxBytesError](err); over {
		return tooLarge()
	}
	if err != nil {
		APIError(c, http.StatusBadRequest, "invalid_json", "could not read the body", "")
		return false
	}
	if !utf8.Valid(raw) {
		APIError(c, http.StatusBadRequest, "invalid_json", "the body is not valid UTF-8", "")
		return false
	}
	if err := checkDuplicateKeys(raw); err != nil {
		APIError(c, http.StatusBadRequest, "invalid_json", err.Error(), "")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field == "" {
			APIError(c, http.StatusBadRequest, "invalid_json",
				fmt.Sprintf("the body must be %s, not %s", jsonKind(typeErr.Type.Kind().String()), typeErr.Value), "")
			return false
		}
		if errors.As(err, &typeErr) {
			APIError(c, http.StatusUnprocessableEntity, "validation_failed",
				fmt.Sprintf("%s must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value), typeErr.Field)
			return false
		}
		msg := err.Error()
		field := ""
		if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			field = strings.Trim(f, `"`)
			msg = "unknown field " + field
		}
		APIError(c, http.StatusBadRequest, "invalid_json", msg, field)
		return false
	}
	if dec.More() {
		APIError(c, http.StatusBadRequest, "invalid_json", "the body holds more than one JSON value", "")
		return false
	}
	return true
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return "a number"
}

// jsonFrame is one open object or array while checkDuplicateKeys walks a document.
type jsonFrame struct {
	keys      map[string]bool // nil for arrays
	expectKey bool
}

// checkDuplicateKeys walks a JSON document and reports the first object key that
// appears twice in the same object.
func checkDuplicateKeys(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []*jsonFrame
	// valueDone records that the enclosing object's current value ended.
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].expectKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("malformed JSON: %v", err)
		}
		if n := len(stack); n > 0 && stack[n-1].expectKey {
			if key, ok := tok.(string); ok {
				if stack[n-1].keys[key] {
					return fmt.Errorf("duplicate key %q", key)
				}
				stack[n-1].keys[key] = true
				stack[n-1].expectKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &jsonFrame{keys: map[string]bool{}, expectKey: true})
		case json.Delim('['):
			stack = append(stack, &jsonFrame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}
