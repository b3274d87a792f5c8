package simulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// testStart is the fake clock's starting time in tests.
var testStart = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

// fakeClock is a settable clock safe for the server goroutines to read.
type fakeClock struct{ nanos atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.nanos.Store(testStart.UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.nanos.Load()).UTC() }
func (c *fakeClock) Advance(d time.Duration) { c.nanos.Add(int64(d)) }

// newTestServer starts a simulator behind an httptest server. A nil opts.Now is
// replaced with a fake clock so recorded times are predictable.
func newTestServer(t *testing.T, f Faults, opts Options) (*Simulator, *httptest.Server) {
	t.Helper()
	if opts.Now == nil {
		opts.Now = newFakeClock().Now
	}
	sim := NewWithOptions(f, opts)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return sim, srv
}

// response is what a test looks at in an HTTP answer.
type response struct {
	status     int
	retryAfter string
	reset      string // Feishu's x-ogw-ratelimit-reset
	body       []byte
}

// do sends one request; body is JSON-encoded unless it is already []byte or nil.
func do(t *testing.T, client *http.Client, method, url string, header http.Header, body any) (response, error) {
	t.Helper()
	var reader io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		reader = bytes.NewReader(b)
	default:
		encoded, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		reader = bytes.NewReader(encoded)
	}
	req, err := http.NewRequest(method, url, reader)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	return response{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"),
		reset: resp.Header.Get(feishuRateLimitResetHdr), body: data}, nil
}

// mustDo is do for requests that must get an answer.
func mustDo(t *testing.T, method, url string, header http.Header, body any) response {
	t.Helper()
	resp, err := do(t, nil, method, url, header, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp
}

// decode unmarshals an answer body, failing the test on bad JSON.
func decode[T any](t *testing.T, data []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("decoding %q: %v", data, err)
	}
	return v
}

// shortTimeout is how long tests wait for an answer a timeout fault never gives.
const shortTimeout = 200 * time.Millisecond

// isTimeout reports whether err is a client giving up on a silent server.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
