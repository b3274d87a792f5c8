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
// `dingtalk asynq_noop_tasks_per_s=… dingtalk_fanout_msgs_per_s=… dingtalk_fanout_ratio=… dingtalk_fanout_cpu_us_per_msg=… dingtalk_calls=…`
// (the CPU of every process on the machine that works on the drain, per message).
func BenchmarkDingTalk(b *testing.B) {
	benchGroupedFanout(b, "dingtalk", func(r *benchRig, simURL string) (*sending.Account, func(*directory.Recipient)) {
		return &sending.Account{Name: "dt-bench", Platform: "dingtalk", Enabled: true, AllowPrivateNetwork: true, MaxAttempts: 3, Healthy: true,
				Config: map[string]string{"app_key": "bench", "app_secret": "bench", "agent_id": "1", "base_url": simURL + "/dingtalk"}},
			func(p *directory.Recipient) { p.DingtalkUserid = "dt_" + p.ExternalID }
	})
}

// BenchmarkWeCom is BenchmarkDingTalk for WeCom application messages: a chunk's people
// that share the content go in one message/send of up to 1,000 (touser joined by "|"),
// each still claimed, admitted and finished on its own. It prints
// `wecom asynq_noop_tasks_per_s=… wecom_fanout_msgs_per_s=… wecom_fanout_ratio=… wecom_fanout_cpu_us_per_msg=… wecom_calls=…`.
func BenchmarkWeCom(b *testing.B) {
	benchGroupedFanout(b, "wecom", func(r *benchRig, simURL string) (*sending.Account, func(*directory.Recipient)) {
		return &sending.Account{Name: "wc-bench", Platform: "wecom", Enabled: true, AllowPrivateNetwork: true, MaxAttempts: 3, Healthy: true,
				Config: map[string]string{"corp_id": "bench", "secret": "bench", "agent_id": "1", "base_url": simURL + "/wecom"}},
			func(p *directory.Recipient) { p.WecomUserid = "wc_" + p.ExternalID }
	})
}

// benchGroupedFanout drains one fan-out of directory.MaxRecipients through the account
// use makes on a simulator without the platforms' limits (its people given the
// platform's user ids by address), beside raw Asynq no-op throughput at its best,
// measured in the same run, and prints the figures and the simulator's call count on
// one line named by platform.
func benchGroupedFanout(b *testing.B, platform string, use func(r *benchRig, simURL string) (*sending.Account, func(*directory.Recipient))) {
	needMySQLAndRedis(b)
	n := directory.MaxRecipients
	for range b.N {
		rig := newBenchRig(b, n, 0)
		concurrency := rig.h.App.Config.WorkerConcurrency
		fmt.Fprintf(os.Stderr, "\n%s worker_concurrency=%d\n", machineLine(), concurrency)
		simURL := rig.usePlatform(b, use)
		noop := rawAsynqNoop(b).rate() // Asynq at its best, its own process
		rig.fanOut(b, n)
		drained := rig.drain(b, n, concurrency)
		rate := drained.rate
		st := simStats(b, simURL)
		if dropped := st.DroppedSilently[platform]; dropped > 0 {
			b.Fatalf("the simulator dropped %d notices silently: the figure would be the platform's limits, not the pipeline's", dropped)
		}
		line := fmt.Sprintf("%s asynq_noop_tasks_per_s=%.0f %s_fanout_msgs_per_s=%.0f %s_fanout_ratio=%.2f %s_fanout_cpu_us_per_msg=%.0f %s_calls=%d",
			platform, noop, platform, rate, platform, ratio(rate, noop), platform, drained.cpu.allMicros(), platform, st.Requests)
		b.ReportMetric(rate, platform+"_fanout_msgs_per_s")
		b.ReportMetric(ratio(rate, noop), platform+"_fanout_ratio")
		fmt.Fprintln(os.Stderr, line)
	}
}

// usePlatform starts a simulator without the platforms' limits, gives the rig's people
// the platform's user ids (address) and makes the account use returns, on that
// simulator, the one the rig sends through; it returns the simulator's URL.
func (r *benchRig) usePlatform(b *testing.B, use func(r *benchRig, simURL string) (*sending.Account, func(*directory.Recipient))) string {
	ctx := context.Background()
	simURL := "http://" + r.unlimitedSimulator(b)
	store := r.h.App.Store
	a, address := use(r, simURL)
	list := make([]directory.Recipient, len(r.people))
	for i, id := range r.people {
		list[i] = directory.Recipient{ExternalID: id, Name: id, OrgType: directory.Branch, Active: true}
		address(&list[i])
	}
	for start := 0; start < len(list); start += 10000 {
		if _, err := store.Directory().UpsertRecipients(ctx, list[start:min(start+10000, len(list))]); err != nil {
			b.Fatal(err)
		}
	}
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
