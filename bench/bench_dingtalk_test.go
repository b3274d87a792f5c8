package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"

	"herald/directory"
	"herald/sending"
	"herald/simulator"
)

// BenchmarkDingTalk drains one fan-out of directory.MaxRecipients DingTalk work notices
// through the simulator (every state persisted, a chunk's people in one asyncsend_v2
// call and one getsendresult), beside raw Asynq no-op throughput at its best
// (rawAsynqNoop), measured in the same run. As for Feishu, the account has no limits
// and the simulator answers after the pipeline benchmark's latency and ignores
// DingTalk's (--no-platform-limits), so the figure is the pipeline's, not DingTalk's
// 5,000 recipients a minute; a run in which the simulator dropped anything silently
// fails. It prints one line:
// `dingtalk asynq_noop_tasks_per_s=… dingtalk_fanout_msgs_per_s=… dingtalk_fanout_ratio=… dingtalk_calls=…`.
func BenchmarkDingTalk(b *testing.B) {
	needMySQLAndRedis(b)
	n := directory.MaxRecipients
	for range b.N {
		rig := newBenchRig(b, n, 0)
		concurrency := rig.h.App.Config.WorkerConcurrency
		fmt.Fprintf(os.Stderr, "\n%s worker_concurrency=%d\n", machineLine(), concurrency)
		simURL := rig.useDingTalk(b)
		noop := rawAsynqNoop(b).rate() // Asynq at its best, its own process
		rig.fanOut(b, n)
		rate := rig.drain(b, n, concurrency).rate
		st := simStats(b, simURL)
		if dropped := st.DroppedSilently["dingtalk"]; dropped > 0 {
			b.Fatalf("the simulator dropped %d notices silently: the figure would be DingTalk's limits, not the pipeline's", dropped)
		}
		calls := st.Requests
		line := fmt.Sprintf("dingtalk asynq_noop_tasks_per_s=%.0f dingtalk_fanout_msgs_per_s=%.0f dingtalk_fanout_ratio=%.2f dingtalk_calls=%d",
			noop, rate, ratio(rate, noop), calls)
		b.ReportMetric(rate, "dingtalk_fanout_msgs_per_s")
		b.ReportMetric(ratio(rate, noop), "dingtalk_fanout_ratio")
		fmt.Fprintln(os.Stderr, line)
	}
}

// useDingTalk starts a simulator without the platforms' limits, gives the rig's people
// DingTalk user ids and makes a DingTalk account on that simulator the one the rig sends
// through; it returns the simulator's URL.
func (r *benchRig) useDingTalk(b *testing.B) string {
	ctx := context.Background()
	simURL := "http://" + r.unlimitedSimulator(b)
	store := r.h.App.Store
	list := make([]directory.Recipient, len(r.people))
	for i, id := range r.people {
		list[i] = directory.Recipient{ExternalID: id, Name: id, OrgType: directory.Branch, DingtalkUserid: "dt_" + id, Active: true}
	}
	for start := 0; start < len(list); start += 10000 {
		if _, err := store.Directory().UpsertRecipients(ctx, list[start:min(start+10000, len(list))]); err != nil {
			b.Fatal(err)
		}
	}
	a := &sending.Account{Name: "dt-bench", Platform: "dingtalk", Enabled: true, AllowPrivateNetwork: true, MaxAttempts: 3, Healthy: true,
		Config: map[string]string{"app_key": "bench", "app_secret": "bench", "agent_id": "1", "base_url": simURL + "/dingtalk"}}
	if err := store.Sending().SaveAccount(ctx, a); err != nil {
		b.Fatal(err)
	}
	r.acct = a
	return simURL
}

// simStats is the simulator's GET /_sim/stats: how many message calls it answered and
// what it dropped silently.
func simStats(b *testing.B, simURL string) simulator.Stats {
	resp, err := http.Get(simURL + "/_sim/stats")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var st simulator.Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		b.Fatal(err)
	}
	return st
}
