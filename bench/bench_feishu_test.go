package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"herald/directory"
	"herald/sending"
)

// BenchmarkPipelineFeishu drains a fan-out backlog (HERALD_BENCH_FEISHU_BACKLOG, 10,000
// by default) through the Feishu adapter, token and all, into a `herald simulate`
// process answering after the pipeline benchmark's latency, beside raw Asynq no-op
// throughput at its best (rawAsynqNoop), measured in the same run. The account has no
// limits and the simulator is told to ignore Feishu's (--no-platform-limits): what is
// measured is how fast Herald can drive the adapter, not Feishu's 1,000 a minute. It
// prints one line:
// `feishu asynq_noop_tasks_per_s=… feishu_drain_msgs_per_s=… feishu_ratio=… worker_rss_mb=…`.
func BenchmarkPipelineFeishu(b *testing.B) {
	needMySQLAndRedis(b)
	backlog := envInt("HERALD_BENCH_FEISHU_BACKLOG", 10000)
	for range b.N {
		rig := newBenchRig(b, min(backlog, directory.MaxRecipients), 0)
		concurrency := rig.h.App.Config.WorkerConcurrency
		fmt.Fprintf(os.Stderr, "\n%s worker_concurrency=%d backlog=%d sim_latency=%s\n", machineLine(), concurrency, backlog, benchSimLatency)
		rig.useFeishu(b)
		noop := rawAsynqNoop(b).rate() // Asynq at its best, its own process
		rig.fanOut(b, backlog)
		drained := rig.drain(b, backlog, concurrency)
		drain, rss := drained.rate, drained.rssMB
		line := "feishu"
		for _, f := range []struct {
			name   string
			value  float64
			digits int
		}{
			{"asynq_noop_tasks_per_s", noop, 0},
			{"feishu_drain_msgs_per_s", drain, 0},
			{"feishu_ratio", ratio(drain, noop), 2},
			{"worker_rss_mb", rss, 0},
		} {
			b.ReportMetric(f.value, f.name)
			line += fmt.Sprintf(" %s=%.*f", f.name, f.digits, f.value)
		}
		fmt.Fprintln(os.Stderr, line)
	}
}

// useFeishu starts a simulator without the platforms' limits, gives the rig's people
// Feishu user ids and points the rig at a Feishu account on it.
func (r *benchRig) useFeishu(b *testing.B) {
	addr := r.unlimitedSimulator(b)
	ctx := context.Background()
	if _, err := r.h.App.Store.SQL().ExecContext(ctx, "UPDATE recipients SET feishu_user_id = CONCAT('fs_', external_id)"); err != nil {
		b.Fatal(err)
	}
	a := &sending.Account{Name: "feishu-bench", Platform: "feishu", Enabled: true, AllowPrivateNetwork: true, MaxAttempts: 3, Healthy: true,
		Config: map[string]string{"app_id": "cli_bench", "app_secret": "bench", "base_url": "http://" + addr + "/feishu"}}
	if err := r.h.App.Store.Sending().SaveAccount(ctx, a); err != nil {
		b.Fatal(err)
	}
	r.acct = a
}

// unlimitedSimulator starts a `herald simulate` process of the rig's own that answers
// after the pipeline benchmark's latency and keeps none of the platforms' limits
// (--no-platform-limits), makes it the rig's simulator and returns its address.
func (r *benchRig) unlimitedSimulator(b *testing.B) string {
	addr := freeAddr(b)
	sim := exec.Command(heraldBinary(b), "simulate", "--addr", addr, "--smtp-addr", freeAddr(b),
		"--latency", benchSimLatency.String(), "--no-platform-limits")
	if err := sim.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sim.Process.Signal(syscall.SIGTERM); _ = sim.Wait() })
	r.simPID = sim.Process.Pid
	waitHTTP(b, "http://"+addr+"/healthz")
	return addr
}
