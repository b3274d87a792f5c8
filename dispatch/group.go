package dispatch

import (
	"context"
	"sync"
	"time"

	"herald/models"
	"herald/tasks"
)

// Single-message intakes that arrive within groupWindow of one another travel in one
// task, as a database commits concurrent transactions together: Asynq's cost per task
// is then paid once for the group instead of once per message, which is what lets
// distinct messages drain near the rate of a fan-out (BenchmarkPipeline). A message
// joins the open group of its priority before its row is written, so the row names its
// task from the start (task_id); the group's task is enqueued once the group is closed
// (full, or groupWindow after it opened) and each member's transaction has committed or
// rolled back. A message that rolled back is left out; if the process dies first, the
// committed rows are pending and the sweeper finds their task missing.
const groupWindow = 5 * time.Millisecond

// Single-message intakes scheduled for later group too: those of one priority falling
// due within one scheduleSlot share a task, due just before the earliest of them is;
// the worker waits for each message's own due time inside it, so none goes early.
// Asynq's cost is then paid once for up to tasks.ChunkSize scheduled messages rather
// than once each, which is what keeps scheduled sends on time at thousands a second
// (BenchmarkScheduledLateness). A scheduled group gathers until scheduleLead before its
// slot begins, and the schedule learns its members every scheduleFlushEvery as they
// commit (one pipeline for every group that changed), so a process that dies leaves at
// most that much of its intake to the sweeper. A message due sooner than the lead
// travels in a task of its own.
//
// The group's task is due scheduleHeadStart before its earliest member: by the time
// that member is due the worker has taken the task from its queue and claimed the
// group's messages (the claim accepts them up to a second early), work that costs tens
// of milliseconds on a busy machine and would otherwise all be lateness.
const (
	scheduleSlot       = 50 * time.Millisecond
	scheduleLead       = time.Second
	scheduleFlushEvery = 50 * time.Millisecond
	scheduleHeadStart  = 100 * time.Millisecond
)

// grouper keeps the open groups of one dispatcher: for messages due now one per
// priority, for scheduled messages one per priority and slot.
type grouper struct {
	mu      sync.Mutex
	open    map[groupKey]*group
	pending sync.WaitGroup // groups not yet enqueued

	// changed are the scheduled groups whose members the schedule has not all learnt;
	// flushing is set while a flush of them is due or running.
	changed  map[*group]bool
	flushing bool
}

// groupKey is what a group's members share: their priority and, when scheduled, the
// slot their due time falls in (zero for messages due now).
type groupKey struct {
	priority models.Priority
	slot     int64
}

// group is the single-message intakes gathered into one task.
type group struct {
	key     groupKey
	enqueue func(context.Context, []tasks.Job)
	job     tasks.Job // MessageIDs: the members that committed
	joined  int       // members so far
	// writing counts members whose transaction has not ended yet.
	writing int
	// gathering is true until the window ends or the group is full.
	gathering bool
	// handed: the group is enqueued for good (its pending count is done).
	handed bool
	// scheduled counts the members a scheduled group's task carries in the schedule.
	scheduledN int
}

func (gr *group) scheduled() bool { return gr.key.slot != 0 }

// lateFlush is how close to its task's due time a scheduled group stops changing that
// task: the forwarder may have taken it already.
const lateFlush = 200 * time.Millisecond

// nextJob is the job a flush writes for a scheduled group: the group's task with every
// committed member while it is not yet due; once it may have gone (a transaction that
// committed that late: a stalled database), a task of their own, due now, for the
// members committed since, whose rows name the group's task, so the sweeper would only
// find them half a minute late.
func (gr *group) nextJob(now time.Time) (tasks.Job, bool) {
	ids := gr.job.MessageIDs
	if len(ids) == gr.scheduledN {
		return tasks.Job{}, false
	}
	j := gr.job
	if now.Add(lateFlush).Before(gr.job.ProcessAt) {
		j.MessageIDs = append([]string(nil), ids...)
	} else {
		j.MessageIDs = append([]string(nil), ids[gr.scheduledN:]...)
		j.TaskID = tasks.SendTaskID(j.MessageIDs[0], "group-late")
	}
	gr.scheduledN = len(ids)
	return j, true
}

// join adds a message due now (at) to the open group of its priority, opening one that
// enqueue will hand to Asynq if needed, and returns the group; its task id is the
// group's job.TaskID. The caller must call done once its transaction has ended.
func (g *grouper) join(enqueue func(context.Context, []tasks.Job), messageID string, priority models.Priority, at time.Time) *group {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.joinLocked(enqueue, messageID, groupKey{priority: priority}, at, groupWindow)
}

// joinScheduled adds a message due at at, later, to the open group of its priority and
// slot, as join does (the group's task is due scheduleHeadStart before its earliest
// member); it returns nil when the message is due too soon to wait for
// company (scheduleLead): it then travels alone.
func (g *grouper) joinScheduled(enqueue func(context.Context, []tasks.Job), messageID string, priority models.Priority, at time.Time) *group {
	slot := at.UnixMilli() / scheduleSlot.Milliseconds()
	gatherFor := time.Until(time.UnixMilli(slot * scheduleSlot.Milliseconds()).Add(-scheduleLead))
	if gatherFor < groupWindow {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.joinLocked(enqueue, messageID, groupKey{priority: priority, slot: slot}, at.Add(-scheduleHeadStart), gatherFor)
}

func (g *grouper) joinLocked(enqueue func(context.Context, []tasks.Job), messageID string, key groupKey, at time.Time, gatherFor time.Duration) *group {
	if g.open == nil {
		g.open = map[groupKey]*group{}
	}
	gr := g.open[key]
	if gr == nil {
		gr = &group{key: key, enqueue: enqueue, gathering: true,
			job: tasks.Job{TaskID: tasks.SendTaskID(messageID, "group"), Priority: key.priority, ProcessAt: at}}
		g.open[key] = gr
		g.pending.Add(1)
		time.AfterFunc(gatherFor, func() { g.close(gr) })
	}
	if at.Before(gr.job.ProcessAt) {
		gr.job.ProcessAt = at
	}
	gr.joined++
	gr.writing++
	if gr.joined == tasks.ChunkSize {
		g.closeLocked(gr) // full: the next message opens another
	}
	return gr
}

// close ends the group's window; it is enqueued once no member is writing. Closing
// twice is harmless.
func (g *grouper) close(gr *group) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closeLocked(gr)
}

func (g *grouper) closeLocked(gr *group) {
	if !gr.gathering {
		return
	}
	gr.gathering = false
	if g.open[gr.key] == gr {
		delete(g.open, gr.key)
	}
	g.settledLocked(gr)
}

// done records that a member's transaction ended, committed or not.
func (g *grouper) done(gr *group, messageID string, committed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if committed {
		gr.job.MessageIDs = append(gr.job.MessageIDs, messageID)
		if gr.scheduled() {
			g.flushSoonLocked(gr)
		}
	}
	gr.writing--
	g.settledLocked(gr)
}

// settledLocked hands a group over for good once its window is over and no member is
// writing: a group due now is enqueued, a scheduled one flushed a last time.
func (g *grouper) settledLocked(gr *group) {
	if gr.gathering || gr.writing > 0 {
		return
	}
	if gr.scheduled() {
		g.flushSoonLocked(gr)
		return
	}
	gr.handed = true
	go g.enqueueGroup(gr)
}

// enqueueGroup enqueues a group due now with the members that committed.
func (g *grouper) enqueueGroup(gr *group) {
	defer g.pending.Done()
	if len(gr.job.MessageIDs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	gr.enqueue(ctx, []tasks.Job{gr.job})
}

// flushSoonLocked marks a scheduled group as changed and makes sure a flush is coming.
func (g *grouper) flushSoonLocked(gr *group) {
	if g.changed == nil {
		g.changed = map[*group]bool{}
	}
	g.changed[gr] = true
	if !g.flushing {
		g.flushing = true
		time.AfterFunc(scheduleFlushEvery, g.flushScheduled)
	}
}

// flushScheduled writes every changed scheduled group to the schedule, each under its
// task id with all its committed members so far and its earliest due time, in one
// call; groups that are settled are then handed over. One flush runs at a time, so a
// group's payload never goes back to an older one.
func (g *grouper) flushScheduled() {
	g.mu.Lock()
	var jobs []tasks.Job
	var settled []*group
	var enqueue func(context.Context, []tasks.Job)
	now := time.Now()
	for gr := range g.changed {
		if j, ok := gr.nextJob(now); ok {
			jobs = append(jobs, j)
			enqueue = gr.enqueue // a dispatcher's groups share one
		}
		if !gr.gathering && gr.writing == 0 && !gr.handed {
			gr.handed = true
			settled = append(settled, gr)
		}
	}
	clear(g.changed)
	g.mu.Unlock()

	if len(jobs) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		enqueue(ctx, jobs)
		cancel()
	}
	for range settled {
		g.pending.Done()
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.changed) > 0 {
		time.AfterFunc(scheduleFlushEvery, g.flushScheduled)
		return
	}
	g.flushing = false
}

// wait closes the open groups and waits until every group is enqueued, or ctx ends.
func (g *grouper) wait(ctx context.Context) {
	g.mu.Lock()
	for _, gr := range g.open {
		g.closeLocked(gr)
	}
	g.mu.Unlock()
	done := make(chan struct{})
	go func() { g.pending.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
