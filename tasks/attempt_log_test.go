package tasks_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"herald/internal/testenv"
	"herald/tasks"
)

// TestAttemptLogLine: every provider call logs one "attempt" line that says which
// message, on which account, how it ended and, for a failure, its class and error.
func TestAttemptLogLine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, red := storeAndRedis(t)
	c := newHookChunk(t, store, []string{"up@example.com", "down@example.com"})
	a, ids, task := c.account, c.ids, c.task
	var out testenv.SyncBuffer
	sender := newTestSender(t, store, red, tasks.SenderConfig{CallTimeout: 5 * time.Second,
		Log: slog.New(slog.NewJSONHandler(&out, nil)).With("role", "worker")})
	if err := sender.ProcessTask(ctx, task); err != nil {
		t.Fatal(err)
	}

	var got []map[string]any
	dec := json.NewDecoder(strings.NewReader(out.String()))
	for dec.More() {
		var line map[string]any
		if err := dec.Decode(&line); err != nil {
			t.Fatal(err)
		}
		if line["msg"] == "attempt" {
			if _, ok := line["duration_ms"].(float64); !ok {
				t.Errorf("attempt line without its duration: %v", line)
			}
			got = append(got, line)
		}
	}
	want := []map[string]any{
		{"level": "INFO", "msg": "attempt", "role": "worker", "message_id": ids[0], "account": a.Name, "class": "", "outcome": "sent"},
		{"level": "INFO", "msg": "attempt", "role": "worker", "message_id": ids[1], "account": a.Name, "class": "transient",
			"outcome": "failed", "error": "transient (http 503): channels: webhook: http 503: busy"},
	}
	ignore := cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return k == "time" || k == "duration_ms" })
	sortByMessage := cmpopts.SortSlices(func(x, y map[string]any) bool { return x["message_id"].(string) < y["message_id"].(string) })
	if diff := cmp.Diff(want, got, ignore, sortByMessage); diff != "" {
		t.Errorf("attempt log lines (-want +got):\n%s", diff)
	}
}
