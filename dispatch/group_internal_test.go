package dispatch

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"herald/tasks"
)

// TestGroupsGatherLoneMessages: messages of one priority that join within the window
// travel in one task that carries those whose transaction committed, enqueued only once
// every member's transaction has ended; a full group makes the next message open
// another; priorities never share a task; wait hands over what is still gathering.
func TestGroupsGatherLoneMessages(t *testing.T) {
	var mu sync.Mutex
	var got []tasks.Job
	enqueued := make(chan struct{}, 100)
	enqueue := func(_ context.Context, jobs []tasks.Job) {
		mu.Lock()
		got = append(got, jobs...)
		mu.Unlock()
		enqueued <- struct{}{}
	}
	var g grouper
	now := time.Now()
	a := g.join(enqueue, "m1", "normal", now)
	b := g.join(enqueue, "m2", "normal", now)
	c := g.join(enqueue, "m3", "normal", now)
	h := g.join(enqueue, "m4", "high", now)
	if a != b || b != c || a == h {
		t.Fatal("messages of one priority joined different groups, or priorities shared one")
	}
	if a.job.TaskID != tasks.SendTaskID("m1", "group") {
		t.Errorf("group task id %q", a.job.TaskID)
	}
	g.done(a, "m1", true)
	g.done(a, "m2", false) // rolled back
	time.Sleep(3 * groupWindow)
	mu.Lock()
	if len(got) != 0 {
		t.Fatalf("a group was enqueued while a member was still writing: %v", got)
	}
	mu.Unlock()
	g.done(c, "m3", true)
	<-enqueued
	mu.Lock()
	if len(got) != 1 || !slices.Equal(got[0].MessageIDs, []string{"m1", "m3"}) || got[0].Priority != "normal" {
		t.Fatalf("enqueued %+v, want one normal task carrying m1 and m3", got)
	}
	mu.Unlock()

	// A full group: the next message opens another.
	first := g.join(enqueue, "n0", "low", now)
	for i := 1; i < tasks.ChunkSize; i++ {
		if g.join(enqueue, fmt.Sprint("n", i), "low", now) != first {
			t.Fatalf("message %d of %d left the group", i+1, tasks.ChunkSize)
		}
	}
	if next := g.join(enqueue, "x", "low", now); next == first {
		t.Fatalf("a group took more than %d messages", tasks.ChunkSize)
	}

	// wait closes what is gathering: the high group (m4 committed) is enqueued.
	g.done(h, "m4", true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for i := range tasks.ChunkSize {
		g.done(first, fmt.Sprint("n", i), true)
	}
	g.wait(ctx) // the "x" group has a member writing: wait gives up at ctx's end
	mu.Lock()
	defer mu.Unlock()
	var high, low bool
	for _, j := range got {
		high = high || slices.Equal(j.MessageIDs, []string{"m4"})
		low = low || len(j.MessageIDs) == tasks.ChunkSize
	}
	if !high || !low {
		t.Errorf("after wait: high group enqueued %v, full low group enqueued %v", high, low)
	}
}

func TestSharedTransactionEndsWithItsLastCaller(t *testing.T) {
	base := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	withDeadline := func(d time.Duration) write {
		ctx, cancel := context.WithDeadline(context.Background(), base.Add(d))
		t.Cleanup(cancel)
		return write{ctx: ctx}
	}
	none := write{ctx: context.Background()}
	for _, tt := range []struct {
		name   string
		ws     []write
		at     []int
		want   time.Duration
		wantOK bool
	}{
		{"one caller", []write{withDeadline(4 * time.Second)}, []int{0}, 4 * time.Second, true},
		{"the latest of several", []write{withDeadline(2 * time.Second), withDeadline(4 * time.Second), withDeadline(3 * time.Second)}, []int{0, 1, 2}, 4 * time.Second, true},
		{"only the writes still live count", []write{withDeadline(9 * time.Second), withDeadline(4 * time.Second)}, []int{1}, 4 * time.Second, true},
		{"a caller without a deadline: none", []write{withDeadline(2 * time.Second), none}, []int{0, 1}, 0, false},
		{"no writes: none", []write{withDeadline(2 * time.Second)}, nil, 0, false},
	} {
		got, ok := latestDeadline(tt.ws, tt.at)
		if ok != tt.wantOK || (ok && !got.Equal(base.Add(tt.want))) {
			t.Errorf("%s: %v %v, want %v %v", tt.name, got, ok, base.Add(tt.want), tt.wantOK)
		}
	}
}
