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

// TestScheduledGroupsGatherBySlot: lone scheduled messages of one priority due within
// one slot share a task due a head start before the earliest is; the schedule learns each committed
// member while the group still gathers (not the rolled-back ones); another slot, another
// priority or a due time too close for company make other tasks; wait hands the rest
// over.
func TestScheduledGroupsGatherBySlot(t *testing.T) {
	var mu sync.Mutex
	latest := map[string]tasks.Job{} // task id → the job last handed over
	calls := 0
	enqueue := func(_ context.Context, jobs []tasks.Job) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		for _, j := range jobs {
			latest[j.TaskID] = j
		}
	}
	handed := func(taskID string) (tasks.Job, bool) {
		mu.Lock()
		defer mu.Unlock()
		j, ok := latest[taskID]
		return j, ok
	}
	var g grouper
	// The start of a slot 3 s from now: its group gathers for about 2 s.
	slotStart := time.UnixMilli((time.Now().Add(3*time.Second).UnixMilli()/scheduleSlot.Milliseconds() + 1) * scheduleSlot.Milliseconds())
	a := g.joinScheduled(enqueue, "s1", "normal", slotStart.Add(30*time.Millisecond))
	b := g.joinScheduled(enqueue, "s2", "normal", slotStart.Add(10*time.Millisecond))
	c := g.joinScheduled(enqueue, "s3", "normal", slotStart.Add(40*time.Millisecond))
	other := g.joinScheduled(enqueue, "s4", "normal", slotStart.Add(scheduleSlot))
	high := g.joinScheduled(enqueue, "s5", "high", slotStart.Add(20*time.Millisecond))
	if a == nil || a != b || b != c || other == a || high == a || other == nil || high == nil {
		t.Fatal("scheduled messages of one priority and slot joined different groups, or others shared one")
	}
	if soon := g.joinScheduled(enqueue, "s6", "normal", time.Now().Add(scheduleLead/2)); soon != nil {
		t.Error("a message due sooner than the lead joined a group")
	}
	earliest := slotStart.Add(10 * time.Millisecond).Add(-scheduleHeadStart)
	if a.job.TaskID != tasks.SendTaskID("s1", "group") || !a.job.ProcessAt.Equal(earliest) {
		t.Errorf("group task %q due %v, want %q due a head start before its earliest member", a.job.TaskID, a.job.ProcessAt, tasks.SendTaskID("s1", "group"))
	}
	g.done(a, "s1", true)
	g.done(b, "s2", false) // rolled back
	// Learnt while the group still gathers.
	deadline := time.Now().Add(time.Second)
	for {
		if j, ok := handed(a.job.TaskID); ok {
			if !slices.Equal(j.MessageIDs, []string{"s1"}) || !j.ProcessAt.Equal(earliest) {
				t.Fatalf("scheduled %+v, want s1 due a head start before the earliest member", j)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a committed member of a gathering group was not scheduled within a second")
		}
		time.Sleep(5 * time.Millisecond)
	}
	g.done(c, "s3", true)
	g.done(other, "s4", true)
	g.done(high, "s5", true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	g.wait(ctx)
	if ctx.Err() != nil {
		t.Fatal("wait did not hand the scheduled groups over")
	}
	for id, want := range map[string][]string{a.job.TaskID: {"s1", "s3"}, other.job.TaskID: {"s4"}, high.job.TaskID: {"s5"}} {
		if j, _ := handed(id); !slices.Equal(j.MessageIDs, want) {
			t.Errorf("task %s carries %v, want %v", id, j.MessageIDs, want)
		}
	}
	if j, _ := handed(high.job.TaskID); j.Priority != "high" {
		t.Errorf("the high group went as %q", j.Priority)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls > 3 {
		t.Errorf("the schedule was written %d times for three commits a flush apart: flushes should gather the groups that changed", calls)
	}
}

// TestLateMembersOfAScheduledGroupGoOnTheirOwn: a member whose transaction commits when
// its group's task may already have left the schedule (a stalled database) is handed
// over in a task of its own rather than added to a task that has gone.
func TestLateMembersOfAScheduledGroupGoOnTheirOwn(t *testing.T) {
	var mu sync.Mutex
	var got []tasks.Job
	enqueue := func(_ context.Context, jobs []tasks.Job) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, jobs...)
	}
	var g grouper
	// The earliest slot that still takes company: its task is due in about 0.9 s.
	at := time.Now().Add(scheduleLead + scheduleSlot + 2*groupWindow)
	a := g.joinScheduled(enqueue, "on-time", "normal", at)
	b := g.joinScheduled(enqueue, "late", "normal", at)
	if a == nil || a != b {
		t.Fatal("two messages of one slot did not share a group")
	}
	g.done(a, "on-time", true)
	time.Sleep(time.Until(a.job.ProcessAt.Add(-lateFlush / 2)))
	g.done(b, "late", true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	g.wait(ctx)
	mu.Lock()
	defer mu.Unlock()
	var carried []string
	for _, j := range got {
		switch {
		case j.TaskID == a.job.TaskID && slices.Contains(j.MessageIDs, "late"):
			t.Errorf("the late member was added to the group's task %v, which may have gone", j)
		case j.TaskID == tasks.SendTaskID("late", "group-late"):
			if !slices.Equal(j.MessageIDs, []string{"late"}) {
				t.Errorf("the late task carries %v", j.MessageIDs)
			}
		}
		carried = append(carried, j.MessageIDs...)
	}
	slices.Sort(carried)
	if !slices.Equal(slices.Compact(carried), []string{"late", "on-time"}) {
		t.Errorf("handed over %v, want both members", got)
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
