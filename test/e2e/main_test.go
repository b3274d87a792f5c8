package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"herald/access"
	"herald/duty"
	"herald/i18n"
	"herald/internal/testenv"
	"herald/models"
	"herald/tasks"
	"herald/test/harness"
)

// repoRoot is the repository's top, seen from this package's directory, where go test
// runs it.
const repoRoot = "../.."

// TestMain makes password hashing cheap for the processes the tests start in this
// binary: they sign in hundreds of times (models' own tests check the real cost). It
// chooses the tests by HERALD_TEST_LONG: unset (make test), it skips the long runs,
// naming each with why, and runs the rigs at their smaller size; 1 runs everything at
// full size; only (make test-long, after make test) runs just the long runs and the rigs
// at full size. The soak never runs under the race detector, which multiplies the memory
// and latency it measures: make test-long runs it in a build of its own.
func TestMain(m *testing.M) {
	access.UseCheapPasswordHashes()
	flag.Parse()
	// Most parallel tests here wait on the processes they started (a sign-in, a
	// migration, a first delivery), not on the CPU: unless -test.parallel says otherwise,
	// four of them run at a time instead of one a core. The tests that judge timing
	// across processes (limits, leases, latencies, start-up deadlines) are not parallel:
	// they run first, one at a time. Those that judge only what ends where (a restart, an
	// outage, retries) run with the parallel ones.
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		must(flag.Lookup("test.parallel").Value.Set("4"))
	}
	var skip []string
	switch mode := os.Getenv("HERALD_TEST_LONG"); mode {
	case "":
		for _, r := range longRuns {
			if !r.alsoShort {
				skip = append(skip, r.test)
				fmt.Fprintf(os.Stderr, "skipping %s: %s (make test-long, or HERALD_TEST_LONG=1, runs it)\n", r.test, r.why)
			}
		}
	case "1":
	case "only":
		if run := flag.Lookup("test.run"); run.Value.String() == "" {
			names := make([]string, len(longRuns))
			for i, r := range longRuns {
				names[i] = r.test
			}
			must(run.Value.Set("^(" + strings.Join(names, "|") + ")$"))
		}
	default:
		fmt.Fprintf(os.Stderr, "HERALD_TEST_LONG=%q: want 1, only or nothing\n", mode)
		os.Exit(2)
	}
	if harness.RaceDetector {
		skip = append(skip, "TestSoak")
		fmt.Fprintln(os.Stderr, "skipping TestSoak under the race detector, which multiplies the memory and latency it measures (make test-long runs it without)")
	}
	if len(skip) > 0 {
		pattern := "^(" + strings.Join(skip, "|") + ")$"
		flagSkip := flag.Lookup("test.skip")
		if prev := flagSkip.Value.String(); prev != "" {
			pattern = prev + "|" + pattern
		}
		must(flagSkip.Value.Set(pattern))
	}
	code := m.Run()
	testenv.CloseChrome()
	os.Exit(code)
}

// watchCatalog starts a catalog check: the lookups that fail from now on, whichever
// test's requests made them, are i18n.MissingSince of the mark it returns, which the
// test reads at its end. Tests side by side each keep a mark of their own.
func watchCatalog() int { return i18n.MissingMark() }

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// longRuns are what `make test-long` adds to `make test`: tests that prove at full length
// what a shorter test in `make test` proves (named here) or run for minutes by design,
// and rigs that make test runs at a smaller size (alsoShort).
var longRuns = []struct {
	test, why string
	alsoShort bool
}{
	{"TestLimitsHoldPerMinuteAcrossWorkerProcesses", "2,000 messages at 600/min take over three minutes; TestLimitsHoldAcrossWorkerProcesses runs the same limiter on the per-second and per-recipient windows", false},
	{"TestSentinelFailoverLosesNothing", "starts a Sentinel group and fails it over", false},
	{"TestClusterFailoverLosesNothing", "starts a Redis Cluster and fails a primary over", false},
	{"TestSoak", "30 minutes of the burst mix (HERALD_SOAK_DURATION)", false},
	{"TestFaultRunEndsEveryMessageSentOrStopped", "2,000 messages instead of 500", true},
	{"TestRedisFlushedMidRunLosesNothing", "2,000 messages instead of 500", true},
	{"TestKilledWorkerLosesNothing", "2,000 messages instead of 500", true},
	{"TestStoppedWorkerHandsOverCleanly", "2,000 messages instead of 500", true},
	{"TestKilledWorkerFiresEveryStepOnce", "300 alerts instead of 150", true},
	{"TestBurstRightAfterStart", "three starts per mode, the first burst 10 s instead of two and 5 s", true},
}

// longRun reports whether the long runs are on: HERALD_TEST_LONG=1 or only.
func longRun() bool {
	v := os.Getenv("HERALD_TEST_LONG")
	return v == "1" || v == "only"
}

// fullSize is n when the long runs are on, else short: the size of a rig that proves the
// same at either size, the larger one for before a release.
func fullSize(short, n int) int {
	if longRun() {
		return n
	}
	return short
}

var recipientOption = regexp.MustCompile(`name="recipient" value="(\d+)"[^>]*>\s*<span>([^<]+?) <span class="muted">(\w+)`)

// recipientIDs maps the external ids of the people on the compose form to their form values.
func recipientIDs(t *testing.T, composePage string) map[string]string {
	out := map[string]string{}
	for _, m := range recipientOption.FindAllStringSubmatch(composePage, -1) {
		out[m[3]] = m[1]
	}
	if len(out) == 0 {
		t.Fatalf("compose page lists no recipients:\n%s", composePage)
	}
	return out
}

// composeAndWait sends one message to the people in sent and skipped, and waits until the
// batch page shows every one in sent delivered; it returns the batch id.
func composeAndWait(t *testing.T, b *browser, sent []string, skipped ...string) string {
	t.Helper()
	_, page := b.Get("/compose")
	ids := recipientIDs(t, page)
	account := regexp.MustCompile(`<option value="(\d+)" selected`).FindStringSubmatch(page)
	if account == nil {
		t.Fatalf("compose page has no default account selected:\n%s", page)
	}
	form := url.Values{"account": {account[1]}, "content.text": {"Ledger 42 is overdue"}, "priority": {"normal"}}
	for _, p := range append(slices.Clone(sent), skipped...) {
		if ids[p] == "" {
			t.Fatalf("recipient %s not on the compose form (have %v)", p, ids)
		}
		form.Add("recipient", ids[p])
	}
	resp, body := b.Post("/compose", form)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("compose: status %d:\n%s", resp.StatusCode, body)
	}
	batchPath := resp.Header.Get("Location")
	batchID := strings.TrimPrefix(batchPath, "/batches/")
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, body := b.Do("GET", batchPath+"/progress", nil, map[string]string{"HX-Request": "true"})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("progress: status %d", resp.StatusCode)
		}
		if n := strings.Count(body, `data-status="sent"`); n == len(sent) && !strings.Contains(body, "hx-trigger") {
			return batchID
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %s not all sent after 20s; progress partial:\n%s", batchID, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestComposeDeliversAndBatchPageUpdates(t *testing.T) {
	t.Parallel()
	h := startHerald(t, testEnv(t))
	ctx := context.Background()
	// Today's duty, whatever weekday today is: E1001 is added, E1002 removed.
	today, _ := duty.DateOf(time.Now(), h.App.Config.Location)
	people, err := h.App.Store.Directory().RecipientsByExternalIDs(ctx, []string{"E1001", "E1002"})
	if err != nil || len(people) != 2 {
		t.Fatalf("demo staff: %v %v", people, err)
	}
	for _, p := range people {
		action := duty.OverrideAdd
		if p.ExternalID == "E1002" {
			action = duty.OverrideRemove
		}
		if err := h.App.Store.Duty().SetOverride(ctx, &duty.DutyOverride{Date: today, RecipientID: p.ID, Action: action}); err != nil {
			t.Fatal(err)
		}
	}

	b := newBrowser(t, h.URL)
	b.Login("admin", testAdminPassword)
	batchID := composeAndWait(t, b, []string{"E1001", "E2001"}, "E1002")

	msgs, err := h.App.Store.MessagesOfBatch(ctx, batchID, 10)
	if err != nil {
		t.Fatal(err)
	}
	delivered := map[string]bool{}
	for _, d := range h.App.Sim.Deliveries() {
		delivered[d.RequestID] = true
	}
	if len(msgs) != 2 {
		t.Fatalf("batch has %d messages, want 2 (E1002 is off duty)", len(msgs))
	}
	for _, m := range msgs {
		if m.Status != models.StatusSent || m.SentAt == nil || m.Attempts != 1 {
			t.Errorf("message %s: status %s, sent_at %v, attempts %d; want sent once", m.ID, m.Status, m.SentAt, m.Attempts)
		}
		if !delivered[m.ID] {
			t.Errorf("message %s was marked sent but the sandbox has no delivery for it", m.ID)
		}
	}
	// The full batch page renders with the people's names and the skipped person.
	_, page := b.Get("/batches/" + batchID)
	for _, want := range []string{"Li Wei", "Liu Yang", "100.0%", "Wang Fang (E1002) — not on duty today"} {
		if !strings.Contains(page, want) {
			t.Errorf("batch page does not show %q", want)
		}
	}
}

// The in-process Redis of the embedded default answers only Herald: its password is
// generated into the data directory, readable by its owner alone.
func TestEmbeddedRedisAnswersOnlyHerald(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	delete(env, "HERALD_REDIS_URL") // the in-process Redis, whatever the test backends
	h := startHerald(t, env)
	b := newBrowser(t, h.URL)
	b.Login("admin", testAdminPassword)
	composeAndWait(t, b, []string{"E2001"})

	stranger := redis.NewClient(&redis.Options{Addr: h.App.EmbeddedRedis.Addr()})
	defer stranger.Close()
	if err := stranger.Ping(context.Background()).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("a client without the password: %v, want NOAUTH", err)
	}
	info, err := os.Stat(filepath.Join(env["HERALD_DATA_DIR"], "redis.key"))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("redis.key has mode %v, want 0600", perm)
	}
}

// /metrics is served on HERALD_METRICS_ADDR, not on the console's listener.
func TestMetricsExposeDeliveries(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["HERALD_METRICS_ADDR"] = freeAddr(t)
	h := startHerald(t, env)
	b := newBrowser(t, h.URL)
	b.Login("admin", testAdminPassword)
	composeAndWait(t, b, []string{"E2001", "E2002"})
	if resp, _ := b.Get("/metrics"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics on the console listener: %d, want 404", resp.StatusCode)
	}
	// A send due in an hour waits in Herald's own schedule, not in Asynq: it still counts
	// as scheduled in its queue.
	if _, err := h.App.Enqueuer.Enqueue(context.Background(), []tasks.Job{{TaskID: "metrics-later", MessageIDs: []string{models.NewID()},
		Priority: "low", ProcessAt: time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	resp, body := newBrowser(t, "http://"+env["HERALD_METRICS_ADDR"]).Get("/metrics")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics on HERALD_METRICS_ADDR: %d", resp.StatusCode)
	}
	for _, want := range []string{
		`herald_messages_total{account="sandbox",platform="sandbox",state="sent"} 2`,
		`herald_attempt_duration_seconds_count{account="sandbox",outcome="sent",platform="sandbox"} 2`,
		`herald_oldest_due_message_age_seconds 0`,
		`herald_queue_size{queue="normal",state="pending"}`,
		`herald_queue_size{queue="low",state="scheduled"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
