package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"herald/internal/testenv"
)

// BenchmarkIdle measures what an idle Herald costs and how soon it picks up a message
// after being idle: on the embedded default (one `herald serve` process, the demo data
// of its first start) and on MySQL + Redis (a worker process beside the rig's web
// process, which runs in this one). For each, once started and settled for 10 s: the CPU
// each process used over HERALD_BENCH_IDLE_SPAN (20 s) with nothing to do and no browser
// open, as a percentage of one core; then HERALD_BENCH_IDLE_SAMPLES (5) messages to one
// person, each after HERALD_BENCH_IDLE_GAP (5 s) of quiet, sent through the API: the
// time from a message's creation to its being sent (p50 and slowest). The workers go
// idle 2 s after their last task (HERALD_TEST_KNOBS=idle_after=2s; a minute in
// production), so that each message arrives at an idle worker. Lines:
//
//	idle mode=embedded serve_cpu_pct=… first_pickup_p50_ms=… first_pickup_max_ms=…
//	idle mode=mysql worker_cpu_pct=… web_cpu_pct=… first_pickup_p50_ms=… first_pickup_max_ms=…
//
// The web figure on MySQL + Redis is this whole process, the benchmark's own idle
// polling included.
func BenchmarkIdle(b *testing.B) {
	needMySQLAndRedis(b)
	span := time.Duration(envInt("HERALD_BENCH_IDLE_SPAN", 20)) * time.Second
	gap := time.Duration(envInt("HERALD_BENCH_IDLE_GAP", 5)) * time.Second
	samples := envInt("HERALD_BENCH_IDLE_SAMPLES", 5)
	for range b.N {
		fmt.Fprintf(os.Stderr, "\n%s\n", machineLine())

		// The embedded default: everything in one process.
		dir := b.TempDir()
		addr := freeAddr(b)
		env := map[string]string{"HERALD_DATA_DIR": dir, "HERALD_ADDR": addr, "HERALD_ADMIN_PASSWORD": testAdminPassword,
			"HERALD_SESSION_SECRET": "bench-session-secret-0123456789abcdef", "HERALD_SECRET_KEY": "bench-secret-key-0123456789abcdef0123",
			"HERALD_TEST_KNOBS": idleKnob}
		serve := exec.Command(heraldBinary(b), "serve")
		serve.Env = processEnv(env)
		if err := serve.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = serve.Process.Signal(syscall.SIGTERM); _ = serve.Wait() })
		waitHTTP(b, "http://"+addr+"/healthz")
		create := exec.Command(heraldBinary(b), "apikey", "create", "--name", "idle", "--scopes", "send,read")
		create.Env = processEnv(env)
		out, err := create.Output()
		if err != nil {
			b.Fatalf("apikey create: %v", err)
		}
		key, _, _ := strings.Cut(string(out), "\n")
		time.Sleep(10 * time.Second)
		cpu := idleCPU(span, func() time.Duration { return testenv.PIDCPU(serve.Process.Pid) })
		p50, worst := pickups(b, "http://"+addr, strings.TrimSpace(key), `"platform":"sandbox","recipients":["E1001"]`, samples, gap)
		fmt.Fprintf(os.Stderr, "idle mode=embedded serve_cpu_pct=%.1f first_pickup_p50_ms=%.1f first_pickup_max_ms=%.1f\n", cpu, ms(p50), ms(worst))
		b.ReportMetric(cpu, "embedded_idle_cpu_pct")

		// MySQL + Redis: a worker process of its own beside the web process.
		rig := newBenchRig(b, 1, 0)
		rig.env["HERALD_TEST_KNOBS"] = idleKnob
		w := rig.startWorker(b, rig.h.App.Config.WorkerConcurrency)
		_, readKey, err := rig.h.App.Store.Access().CreateAPIKey(context.Background(), "idle", "send,read", "bench")
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		webBefore := processCPU()
		workerCPU := idleCPU(span, func() time.Duration { return testenv.PIDCPU(w.proc.Process.Pid) })
		webCPU := 100 * float64(processCPU()-webBefore) / float64(span)
		p50, worst = pickups(b, rig.h.URL, readKey, fmt.Sprintf(`"account":%q,"recipients":[%q]`, rig.acct.Name, rig.people[0]), samples, gap)
		w.stop(b)
		fmt.Fprintf(os.Stderr, "idle mode=mysql worker_cpu_pct=%.1f web_cpu_pct=%.1f first_pickup_p50_ms=%.1f first_pickup_max_ms=%.1f\n",
			workerCPU, webCPU, ms(p50), ms(worst))
		b.ReportMetric(workerCPU, "mysql_worker_idle_cpu_pct")
	}
}

// idleKnob has the benchmark's workers go idle 2 s after their last task.
const idleKnob = "idle_after=2s"

// idleCPU is the CPU the reading used over span, as a percentage of one core.
func idleCPU(span time.Duration, read func() time.Duration) float64 {
	before := read()
	time.Sleep(span)
	return 100 * float64(read()-before) / float64(span)
}

// pickups sends n messages (to, the send's recipients and account or platform as JSON
// fields) through base's API with key, each after gap of quiet, and returns the p50 and
// slowest time from a message's creation to its being sent, by the message's own times.
func pickups(b *testing.B, base, key, to string, n int, gap time.Duration) (p50, worst time.Duration) {
	client := &http.Client{Timeout: 30 * time.Second}
	call := func(method, path, body string) []byte {
		req, err := http.NewRequest(method, base+path, bytes.NewReader([]byte(body)))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			b.Fatalf("%s %s: %d %.300s", method, path, resp.StatusCode, raw)
		}
		return raw
	}
	var took []time.Duration
	for i := range n {
		time.Sleep(gap)
		var sent struct {
			Messages []struct{ ID string } `json:"messages"`
		}
		if err := json.Unmarshal(call("POST", "/api/v1/messages", fmt.Sprintf(`{%s,"content":{"text":"idle pickup %d"}}`, to, i)), &sent); err != nil || len(sent.Messages) != 1 {
			b.Fatalf("send: %v %+v", err, sent)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			var m struct {
				Status    string     `json:"status"`
				CreatedAt time.Time  `json:"created_at"`
				SentAt    *time.Time `json:"sent_at"`
			}
			if err := json.Unmarshal(call("GET", "/api/v1/messages/"+sent.Messages[0].ID, ""), &m); err != nil {
				b.Fatal(err)
			}
			if m.Status == "sent" && m.SentAt != nil {
				took = append(took, m.SentAt.Sub(m.CreatedAt))
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("message %s not sent after 30 s: %s", sent.Messages[0].ID, m.Status)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	slices.Sort(took)
	return took[len(took)/2], took[len(took)-1]
}
