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

// grouper keeps the open groups of one dispatcher, one per priority.
type grouper struct {
	mu      sync.Mutex
	open    map[models.Priority]*group
	pending sync.WaitGroup // groups not yet enqueued
}

// group is the single-message intakes gathered into one task.
type group struct {
	enqueue func(context.Context, []tasks.Job)
	job     tasks.Job // MessageIDs: the members that committed
	joined  int       // members so far
	// writing counts members whose transaction has not ended yet.
	writing int
	// gathering is true until the window ends.
	gathering bool
}

// join adds a message due at at to the open group of its priority, opening one that
// enqueue will hand to Asynq if needed, and returns the group; its task id is the
// group's job.TaskID. The caller must call done once its transaction has ended.
func (g *grouper) join(enqueue func(context.Context, []tasks.Job), messageID string, priority models.Priority, at time.Time) *group {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open == nil {
		g.open = map[models.Priority]*group{}
	}
	gr := g.open[priority]
	if gr == nil {
		gr = &group{enqueue: enqueue, job: tasks.Job{TaskID: tasks.SendTaskID(messageID, "group"), Priority: priority, ProcessAt: at}, gathering: true}
		g.open[priority] = gr
		g.pending.Add(1)
		time.AfterFunc(groupWindow, func() { g.close(gr) })
	}
	gr.joined++
	gr.writing++
	if gr.joined == tasks.ChunkSize {
		delete(g.open, priority) // full: the next message opens another
	}
	return gr
}

// close ends the group's window; it is enqueued once no member is writing. Closing
// twice is harmless.
func (g *grouper) close(gr *group) {
	g.mu.Lock()
	if !gr.gathering {
		g.mu.Unlock()
		return
	}
	gr.gathering = false
	if g.open[gr.job.Priority] == gr {
		delete(g.open, gr.job.Priority)
	}
	ready := gr.writing == 0
	g.mu.Unlock()
	if ready {
		go g.flush(gr)
	}
}

// done records that a member's transaction ended, committed or not.
func (g *grouper) done(gr *group, messageID string, committed bool) {
	g.mu.Lock()
	if committed {
		gr.job.MessageIDs = append(gr.job.MessageIDs, messageID)
	}
	gr.writing--
	ready := !gr.gathering && gr.writing == 0
	g.mu.Unlock()
	if ready {
		go g.flush(gr)
	}
}

// flush enqueues the group's task with the members that committed.
func (g *grouper) flush(gr *group) {
	defer g.pending.Done()
	if len(gr.job.MessageIDs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	gr.enqueue(ctx, []tasks.Job{gr.job})
}

// wait closes the open groups and waits until every group is enqueued, or ctx ends.
func (g *grouper) wait(ctx context.Context) {
	g.mu.Lock()
	open := make([]*group, 0, len(g.open))
	for _, gr := range g.open {
		open = append(open, gr)
	}
	g.mu.Unlock()
	for _, gr := range open {
		g.close(gr)
	}
	done := make(chan struct{})
	go func() { g.pending.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
