package tasks

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"herald/channels"
	"herald/models"
	"herald/sending"
)

// Grouped sends: a platform that takes one content to many people in one call
// (channels.GroupSender: DingTalk, WeCom) gets a chunk's messages that share their content in
// as few calls as its limits allow. Each message is still claimed with the chunk,
// admitted by the limiter on its own (one recipient at a time), and finished with its
// own outcome by the same compare-and-set as a message sent alone. The chunk's messages
// that must wait (the limiter's capacity, the platform's flow control, a failed call)
// go back to the queue together (requeue), so that they are sent in groups again
// rather than on a task, and in a call, per person.

// groupSender returns the adapter of an account's messages when it sends in groups; nil
// sends them one by one.
func (s *Sender) groupSender(ctx context.Context, held []*models.Message) channels.GroupSender {
	if len(held) < 2 {
		return nil
	}
	acct, err := s.accounts.ByID(ctx, held[0].AccountID)
	if err != nil {
		return nil
	}
	sender, err := s.channels.Sender(acct.Channel())
	if err != nil {
		return nil
	}
	gs, _ := sender.(channels.GroupSender)
	return gs
}

// contentKey is what the messages of one call share. A post to a chat group goes in a
// call of its own (post is its id): its address is a chat, not a person. So does a
// notice of an alert: its buttons name it (a WeCom card's task id is the message's id).
type contentKey struct {
	accountID                       int64
	msgType, subject, content, post string
}

// groupByContent splits messages into groups that share account and content, of at
// most max messages each, in the order they came.
func groupByContent(ms []*models.Message, max int) [][]*models.Message {
	var groups [][]*models.Message
	open := map[contentKey]int{} // the group still taking messages, by content
	for _, m := range ms {
		k := contentKey{accountID: m.AccountID, msgType: m.MsgType, subject: m.Subject, content: m.Content}
		if m.ChatGroupID != nil || m.AlertID != nil {
			k.post = m.ID
		}
		i, ok := open[k]
		if !ok || len(groups[i]) >= max {
			i = len(groups)
			groups = append(groups, nil)
			open[k] = i
		}
		groups[i] = append(groups[i], m)
	}
	return groups
}

// sendGrouped delivers a chunk's messages through a GroupSender, group by group; those
// that must wait go back to the queue together.
func (s *Sender) sendGrouped(ctx context.Context, gs channels.GroupSender, held []*models.Message) {
	var later waiting
	for _, g := range groupByContent(held, gs.MaxGroup()) {
		s.deliverGroup(ctx, g, &later)
	}
	s.requeue(ctx, later)
}

// waiting are a chunk's messages that must wait, with their outcomes.
type waiting struct {
	ms []*models.Message
	os []models.Outcome
}

// finish records o for m, or, when m must wait, keeps it for requeue.
func (w *waiting) finish(ctx context.Context, s *Sender, m *models.Message, o models.Outcome) {
	if mustWait(o) {
		w.ms, w.os = append(w.ms, m), append(w.os, o)
		return
	}
	s.finishInChunk(ctx, m, o)
}

// regroupSpread is how far apart the due times of messages put back on one task may
// be: each is due no earlier than its outcome said, the whole task at its latest.
const regroupSpread = time.Second

// requeue records the outcomes of messages that must wait and enqueues them on tasks
// of up to ChunkSize messages of one priority whose due times lie within
// regroupSpread: each task is due when its latest message is, and its messages are
// recorded due then, so that none waits inside the task on a later one while another's
// admission ages. A message alone waits on a task of its own, as one that waited inside
// a chunk sent one by one does (finishInChunk).
func (s *Sender) requeue(ctx context.Context, w waiting) {
	order := make([]int, len(w.ms))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		if c := cmp.Compare(w.ms[i].Priority.Rank(), w.ms[j].Priority.Rank()); c != 0 {
			return c
		}
		return w.os[i].NextAttemptAt.Compare(*w.os[j].NextAttemptAt)
	})
	for len(order) > 0 {
		first := order[0]
		n := 1
		for n < len(order) && n < ChunkSize && w.ms[order[n]].Priority == w.ms[first].Priority &&
			w.os[order[n]].NextAttemptAt.Sub(*w.os[first].NextAttemptAt) <= regroupSpread {
			n++
		}
		s.requeueTask(ctx, w, order[:n])
		order = order[n:]
	}
}

// requeueTask records the outcomes of the messages w holds at idx, due together, and
// enqueues one task carrying those recorded.
func (s *Sender) requeueTask(ctx context.Context, w waiting, idx []int) {
	first := w.ms[idx[0]]
	if len(idx) == 1 {
		s.finishInChunk(ctx, first, w.os[idx[0]])
		return
	}
	due := *w.os[idx[len(idx)-1]].NextAttemptAt
	// Named after its first message and the claim that put it back: unique, as each
	// claim puts a message back once.
	job := Job{TaskID: SendTaskID(first.ID, replacing("regroup", first.ClaimToken)), Priority: first.Priority, ProcessAt: due}
	recorded := make([]bool, len(idx))
	var wg sync.WaitGroup
	for k, i := range idx {
		m, o := w.ms[i], w.os[i]
		o.NextAttemptAt, o.TaskID = &due, job.TaskID
		// Side by side, so that the outcomes join one batch of finishes.
		wg.Go(func() { recorded[k] = s.record(m, o) == nil })
	}
	wg.Wait()
	for k, i := range idx {
		if recorded[k] {
			job.MessageIDs = append(job.MessageIDs, w.ms[i].ID)
		}
	}
	if len(job.MessageIDs) == 0 {
		return
	}
	// Enqueued after the rows say so; should Redis refuse it, the sweeper finds the task
	// missing and enqueues the messages again.
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := s.enqueuer.Enqueue(ectx, []Job{job}); err != nil {
		s.log.Warn("enqueue the task of a chunk's waiting messages; the sweeper will", "task_id", job.TaskID,
			"messages", len(job.MessageIDs), "error", err)
	}
}

// deliverGroup admits a group's messages one by one and sends those admitted together.
// A call leaves once its first admission is a quarter of the limiter's margin old, or
// before the limiter makes the worker wait: an admission is good for a call made at
// once, and a call that waited on later admissions would reach the platform late,
// bunched with the calls admitted after it.
// Messages that must wait are left in later.
func (s *Sender) deliverGroup(ctx context.Context, ms []*models.Message, later *waiting) {
	var (
		ready      []*models.Message
		acct       *sending.Account
		gs         channels.GroupSender
		firstAdmit time.Time
	)
	flush := func() {
		if len(ready) > 0 {
			s.callGroup(ctx, acct, gs, ready, later)
			ready = nil
		}
	}
	maxAge := s.limiter.Margin / 4
	for _, m := range ms {
		// A group's call is checked by its admissions' age here (maxAge), not at its
		// first byte: the admission of each message stays counted.
		a, sender, adm, o, ok := s.prepare(ctx, m, flush)
		if !ok {
			later.finish(ctx, s, m, o)
			continue
		}
		g, isGroup := sender.(channels.GroupSender)
		if !isGroup {
			// The account was edited to another platform meanwhile.
			flush()
			o, _ := s.call(ctx, m, a, sender, adm)
			later.finish(ctx, s, m, o)
			continue
		}
		if len(ready) > 0 && (g != gs || len(ready) >= g.MaxGroup()) {
			flush() // the adapter was rebuilt (the account edited), or the call is full
		}
		if len(ready) == 0 {
			firstAdmit = time.Now()
		}
		acct, gs = a, g
		ready = append(ready, m)
		if time.Since(firstAdmit) >= maxAge {
			flush()
		}
	}
	flush()
}

// callGroup makes one call for admitted messages and finishes each with its own
// outcome; the outcomes are recorded side by side, so the call's messages join one
// batch of finishes. Those that must wait are left in later.
func (s *Sender) callGroup(ctx context.Context, acct *sending.Account, gs channels.GroupSender, ms []*models.Message, later *waiting) {
	batch := make([]channels.Message, len(ms))
	for i, m := range ms {
		batch[i] = channelMessage(m)
	}
	callCtx, cancel := context.WithTimeout(ctx, s.callTimeout)
	started := time.Now()
	results := gs.SendGroup(callCtx, batch)
	took := time.Since(started)
	cancel()
	// The account's health is recorded once for the call, not once per person.
	health := *acct
	var wg sync.WaitGroup
	for i, m := range ms {
		err := results[i].Err
		o := s.outcome(m, &health, results[i].Receipt, err, started, took)
		switch {
		case err == nil:
			health.Healthy = true
		case channels.Classify(err).Class == channels.Auth:
			health.Healthy = false
		}
		if mustWait(o) {
			later.finish(ctx, s, m, o)
			continue
		}
		wg.Go(func() { s.finishInChunk(ctx, m, o) })
	}
	wg.Wait()
}
