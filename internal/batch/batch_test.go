package batch

import (
	"context"
	"testing"
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
