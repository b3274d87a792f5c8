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

// TestBatcherStartsBesideARunningBatch: with no Grouping, a call that arrives while a
// batch runs starts a batch of its own at once, up to the runners.
func TestBatcherStartsBesideARunningBatch(t *testing.T) {
	g := newGate()
	b := New(2, 8, g.run)
	first := doAll(b, 1)
	if got := g.next(t); !slices.Equal(got, []int{1}) {
		t.Fatalf("first batch %v, want [1]", got)
	}
	second := doAll(b, 2)
	if got := g.next(t); !slices.Equal(got, []int{2}) {
		t.Errorf("second batch %v, want [2] beside the first", got)
	}
	<-second
	close(g.release)
	<-first
}

// TestBatcherGroupingEager: with a Grouping, calls wait for the running batch until
// Eager of them wait; then they start together beside it.
func TestBatcherGroupingEager(t *testing.T) {
	g := newGate()
	b := NewGrouping(4, 8, Grouping{Eager: 3, Linger: time.Hour}, g.run)
	first := doAll(b, 1)
	g.next(t)
	rest := doAll(b, 2, 3, 4)
	got := g.next(t)
	slices.Sort(got)
	if !slices.Equal(got, []int{2, 3, 4}) {
		t.Errorf("batch beside the running one %v, want the three waiting calls together", got)
	}
	<-rest
	close(g.release)
	<-first
}

// TestBatcherGroupingLinger: a call that waits Linger for a running batch starts one
// beside it, even alone.
func TestBatcherGroupingLinger(t *testing.T) {
	g := newGate()
	b := NewGrouping(4, 8, Grouping{Eager: 8, Linger: 20 * time.Millisecond}, g.run)
	first := doAll(b, 1)
	g.next(t)
	start := time.Now()
	second := doAll(b, 2)
	if got := g.next(t); !slices.Equal(got, []int{2}) {
		t.Errorf("lingering batch %v, want [2]", got)
	}
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Errorf("the lone call started after %s, before its linger of 20ms", waited)
	}
	<-second
	close(g.release)
	<-first
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
	deadline := time.Now().Add(5 * time.Second)
	for b.taken.Load() < 4 {
		if time.Now().After(deadline) {
			t.Fatal("the calls never reached the queue")
		}
		time.Sleep(time.Millisecond)
	}
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
