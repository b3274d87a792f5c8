package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"herald/alert"
	"herald/kernel"
	"herald/models"
	"herald/recall"
)

// Sweeper keeps MySQL and Redis in step: it returns messages whose worker died to failed,
// and re-enqueues due messages whose task Redis no longer has, or holds as active with
// no worker on it. It makes Redis disposable.
//
// The second case follows a Redis failover: a worker's "done" or "retry" for a task that
// reached the old master after the replica was promoted is lost, and the new master
// keeps the task active until Asynq's lease recovery, one to two minutes later. A due
// message that is pending or failed in the database is not being worked on, so its
// active task is stale: the sweeper enqueues the message again under a second task id.
// Should the stale task run after all, the claim in the database sends it only once.
// The second task may go stale in turn; the next sweep then adds a third.
//
// NewSweeper builds it.
type Sweeper struct {
	store     *models.Store
	enqueuer  *Enqueuer
	log       *slog.Logger
	inspector *asynq.Inspector
	grace     time.Duration
	remind    func(context.Context) error
	callbacks *Callbacks
	fallBack  func(context.Context) error

	mu sync.Mutex
	// unclaimed: active send tasks whose message was due and unclaimed when a pass of
	// this sweeper saw them, task id → first seen.
	unclaimed map[string]time.Time
}

// SweeperConfig is what a Sweeper is built from. Store, Enqueuer and Inspector are
// required; zero values of the rest take the defaults their comments give.
type SweeperConfig struct {
	Store    *models.Store
	Enqueuer *Enqueuer
	// Inspector lets Recover find send tasks that a dead worker took from the queue but
	// had not claimed yet (their messages are still pending, so no lease of Herald's
	// expires): Asynq marks them orphaned when its own 30 s lease runs out, and its
	// recoverer would retry them up to a minute and a half after that. The full sweep
	// uses it to find due messages whose task a Redis failover left active.
	Inspector *asynq.Inspector
	// Log defaults to slog.Default().
	Log *slog.Logger
	// Grace is how long past due a message must be before the sweeper looks at it, so it
	// does not race a task that is about to run anyway (the process uses
	// DefaultSweepGrace). Zero looks at every due message; the claim still sends it once.
	Grace time.Duration
	// Remind, when set, sends the duty reminder if it is due; each sweep (once a
	// minute) asks.
	Remind func(context.Context) error
	// Callbacks, when set, has its due events delivered: each recovery pass asks.
	Callbacks *Callbacks
	// FallBack, when set, makes the next messages of chains whose message stopped;
	// each recovery pass calls it, which catches a worker that died after a stop.
	FallBack func(context.Context) error
}

// DefaultSweepGrace is how long past due the process's sweeper leaves a message to its
// own task.
const DefaultSweepGrace = 30 * time.Second

// NewSweeper returns a sweeper built from cfg, or an error naming the required part cfg
// lacks.
func NewSweeper(cfg SweeperConfig) (*Sweeper, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("tasks: a sweeper needs a store")
	case cfg.Enqueuer == nil:
		return nil, errors.New("tasks: a sweeper needs an enqueuer")
	case cfg.Inspector == nil:
		return nil, errors.New("tasks: a sweeper needs an inspector: without one it cannot find tasks a dead worker left")
	}
	s := &Sweeper{store: cfg.Store, enqueuer: cfg.Enqueuer, inspector: cfg.Inspector, log: cfg.Log, grace: max(cfg.Grace, 0),
		remind: cfg.Remind, callbacks: cfg.Callbacks, fallBack: cfg.FallBack}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s, nil
}

// stuckAfter is how long an active send task may hold a due message without claiming
// it before Recover takes its worker for dead. A live worker claims within milliseconds
// of taking a task; the claim, not this guess, is what keeps a message from going twice.
const stuckAfter = 2 * time.Second

// sweepPage is how many due messages one query returns.
const sweepPage = 2000

// ProcessTask implements asynq.Handler for TypeSweep and TypeRecover.
func (s *Sweeper) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var err error
	if t.Type() == TypeRecover {
		_, err = s.Recover(ctx)
	} else {
		_, err = s.Sweep(ctx)
	}
	return err
}

// Recover returns messages whose claim expired (their worker died) to failed and
// enqueues them again at once under task ids of their own, so they do not wait for
// Asynq to notice the dead worker. It reports how many tasks it enqueued.
func (s *Sweeper) Recover(ctx context.Context) (int, error) {
	sends, err := s.activeSends()
	return s.recover(ctx, sends, err)
}

// recover is Recover with the active send tasks already listed (listErr, if they could
// not all be read).
func (s *Sweeper) recover(ctx context.Context, sends []activeSend, listErr error) (int, error) {
	released, err := s.store.ReleaseExpiredLeases(ctx)
	if len(released) > 0 {
		s.log.Warn("sweeper: released expired claims; their attempts are recorded as unknown", "count", len(released))
	}
	now := kernel.Now()
	// The messages of one claim were claimed together, usually a chunk: they go back
	// together, under a task named after the expired claim.
	type claim struct {
		token    string
		priority models.Priority
	}
	var order []claim
	ids := map[claim][]string{}
	for _, r := range released {
		c := claim{r.ExpiredToken, r.Priority}
		if ids[c] == nil {
			order = append(order, c)
		}
		ids[c] = append(ids[c], r.ID)
	}
	var jobs []Job
	for _, c := range order {
		jobs = append(jobs, Chunk(ids[c], c.priority, now, func(first string, _ int) string { return SendTaskID(first, c.token) })...)
	}
	stuck, serr := s.stuckSends(ctx, sends, now)
	jobs = append(jobs, stuck...)
	// Released rows are failed and due: if enqueueing fails, the full sweep finds them.
	n, qerr := s.enqueue(ctx, jobs)
	cerr := s.callbacks.KickDue(ctx)
	var ferr error
	if s.fallBack != nil {
		ferr = s.fallBack(ctx)
	}
	return n, errors.Join(err, listErr, serr, qerr, cerr, ferr)
}

// enqueue records which task carries each job's messages, then enqueues the jobs. A job
// whose messages could not be marked is left for the next pass.
func (s *Sweeper) enqueue(ctx context.Context, jobs []Job) (int, error) {
	var errs []error
	marked := jobs[:0:0]
	for _, j := range jobs {
		if err := s.store.SetTaskID(ctx, j.TaskID, j.MessageIDs); err != nil {
			errs = append(errs, err)
			continue
		}
		marked = append(marked, j)
	}
	n, err := s.enqueuer.Enqueue(ctx, marked)
	return n, errors.Join(append(errs, err)...)
}

// stuckSends returns replacement jobs for the messages of send tasks that a dead worker
// took from the queue but never claimed: the task is active in Redis, and the messages
// it carries stay due and unclaimed, either in a task Asynq already reports orphaned (it
// waits 30 s for that) or over passes at least stuckAfter apart. A replacement is named
// after the task it replaces, so the task is replaced once however it is found.
func (s *Sweeper) stuckSends(ctx context.Context, active []activeSend, now time.Time) ([]Job, error) {
	var ids []string
	for _, t := range active {
		ids = append(ids, t.messageIDs...)
	}
	due := make(map[string]models.DueMessage)
	for chunk := range slices.Chunk(ids, stuckPage) {
		d, err := s.store.UnclaimedDue(ctx, chunk, now)
		if err != nil {
			return nil, err
		}
		for _, m := range d {
			due[m.ID] = m
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]time.Time)
	var jobs []Job
	orphaned, stuck := 0, 0
	for _, t := range active {
		// Only the messages the task still carries: one that failed inside a chunk has
		// moved to a task of its own.
		var waiting []string
		priority := models.Priority(t.queue)
		for _, id := range t.messageIDs {
			if m, ok := due[id]; ok && carries(t.taskID, m) {
				waiting = append(waiting, id)
				priority = m.Priority
			}
		}
		if len(waiting) == 0 {
			continue
		}
		first, ok := s.unclaimed[t.taskID]
		if !ok {
			first = now
		}
		seen[t.taskID] = first
		if !t.orphaned && now.Sub(first) < stuckAfter {
			continue
		}
		if t.orphaned {
			orphaned += len(waiting)
		} else {
			stuck += len(waiting)
		}
		replaces := replacing("orphan", t.taskID)
		jobs = append(jobs, Chunk(waiting, priority, now, func(first string, _ int) string { return SendTaskID(first, replaces) })...)
	}
	s.unclaimed = seen
	if len(jobs) > 0 {
		s.log.Warn("sweeper: re-enqueued messages of send tasks a dead worker took but never claimed",
			"orphaned", orphaned, "stuck", stuck)
	}
	return jobs, nil
}

// carries reports whether the message waits for the task: rows written before messages
// recorded their task were carried by a task named after the message.
func carries(taskID string, m models.DueMessage) bool {
	if m.TaskID == "" {
		return taskID == m.ID
	}
	return taskID == m.TaskID
}

// stuckPage is how many message ids one UnclaimedDue query asks about.
const stuckPage = 500

// Sweep runs one full pass: Recover, then re-enqueue due messages whose task Redis lost,
// or holds as active though nobody works on the message, then housekeeping. It reports
// how many tasks it enqueued.
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	sends, listErr := s.activeSends()
	if listErr != nil {
		s.log.Warn("sweeper: stale tasks of some queues wait for the next sweep", "error", listErr)
	}
	total, err := s.recover(ctx, sends, nil)
	if err != nil {
		return total, err
	}
	dueBy := kernel.Now().Add(-s.grace)
	// Replacements get this sweep's mark: one of an earlier sweep may be lost too.
	replaces := "sweep-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	var after models.DueCursor
	lostCount, staleCount := 0, 0
	for {
		due, err := s.store.DueMessages(ctx, dueBy, after, sweepPage)
		if err != nil {
			return total, err
		}
		lost, stale := s.lost(due)
		lostCount, staleCount = lostCount+len(lost), staleCount+stale
		var jobs []Job
		byPriority := map[models.Priority][]string{}
		for _, m := range lost {
			byPriority[m.Priority] = append(byPriority[m.Priority], m.ID)
		}
		now := kernel.Now()
		for _, p := range slices.Sorted(maps.Keys(byPriority)) {
			jobs = append(jobs, Chunk(byPriority[p], p, now, func(first string, _ int) string { return SendTaskID(first, replaces) })...)
		}
		n, err := s.enqueue(ctx, jobs)
		total += n
		if err != nil {
			return total, err
		}
		if len(due) < sweepPage {
			break
		}
		last := due[len(due)-1]
		after = models.DueCursor{At: last.NextAttemptAt, ID: last.ID}
	}
	if lostCount > 0 {
		s.log.Warn("sweeper: re-enqueued messages whose task was missing or stale", "count", lostCount, "stale", staleCount)
	}
	s.housekeeping(ctx)
	if s.remind != nil {
		if err := s.remind(ctx); err != nil {
			s.log.Warn("sweeper: duty reminder", "error", err)
		}
	}
	return total, nil
}

// Reschedule enqueues every waiting (pending or failed) message whose task Redis does not
// keep again, due or not, under tasks named for this pass: those due later go back to
// the schedule, the others to their queues. A forwarder calls it when it finds the
// schedule lost (Redis emptied), so that scheduled messages still go out on time rather
// than a sweep after they fall due. The mark is also missing on a Redis where no worker
// ran yet, with every task the intake enqueued still there: those messages are left to
// their tasks, not written again and sent to a second task that would claim nothing. A
// message whose task is forwarded from the schedule to its queue between the two reads
// has two tasks; the claim sends it once. It reports how many tasks it enqueued or
// scheduled.
func (s *Sweeper) Reschedule(ctx context.Context) (int, error) {
	replaces := "reschedule-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	// Every waiting message: none is due later than this.
	everything := kernel.Now().AddDate(100, 0, 0)
	var after models.DueCursor
	total := 0
	for {
		page, err := s.store.DueMessages(ctx, everything, after, sweepPage)
		if err != nil {
			return total, err
		}
		waiting := s.unkept(ctx, page)
		// Messages due together with one priority travel together, as intake sent them.
		type group struct {
			at       int64 // µs: times of one instant may differ in location
			priority models.Priority
		}
		var order []group
		ids := map[group][]string{}
		due := map[group]time.Time{}
		for _, m := range waiting {
			g := group{m.NextAttemptAt.UnixMicro(), m.Priority}
			if ids[g] == nil {
				order = append(order, g)
				due[g] = m.NextAttemptAt
			}
			ids[g] = append(ids[g], m.ID)
		}
		var jobs []Job
		for _, g := range order {
			jobs = append(jobs, Chunk(ids[g], g.priority, due[g], func(first string, _ int) string { return SendTaskID(first, replaces) })...)
		}
		n, err := s.enqueue(ctx, jobs)
		total += n
		if err != nil {
			return total, err
		}
		if len(page) < sweepPage {
			return total, nil
		}
		last := page[len(page)-1]
		after = models.DueCursor{At: last.NextAttemptAt, ID: last.ID}
	}
}

// unkept returns the waiting messages whose task neither the schedule nor Asynq holds
// (keeps), asking Redis once per task. A task Redis cannot be asked about counts as
// missing: a second task costs a claim that claims nothing, a missing one a message
// left waiting.
func (s *Sweeper) unkept(ctx context.Context, waiting []models.DueMessage) []models.DueMessage {
	var out []models.DueMessage
	for i, verdict := range judgeTasks(waiting, func(queue, id string) string {
		if s.keeps(ctx, queue, id) {
			return ""
		}
		return "lost"
	}) {
		if verdict != "" {
			out = append(out, waiting[i])
		}
	}
	return out
}

// keeps reports whether Redis holds a task that will run: in the schedule, or in its
// queue in any state but archived or completed. The schedule is read first: a job the
// forwarder moves meanwhile is then found in its queue.
func (s *Sweeper) keeps(ctx context.Context, queue, id string) bool {
	if _, ok, err := s.enqueuer.ScheduledAt(ctx, queue, id); err != nil || ok {
		return ok
	}
	info, err := s.inspector.GetTaskInfo(queue, id)
	if err != nil {
		return false
	}
	return info.State != asynq.TaskStateArchived && info.State != asynq.TaskStateCompleted
}

// lost returns the due messages whose task Redis does not have (flushed, failed over,
// archived, or never enqueued because Redis was down), or has as active though the
// message has been due past the grace and nobody holds it: a task a failover left
// stale. It asks Redis once per task, and counts the stale ones. A task Redis cannot be
// asked about carries on until the next sweep.
func (s *Sweeper) lost(due []models.DueMessage) (lost []models.DueMessage, stale int) {
	verdicts := judgeTasks(due, func(queue, id string) string {
		info, err := s.inspector.GetTaskInfo(queue, id)
		switch {
		case errors.Is(err, asynq.ErrTaskNotFound), errors.Is(err, asynq.ErrQueueNotFound):
			return "lost"
		case err != nil:
			s.log.Warn("sweeper: cannot read a task; its messages wait for the next sweep", "task_id", id, "error", err)
		case info.State == asynq.TaskStateActive:
			return "stale"
		case info.State == asynq.TaskStateArchived, info.State == asynq.TaskStateCompleted:
			return "lost"
		}
		return ""
	})
	for i, verdict := range verdicts {
		if verdict != "" {
			lost = append(lost, due[i])
		}
		if verdict == "stale" {
			stale++
		}
	}
	return lost, stale
}

// judgeTasks returns, for each message, the verdict judge gives the task it waits for
// (its queue and task id; the message id on rows older than task ids), asking judge once
// per task: the messages of a chunk share one.
func judgeTasks(ms []models.DueMessage, judge func(queue, id string) string) []string {
	type task struct{ queue, id string }
	seen := map[task]string{}
	out := make([]string, len(ms))
	for i, m := range ms {
		t := task{QueueFor(m.Priority), m.TaskID}
		if t.id == "" {
			t.id = m.ID
		}
		verdict, ok := seen[t]
		if !ok {
			verdict = judge(t.queue, t.id)
			seen[t] = verdict
		}
		out[i] = verdict
	}
	return out
}

// activePage is how many active tasks one read returns.
const activePage = 1000

// activeSend is a send task Redis holds as active.
type activeSend struct {
	messageIDs    []string
	taskID, queue string
	// orphaned: its worker stopped extending Asynq's lease on it.
	orphaned bool
}

// activeSends lists the send tasks Redis holds as active in every queue. A queue that
// cannot be read is skipped and reported: its tasks wait for the next pass.
func (s *Sweeper) activeSends() ([]activeSend, error) {
	var out []activeSend
	var errs []error
	for queue := range MessageQueues {
		for page := 1; ; page++ {
			list, err := s.inspector.ListActiveTasks(queue, asynq.PageSize(activePage), asynq.Page(page))
			if errors.Is(err, asynq.ErrQueueNotFound) {
				break
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("tasks: list active tasks of %s: %w", queue, err))
				break
			}
			for _, t := range list {
				if t.Type != TypeSendMessage {
					continue
				}
				if p, err := parseSendPayload(t.Payload); err == nil {
					out = append(out, activeSend{messageIDs: p.IDs(), taskID: t.ID, queue: queue, orphaned: t.IsOrphaned})
				}
			}
			if len(list) < activePage {
				break
			}
		}
	}
	return out, errors.Join(errs...)
}

// housekeeping prunes rows that only matter for a while: expired sessions, idempotency
// keys past their 24 hours and old throttle windows; and it rejects batches that waited
// for approval longer than models.ApprovalWait, and expires batch recalls that waited
// past their expiry. Failures are logged, not returned:
// they must not hold up the sweep.
func (s *Sweeper) housekeeping(ctx context.Context) {
	if err := s.store.Access().DeleteExpiredSessions(ctx); err != nil {
		s.log.Warn("sweeper: prune sessions", "error", err)
	}
	if _, err := s.store.Intake().DeleteExpiredIdempotencyKeys(ctx); err != nil {
		s.log.Warn("sweeper: prune idempotency keys", "error", err)
	}
	if err := s.store.DB().DeleteThrottleWindowsBefore(ctx, kernel.Now().Add(-24*time.Hour)); err != nil {
		s.log.Warn("sweeper: prune throttle windows", "error", err)
	}
	now := kernel.Now()
	expired, err := s.store.Intake().ExpireApprovals(ctx, now.Add(-models.ApprovalWait), now, alert.EndExpiredBatch)
	if err != nil {
		s.log.Warn("sweeper: expire approvals", "error", err)
	}
	for _, id := range expired {
		s.log.Info("sweeper: batch not approved in time; its messages are cancelled", "batch", id, "reason", models.ApprovalExpired)
	}
	lapsed, err := recall.Of(s.store).ExpireRecallRequests(ctx, now)
	if err != nil {
		s.log.Warn("sweeper: expire recall requests", "error", err)
	}
	for _, r := range lapsed {
		s.log.Info("sweeper: batch recall not approved before its recall window passed; nothing was recalled", "batch", r.BatchID)
	}
}
