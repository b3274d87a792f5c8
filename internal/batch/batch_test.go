package batch

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBatcherAfterClose: a closed batcher ends its runners, and a late call still runs.
func TestBatcherAfterClose(t *testing.T) {
	runs := make(chan int, 10)
	b := New(2, 4, func(_ context.Context, in []int) []int {
		runs <- len(in)
		out := make([]int, len(in))
		for i, v := range in {
			out[i] = v * 2
		}
		return out
	})
	if got := b.Do(3); got != 6 {
		t.Fatalf("do(3) = %d before close", got)
	}
	b.Close()
	b.Close() // twice is harmless
	if got := b.Do(4); got != 8 {
		t.Fatalf("do(4) = %d after close", got)
	}
	if n := len(runs); n != 2 {
		t.Errorf("%d batches ran, want 2", n)
	}
}

// gate is a run function whose first batch waits until released, and which reports
// every batch it starts.
type gate struct {
	release chan struct{}
	started chan []int
	first   atomic.Bool
}

func newGate() *gate {
	return &gate{release: make(chan struct{}), started: make(chan []int, 16)}
}

func (g *gate) run(_ context.Context, in []int) []int {
	first := g.first.CompareAndSwap(false, true) // before it is reported: the first reported is the one held
	g.started <- append([]int(nil), in...)
	if first {
		<-g.release
	}
	return in
}

// next waits for the next batch to start, or fails after a while.
func (g *gate) next(t *testing.T) []int {
	t.Helper()
	select {
	case in := <-g.started:
		return in
	case <-time.After(5 * time.Second):
		t.Fatal("no batch started")
		return nil
	}
}

// doAll calls b.Do for each value from goroutines of their own, and returns a channel
// that closes once every call has returned.
func doAll(b *Batcher[int, int], values ...int) <-chan struct{} {
	var wg sync.WaitGroup
	for _, v := range values {
		wg.Go(func() { b.Do(v) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// waitTaken waits until the scheduler has taken n calls in, or fails after a while.
func waitTaken(t *testing.T, b *Batcher[int, int], n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for b.taken.Load() < n {
		if time.Now().After(deadline) {
			t.Fatal("the calls never reached the queue")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBatcherBesideARunningBatch: when calls that arrive while a batch runs start a
// batch beside it, and which calls it holds.
func TestBatcherBesideARunningBatch(t *testing.T) {
	tests := []struct {
		name     string
		grouping *Grouping // nil: New
		calls    []int
		// minWait is the least time the batch may take to start after the calls.
		minWait time.Duration
	}{
		{name: "no grouping: at once", calls: []int{2}},
		{name: "eager: once three wait, together", grouping: &Grouping{Eager: 3, Linger: time.Hour}, calls: []int{2, 3, 4}},
		{name: "linger: alone, after it", grouping: &Grouping{Eager: 8, Linger: 20 * time.Millisecond}, calls: []int{2},
			minWait: 20 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate()
			var b *Batcher[int, int]
			if tt.grouping == nil {
				b = New(4, 8, g.run)
			} else {
				b = NewGrouping(4, 8, *tt.grouping, g.run)
			}
			first := doAll(b, 1)
			if got := g.next(t); !slices.Equal(got, []int{1}) {
				t.Fatalf("first batch %v, want [1]", got)
			}
			start := time.Now()
			rest := doAll(b, tt.calls...)
			got := g.next(t)
			waited := time.Since(start)
			slices.Sort(got)
			if !slices.Equal(got, tt.calls) {
				t.Errorf("batch beside the running one %v, want %v", got, tt.calls)
			}
			if waited < tt.minWait {
				t.Errorf("it started after %s, before %s", waited, tt.minWait)
			}
			<-rest
			close(g.release)
			<-first
		})
	}
}

// TestBatcherGroupingAfterTheRunningBatch: calls that wait for a running batch start
// together once it ends, and a closed batcher still runs what was queued.
func TestBatcherGroupingAfterTheRunningBatch(t *testing.T) {
	g := newGate()
	b := NewGrouping(4, 8, Grouping{Eager: 8, Linger: time.Hour}, g.run)
	first := doAll(b, 1)
	g.next(t)
	rest := doAll(b, 2, 3, 4)
	// The three reach the scheduler in their own time: wait until it has taken them in.
	waitTaken(t, b, 4)
	select {
	case got := <-g.started:
		t.Fatalf("batch %v started beside the running one before Eager or Linger", got)
	default:
	}
	close(g.release)
	<-first
	got := g.next(t)
	slices.Sort(got)
	if !slices.Equal(got, []int{2, 3, 4}) {
		t.Errorf("batch after the running one %v, want the three waiting calls together", got)
	}
	<-rest
	b.Close()
}

// TestBatcherGather: with Gather, a call that finds nothing running waits for others
// when it came soon after the call before it, and runs at once after a quiet spell.
func TestBatcherGather(t *testing.T) {
	g := newGate()
	close(g.release) // no batch is held: each one ends as soon as it starts
	b := NewGrouping(4, 8, Grouping{Eager: 3, Linger: time.Hour, Gather: time.Hour}, g.run)
	defer b.Close()
	// The first call has no call before it: it runs at once, alone.
	<-doAll(b, 1)
	if got := g.next(t); !slices.Equal(got, []int{1}) {
		t.Fatalf("first batch %v, want [1]", got)
	}
	// The next came within Gather of it: it waits until Eager calls wait.
	rest := doAll(b, 2)
	waitTaken(t, b, 2)
	select {
	case got := <-g.started:
		t.Fatalf("batch %v started before Eager calls waited or Gather passed", got)
	case <-time.After(20 * time.Millisecond):
	}
	more := doAll(b, 3, 4)
	got := g.next(t)
	slices.Sort(got)
	if !slices.Equal(got, []int{2, 3, 4}) {
		t.Errorf("gathered batch %v, want [2 3 4]", got)
	}
	<-rest
	<-more
}

// TestBatcherDue: when waiting calls may start a batch, by what is running and how the
// oldest of them came.
func TestBatcherDue(t *testing.T) {
	b := &Batcher[int, int]{grouping: Grouping{Eager: 4, Linger: 5 * time.Millisecond, Gather: 2 * time.Millisecond}}
	now := time.Now()
	call := func(age time.Duration, company bool) batchReq[int, int] {
		return batchReq[int, int]{at: now.Add(-age), company: company}
	}
	tests := []struct {
		name    string
		queue   []batchReq[int, int]
		running int
		want    bool
	}{
		{"nothing running, after a quiet spell", []batchReq[int, int]{call(0, false)}, 0, true},
		{"nothing running, in company, just come", []batchReq[int, int]{call(0, true)}, 0, false},
		{"nothing running, in company, gathered long enough", []batchReq[int, int]{call(3*time.Millisecond, true)}, 0, true},
		{"nothing running, in company, eager many", []batchReq[int, int]{call(0, true), call(0, true), call(0, true), call(0, true)}, 0, true},
		{"one running, past Gather but not Linger", []batchReq[int, int]{call(3*time.Millisecond, false)}, 1, false},
		{"one running, lingered long enough", []batchReq[int, int]{call(6*time.Millisecond, true)}, 1, true},
		{"one running, eager many", []batchReq[int, int]{call(0, false), call(0, true), call(0, true), call(0, true)}, 1, true},
	}
	for _, tt := range tests {
		if got := b.due(tt.queue, tt.running); got != tt.want {
			t.Errorf("%s: due = %v, want %v", tt.name, got, tt.want)
		}
	}
}
