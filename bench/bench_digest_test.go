package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkDigest sends 10,000 notices to 100 people as fast as 20 callers can, well
// within one minute, each under a one-minute digest (max 500, so only the windows close
// them), with two worker processes folding the groups. It waits until no notice is left
// waiting and every digest is sent, then checks: at most 200 messages sent (one digest a
// person a window), and every notice accounted for (sent on its own, digested into a
// sent digest, or still waiting).
func BenchmarkDigest(b *testing.B) {
	needMySQLAndRedis(b)
	const (
		people  = 100
		notices = 10000
	)
	r := newBenchRig(b, people, 0)
	ctx := context.Background()
	for range 2 {
		w := r.startWorker(b, 50)
		b.Cleanup(func() { w.stop(b) })
	}
	b.ResetTimer()
	start := time.Now()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 20}}
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < notices; i = int(next.Add(1)) - 1 {
				err := r.post(client, map[string]any{"account": r.acct.Name, "recipients": []string{r.people[i%people]},
					"content": map[string]string{"subject": fmt.Sprintf("batch job %d failed", i), "text": "see the console"},
					"digest":  map[string]any{"key": "bench", "window": "1m", "max": 500}})
				if err != nil && failed.Add(1) <= 3 {
					b.Logf("notice %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	accepted := time.Since(start)
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d notices refused", f, notices)
	}
	deadline := time.Now().Add(3 * time.Minute)
	var c digestTally
	for {
		var err error
		if c, err = tallyDigests(r); err != nil {
			b.Fatal(err)
		}
		if c.waiting == 0 && c.unsent == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("after 3 minutes: %+v", c)
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.StopTimer()
	last, err := r.lastSent(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if c.sent > 2*people {
		b.Errorf("%d messages sent, want at most %d", c.sent, 2*people)
	}
	if n := c.alone + c.intoSent + c.waiting; n != notices {
		b.Errorf("notices accounted for: %d sent alone + %d digested into sent digests + %d waiting = %d, want %d", c.alone, c.intoSent, c.waiting, n, notices)
	}
	b.ReportMetric(float64(c.sent), "messages-sent")
	b.Logf("digest: %d notices to %d people accepted in %.1f s under a 1m digest, 2 workers: %d messages sent (at most %d); notices %d digested into sent digests, %d sent alone, %d waiting; last digest sent %.1f s after the first notice · %s",
		notices, people, accepted.Seconds(), c.sent, 2*people, c.intoSent, c.alone, c.waiting, last.Sub(start).Seconds(), machineLine())
}

// post sends one request body to POST /api/v1/messages with the rig's key.
func (r *benchRig) post(client *http.Client, fields map[string]any) error {
	body, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	req, err := http.NewRequest("POST", r.h.URL+"/api/v1/messages", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+r.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("status %d: %.300s", resp.StatusCode, raw)
	}
	return nil
}

// digestTally is where the benchmark's messages are.
type digestTally struct {
	// sent counts the messages sent; unsent the digests not sent yet.
	sent, unsent int
	// Of the notices: digested into a sent digest, sent on their own, waiting.
	intoSent, alone, waiting int
}

func tallyDigests(r *benchRig) (digestTally, error) {
	var c digestTally
	err := r.h.App.Store.SQL().QueryRow(`SELECT
		(SELECT COUNT(*) FROM messages WHERE status = 'sent'),
		(SELECT COUNT(*) FROM messages m JOIN batches b ON b.id = m.batch_id WHERE b.source = 'digest' AND m.status <> 'sent'),
		(SELECT COUNT(*) FROM messages n JOIN messages d ON d.id = n.digest_message_id WHERE n.status = 'digested' AND d.status = 'sent'),
		(SELECT COUNT(*) FROM messages WHERE digest_slot <> '' AND status = 'sent'),
		(SELECT COUNT(*) FROM messages WHERE digest_slot <> '' AND status = 'pending')`).
		Scan(&c.sent, &c.unsent, &c.intoSent, &c.alone, &c.waiting)
	return c, err
}

// lastSent is when the last message was sent.
func (r *benchRig) lastSent(ctx context.Context) (time.Time, error) {
	var last time.Time
	err := r.h.App.Store.SQL().QueryRowContext(ctx, "SELECT MAX(sent_at) FROM messages").Scan(&last)
	return last, err
}
