package dispatch

import (
	"context"
	"errors"
	"herald/audit"
	"herald/kernel"
	"herald/models"
	"herald/silence"
	"herald/tasks"
	"slices"
	"strconv"
	"time"
)

// silenceSweep is how often the silence pass looks for held messages to send on when
// no silence has just ended: a message held by a silence that ended a moment before the
// hold was recorded, or left by a pass that stopped halfway, goes on within it.
const silenceSweep = 15 * time.Second

// RunSilencePass ends silences and sends on what they held, every interval until ctx
// ends. Each worker runs it; every move is a compare-and-set, so the passes of several
// workers, or of a worker restarted halfway, never end a silence or release a message
// twice.
func (d *Dispatcher) RunSilencePass(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var swept time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ended, err := d.Silences().EndSilences(ctx)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("dispatch: end silences", "error", err)
		}
		if ended == 0 && time.Since(swept) < silenceSweep {
			continue
		}
		swept = time.Now()
		if _, _, err := d.ReleaseHeld(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("dispatch: release held messages", "error", err)
		}
	}
}

// releasePage is how many held messages one transaction sends on.
const releasePage = 500

// ReleaseHeld sends on every held message whose silences have all ended: pending
// again, carried by new tasks enqueued in order of priority and then age, or cancelled.
// It reports how many it released and cancelled.
func (d *Dispatcher) ReleaseHeld(ctx context.Context) (released, cancelled int, err error) {
	for {
		free, err := silence.Of(d.store).FreeHeldMessages(ctx, d.now(), releasePage)
		if err != nil || len(free) == 0 {
			return released, cancelled, err
		}
		r, c, err := d.releasePage(ctx, free)
		released, cancelled = released+r, cancelled+c
		if err != nil || r+c == 0 {
			// Nothing moved: another worker is sending these on.
			return released, cancelled, err
		}
	}
}

// releasePage sends on one page of free held messages, in one audited transaction, and
// enqueues their tasks once it has committed.
func (d *Dispatcher) releasePage(ctx context.Context, free []silence.FreeHeld) (released, cancelled int, err error) {
	now := d.now()
	// The page's own mark in its task ids: the rows a release moved are those carrying
	// its task, whatever another worker did with the same page at the same moment.
	mark := "release-" + kernel.NewToken()[:12]
	var cancel []string
	var releases []silence.Release
	var jobs []tasks.Job
	type group struct {
		priority models.Priority
		account  int64
	}
	var order []group
	due := map[group][]string{}
	for _, m := range free {
		switch {
		case m.Cancel:
			cancel = append(cancel, m.ID)
		case m.SendAt.After(now): // scheduled for later than the silence
			j := tasks.Single(m.ID, m.Priority, m.SendAt, mark)
			releases, jobs = append(releases, silence.Release{TaskID: j.TaskID, IDs: j.MessageIDs, DueAt: m.SendAt}), append(jobs, j)
		default:
			// A chunk's messages share their account (tasks.Sender.chunkWidth).
			g := group{m.Priority, m.AccountID}
			if due[g] == nil {
				order = append(order, g)
			}
			due[g] = append(due[g], m.ID)
		}
	}
	for _, g := range order {
		for _, j := range tasks.Chunk(due[g], g.priority, now, func(first string, _ int) string { return tasks.SendTaskID(first, mark) }) {
			releases, jobs = append(releases, silence.Release{TaskID: j.TaskID, IDs: j.MessageIDs, DueAt: now}), append(jobs, j)
		}
	}
	// Free messages come by priority, then age: the jobs keep that order, high first.
	slices.SortStableFunc(jobs, func(a, b tasks.Job) int { return priorityOrder(a.Priority) - priorityOrder(b.Priority) })
	err = d.change(ctx, audit.System("silences"), func(tx *models.Store, ch *audit.Change) error {
		moved, n, err := silence.Of(tx).ReleaseHeld(ctx, releases, cancel, now)
		if err != nil {
			return err
		}
		released, cancelled = 0, n
		byTask := map[string][]string{}
		for i, r := range releases {
			byTask[r.TaskID] = moved[i]
			released += len(moved[i])
		}
		if released+cancelled == 0 {
			return errNothingMoved
		}
		ch.Audit("silence.release", "silence", "", audit.Params{"released": strconv.Itoa(released), "cancelled": strconv.Itoa(cancelled)})
		ch.After(func() {
			for _, j := range jobs {
				if j.MessageIDs = byTask[j.TaskID]; len(j.MessageIDs) > 0 {
					// One at a time, in order: the queue then hands them out in it.
					d.enqueue(ctx, []tasks.Job{j})
				}
			}
		})
		return nil
	})
	if errors.Is(err, errNothingMoved) {
		return 0, 0, nil
	}
	return released, cancelled, err
}

// errNothingMoved rolls back a release pass that found every message of its page sent
// on by another worker: nothing to audit.
var errNothingMoved = errors.New("dispatch: another worker released the page")

// priorityOrder ranks priorities, high first.
func priorityOrder(p models.Priority) int {
	return slices.Index(models.Priorities, p)
}
