package tasks

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"herald/delivery"
	"herald/silence"
)

// liveList is a loader of fixed silences whose versions a test moves on.
type liveList struct {
	mu    sync.Mutex
	sils  []silence.Silence
	reads int
	// gate, when set, holds each read until it is closed; entered hears of each read.
	gate, entered chan struct{}
}

func (l *liveList) load(ctx context.Context, _ time.Time) ([]silence.Live, error) {
	l.mu.Lock()
	l.reads++
	gate, entered := l.gate, l.entered
	out := make([]silence.Live, len(l.sils))
	for i, s := range l.sils {
		out[i] = silence.Live{Silence: s, Windows: []delivery.Window{{Start: s.StartsAt, End: s.End()}}}
	}
	l.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		<-gate
	}
	return out, nil
}

func heavySilences(n int) []silence.Silence {
	start, end := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	out := make([]silence.Silence, n)
	for i := range out {
		var ms []delivery.Matcher
		for j := range 20 {
			ms = append(ms, delivery.Matcher{Name: delivery.MatchTemplate, Value: fmt.Sprintf(`(disk|cpu|mem)-[a-z]{1,40}-%d-%d(-\d+)?`, i, j), Regex: true})
		}
		out[i] = silence.Silence{ID: int64(i + 1), Version: 1, Matchers: ms, StartsAt: start, EndsAt: end}
	}
	return out
}

// A reload compiles a silence only when its version is new: while it stays the same,
// every reload hands out the rule compiled the first time; an edit compiles it anew, and
// a silence no longer live is forgotten.
func TestSilenceRulesCompileOncePerVersion(t *testing.T) {
	ctx := context.Background()
	l := &liveList{sils: heavySilences(3)}
	var c silenceRules
	first, err := c.active(ctx, l.load, time.Now())
	if err != nil || len(first) != 3 {
		t.Fatalf("%d rules (%v)", len(first), err)
	}
	c.read = time.Time{}.Add(time.Nanosecond) // as if silenceTTL had passed
	again, err := c.active(ctx, l.load, time.Now())
	if err != nil || l.reads != 2 {
		t.Fatalf("reads %d (%v)", l.reads, err)
	}
	for i := range first {
		if again[i] != first[i] {
			t.Errorf("silence %d recompiled at an unchanged version", first[i].rule.ID)
		}
	}
	l.mu.Lock()
	l.sils[1].Version = 2
	l.sils = l.sils[:2]
	l.mu.Unlock()
	c.read = time.Time{}.Add(time.Nanosecond)
	edited, err := c.active(ctx, l.load, time.Now())
	if err != nil || len(edited) != 2 {
		t.Fatalf("%d rules (%v)", len(edited), err)
	}
	if edited[0] != first[0] || edited[1] == first[1] {
		t.Errorf("after editing silence 2: silence 1 reused %v, silence 2 recompiled %v", edited[0] == first[0], edited[1] != first[1])
	}
	if len(c.compiled) != 2 {
		t.Errorf("%d compiled silences kept, want the 2 live ones", len(c.compiled))
	}
}

// The lock is not held while the database is read: while one caller reloads, another
// tests with the silences read before and does not wait for the read.
func TestSilenceRulesReloadWithoutTheLock(t *testing.T) {
	ctx := context.Background()
	l := &liveList{sils: heavySilences(2)}
	var c silenceRules
	if _, err := c.active(ctx, l.load, time.Now()); err != nil {
		t.Fatal(err)
	}
	l.gate, l.entered = make(chan struct{}), make(chan struct{}, 1)
	c.mu.Lock()
	c.read = time.Time{}.Add(time.Nanosecond)
	c.mu.Unlock()
	reloaded := make(chan error, 1)
	go func() {
		_, err := c.active(ctx, l.load, time.Now())
		reloaded <- err
	}()
	<-l.entered // the reload is reading
	meanwhile := make(chan int, 1)
	go func() {
		rules, _ := c.active(ctx, l.load, time.Now())
		meanwhile <- len(rules)
	}()
	select {
	case n := <-meanwhile:
		if n != 2 {
			t.Errorf("during the reload another caller had %d rules, want the 2 read before", n)
		}
	case <-time.After(10 * time.Second):
		t.Error("another caller waited for the database read")
	}
	close(l.gate)
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	if l.reads != 2 {
		t.Errorf("%d reads, want 2: the caller during the reload read nothing", l.reads)
	}
}

// BenchmarkSilenceReload is one worker's reload of 200 live silences of 20 regexes each,
// as it happens every silenceTTL: unchanged (compiled once, reused) against every
// version new (what each reload cost before compiling once).
func BenchmarkSilenceReload(b *testing.B) {
	ctx := context.Background()
	for _, changed := range []bool{false, true} {
		b.Run(fmt.Sprintf("changed=%v", changed), func(b *testing.B) {
			l := &liveList{sils: heavySilences(200)}
			var c silenceRules
			if _, err := c.active(ctx, l.load, time.Now()); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if changed {
					for j := range l.sils {
						l.sils[j].Version++
					}
				}
				c.read = time.Time{}.Add(time.Nanosecond)
				if _, err := c.active(ctx, l.load, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
