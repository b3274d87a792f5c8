package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/i18n"
)

// APIKeyKey is the gin context key under which the web middleware stores the API key.
const APIKeyKey = "herald.apikey"

// CurrentAPIKey returns the API key of the request, or nil.
func CurrentAPIKey(c *gin.Context) *access.APIKey { return fromContext[access.APIKey](c, APIKeyKey) }

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
func DatabaseUnavailable(c *gin.Context) { writeAPIAnswer(c, unavailable(c, onAPI)) }

// decodeJSON reads a request body strictly: at most MaxBodyBytes (413, before reading
// it when its declared length is over), valid UTF-8, no duplicate keys and no unknown
// fields (400), values of the right types (422 naming the field). encoding/json alone
// would silently replace bad UTF-8 and let a duplicate win. It returns false after
// writing the error response.
func decodeJSON(c *gin.Context, dst any) bool {
	tooLarge := func() bool {
		APIError(c, http.StatusRequestEntityTooLarge, "body_too_large", tr(c, "api.body_too_large", "Max", MaxBodyBytes), "")
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
		APIError(c, http.StatusBadRequest, "invalid_json", tr(c, "api.body_unreadable"), "")
		return false
	}
	if !utf8.Valid(raw) {
		APIError(c, http.StatusBadRequest, "invalid_json", tr(c, "api.body_utf8"), "")
		return false
	}
	if msg := checkDuplicateKeys(raw); msg != nil {
		APIError(c, http.StatusBadRequest, "invalid_json", tr(c, msg.ID, msg.Args...), "")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field == "" {
			APIError(c, http.StatusBadRequest, "invalid_json",
				tr(c, "api.body_type", "Want", jsonKind(c, typeErr.Type.Kind().String()), "Got", jsonValue(c, typeErr.Value)), "")
			return false
		}
		if errors.As(err, &typeErr) {
			APIError(c, http.StatusUnprocessableEntity, "validation_failed",
				tr(c, "api.field_type", "Field", typeErr.Field, "Want", jsonKind(c, typeErr.Type.Kind().String()), "Got", jsonValue(c, typeErr.Value)), typeErr.Field)
			return false
		}
		// encoding/json's own words for a body it cannot read, after the key's prefix.
		msg := tr(c, "api.malformed", "Detail", strings.TrimPrefix(err.Error(), "json: "))
		field := ""
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			field = strings.Trim(f, `"`)
			msg = tr(c, "api.unknown_field", "Field", field)
		}
		APIError(c, http.StatusBadRequest, "invalid_json", msg, field)
		return false
	}
	if dec.More() {
		APIError(c, http.StatusBadRequest, "invalid_json", tr(c, "api.more_values"), "")
		return false
	}
	return true
}

// jsonKind names the JSON value a Go kind is decoded from.
func jsonKind(c *gin.Context, goKind string) string {
	switch goKind {
	case "string":
		return tr(c, "api.kind.string")
	case "bool":
		return tr(c, "api.kind.bool")
	case "slice":
		return tr(c, "api.kind.array")
	case "map", "struct":
		return tr(c, "api.kind.object")
	}
	return tr(c, "api.kind.number")
}

// jsonValue names the JSON value encoding/json found ("array", "number -5").
func jsonValue(c *gin.Context, value string) string {
	kind, _, _ := strings.Cut(value, " ")
	switch kind {
	case "string", "bool", "array", "object", "number", "null":
		return tr(c, "api.value."+kind)
	}
	return value
}

// checkDuplicateKeys reports, as a catalog message, the first object key that appears
// twice in the same object, or malformed JSON. A well-formed document whose keys hold no
// escapes (every request a program sends, nearly) is walked byte by byte; any other goes
// through encoding/json's tokens, whose words the malformed message quotes.
func checkDuplicateKeys(raw []byte) *i18n.Msg {
	if !json.Valid(raw) {
		return walkDuplicateKeys(raw)
	}
	key, found, escaped := firstDuplicateKey(raw)
	if escaped {
		return walkDuplicateKeys(raw)
	}
	if found {
		m := i18n.M("api.duplicate_key", "Key", strconv.Quote(key))
		return &m
	}
	return nil
}

// keySpan is where one key of an open object lies in the document, quotes excluded.
type keySpan struct{ start, end int }

// objectFrame is one open object or array while firstDuplicateKey walks a document.
type objectFrame struct {
	object    bool
	expectKey bool
	first     int             // where the frame's keys start in the walk's list of keys
	seen      map[string]bool // the object's keys, once it has many
}

// manyKeys is how many keys an object holds before firstDuplicateKey looks them up in a
// map instead of comparing each new key with all of them.
const manyKeys = 16

// firstDuplicateKey walks a well-formed JSON document and returns the first key that
// appears twice in one object, if one does, or escaped when a key holds an escape and so
// cannot be compared as written.
func firstDuplicateKey(raw []byte) (key string, found, escaped bool) {
	var stack []objectFrame
	var keys []keySpan
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '{':
			stack = append(stack, objectFrame{object: true, expectKey: true, first: len(keys)})
		case '[':
			stack = append(stack, objectFrame{first: len(keys)})
		case '}', ']':
			keys = keys[:stack[len(stack)-1].first]
			stack = stack[:len(stack)-1]
		case ',':
			if top := len(stack) - 1; stack[top].object {
				stack[top].expectKey = true
			}
		case '"':
			start, hasEscape := i+1, false
			for i++; raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					hasEscape = true
					i++
				}
			}
			top := len(stack) - 1
			if top < 0 || !stack[top].expectKey {
				continue // a value
			}
			if hasEscape {
				return "", false, true
			}
			f := &stack[top]
			f.expectKey = false
			name := raw[start:i]
			if f.seen != nil {
				if f.seen[string(name)] {
					return string(name), true, false
				}
				f.seen[string(name)] = true
				continue
			}
			for _, k := range keys[f.first:] {
				if bytes.Equal(raw[k.start:k.end], name) {
					return string(name), true, false
				}
			}
			keys = append(keys, keySpan{start, i})
			if len(keys)-f.first > manyKeys {
				f.seen = make(map[string]bool, 2*manyKeys)
				for _, k := range keys[f.first:] {
					f.seen[string(raw[k.start:k.end])] = true
				}
			}
		}
	}
	return "", false, false
}

// jsonFrame is one open object or array while walkDuplicateKeys walks a document.
type jsonFrame struct {
	keys      map[string]bool // nil for arrays
	expectKey bool
}

// walkDuplicateKeys is checkDuplicateKeys through encoding/json's tokens: any document,
// and the words of its error when it is malformed.
func walkDuplicateKeys(raw []byte) *i18n.Msg {
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
			m := i18n.M("api.malformed", "Detail", err.Error())
			return &m
		}
		if n := len(stack); n > 0 && stack[n-1].expectKey {
			if key, ok := tok.(string); ok {
				if stack[n-1].keys[key] {
					m := i18n.M("api.duplicate_key", "Key", strconv.Quote(key))
					return &m
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
