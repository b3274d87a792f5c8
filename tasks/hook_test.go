package tasks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"herald/directory"
	"herald/internal/testenv"
	"herald/models"
	"herald/sending"
	"herald/tasks"
)

// hookReceiver is a webhook endpoint that counts the calls per address (the payload's
// "to") and answers 503 to the addresses down says are down.
type hookReceiver struct {
	URL string
	mu  sync.Mutex
	got map[string]int
}

// storeAndRedis is a test's own database and Redis.
func storeAndRedis(t *testing.T) (*models.Store, *tasks.Redis) {
	t.Helper()
	store := testenv.Store(t)
	red, err := tasks.ParseRedisURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	return store, red
}

func newHookReceiver(t *testing.T, down func(to string) bool) *hookReceiver {
	t.Helper()
	h := &hookReceiver{got: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ To string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		h.mu.Lock()
		h.got[body.To]++
		h.mu.Unlock()
		if down != nil && down(body.To) {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"id":"ok"}`))
	}))
	t.Cleanup(srv.Close)
	h.URL = srv.URL
	return h
}

// calls returns how often the address was called.
func (h *hookReceiver) calls(to string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got[to]
}

// hookAccount stores a webhook account calling the receiver, changed by adjust, and one
// branch recipient.
func hookAccount(t *testing.T, store *models.Store, h *hookReceiver, adjust func(*sending.Account)) (*sending.Account, *directory.Recipient) {
	t.Helper()
	ctx := context.Background()
	a := &sending.Account{Name: "hook", Platform: "webhook", Enabled: true, Healthy: true, AllowPrivateNetwork: true, MaxAttempts: 3,
		Config: map[string]string{"url": h.URL + "/hook"}}
	if adjust != nil {
		adjust(a)
	}
	if err := store.Sending().CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	r := &directory.Recipient{ExternalID: "E1001", Name: "Li Wei", OrgType: directory.Branch, Active: true}
	if err := store.Directory().CreateRecipient(ctx, r); err != nil {
		t.Fatal(err)
	}
	return a, r
}
