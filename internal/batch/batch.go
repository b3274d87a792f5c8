// Package batch runs calls from many goroutines together, so that the database sees one
// statement and one commit for many of them.
package batch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Batcher runs calls from many goroutines together. A call that finds no batch running
// runs at once, alone; the calls that arrive while batches run go together in the next
// one (up to max), so the database sees one statement and one commit for many messages.
//
// How soon a batch starts beside running ones is the Grouping: by default at once, up to
// runners batches, which keeps each call's wait shortest. With a Grouping, calls wait
// for a running batch to end and go together in the next, and another batch starts
// beside it only once Eager calls wait or the oldest has waited Linger: fewer, larger
// transactions when calls come steadily, and a slow batch still does not hold the next
// ones back for long. With Gather, a call that finds no batch running waits that long
// for others to join it too, when calls come that often: the next one is likely within
// the wait.
type Batcher[In, Out any] struct {
	runners, max int
	grouping     Grouping
	run          func(context.Context, []In) []Out
	reqs         chan batchReq[In, Out]
	// taken counts the calls the scheduler has taken in.
	taken atomic.Int64

	mu     sync.RWMutex
	closed bool
}

// Grouping says when a batch starts while others run (see Batcher).
type Grouping struct {
	// Eager is how many waiting calls start a batch beside running ones at once.
	Eager int
	// Linger is how long the oldest waiting call waits for running batches to end
	// before a batch starts beside them.
	Linger time.Duration
	// Gather is how long a call that finds no batch running waits for others to join
	// it, when it came less than Gather after the call before it; a call after a quiet
	// spell runs at once. Zero: never.
	Gather time.Duration
}

// Commits is how Herald groups its hot writes into shared transactions (the intake's
// batches, the worker's finishes): while one runs, the calls that arrive wait for its
// commit and go together in the next one, unless 16 wait or one has waited 5 ms; then
// another starts beside it. With none running, a call that came within 2 ms of the one
// before waits up to 2 ms for company. Measured in BenchmarkIntake and BenchmarkPipeline
// (docs/benchmarks.md): at 1,000 single-recipient requests a second the intake's
// grouping took 29 % off MariaDB's CPU per request and its gathering another 28 %, for
// 2 ms at the median; for the worker's finishes of lone messages at 2,000 a second,
// created→sent p99 fell from a median of 63.5 ms to 52.0 ms over five runs each.
var Commits = Grouping{Eager: 16, Linger: 5 * time.Millisecond, Gather: 2 * time.Millisecond}

type batchReq[In, Out any] struct {
	in  In
	out chan Out
	at  time.Time
	// company: the call came less than Gather after the one before it.
	company bool
}

// batchTimeout bounds one batch's database work.
const batchTimeout = 15 * time.Second

// New returns a batcher that runs up to runners batches at once, each of up to max calls,
// through run, which returns one result per input, in order. A batch starts as soon as
// fewer than runners run.
func New[In, Out any](runners, most int, run func(context.Context, []In) []Out) *Batcher[In, Out] {
	return NewGrouping(runners, most, Grouping{Eager: 1}, run)
}

// NewGrouping is New with a batch started beside running ones only as g says.
func NewGrouping[In, Out any](runners, most int, g Grouping, run func(context.Context, []In) []Out) *Batcher[In, Out] {
	g.Eager = min(max(g.Eager, 1), most)
	b := &Batcher[In, Out]{runners: runners, max: most, grouping: g, run: run, reqs: make(chan batchReq[In, Out], runners*most)}
	go b.schedule()
	return b
}

// schedule gathers the waiting calls and starts batches of them as the Grouping allows,
// until the batcher is closed and every call queued before has started.
func (b *Batcher[In, Out]) schedule() {
	var (
		queue   []batchReq[In, Out]
		running int
		ended   = make(chan struct{}, b.runners)
		linger  *time.Timer
		expired <-chan time.Time
		reqs    = b.reqs // nil once closed and drained into queue
		last    time.Time
	)
	for {
		for len(queue) > 0 && running < b.runners && (reqs == nil || b.due(queue, running)) {
			n := min(len(queue), b.max)
			go b.start(queue[:n:n], ended) // capped: appends to the rest never reach it
			queue = queue[n:]
			running++
		}
		if reqs == nil && len(queue) == 0 {
			return
		}
		// Wake when the oldest waiting call has waited long enough.
		expired = nil
		if len(queue) > 0 && running < b.runners {
			wait := b.patience(running) - time.Since(queue[0].at)
			if linger == nil {
				linger = time.NewTimer(wait)
			} else {
				linger.Reset(wait)
			}
			expired = linger.C
		}
		select {
		case r, ok := <-reqs:
			// Take every call already waiting, so that the next batch holds them all.
			// Only this goroutine receives: a call counted in len(reqs) is there to take.
			for ok {
				r.company = !last.IsZero() && r.at.Sub(last) < b.grouping.Gather
				last = r.at
				queue = append(queue, r)
				b.taken.Add(1)
				if len(reqs) == 0 {
					break
				}
				r, ok = <-reqs
			}
			if !ok {
				reqs = nil
			}
		case <-ended:
			running--
		case <-expired:
		}
	}
}

// due reports whether the waiting calls may start a batch while running others run.
func (b *Batcher[In, Out]) due(queue []batchReq[In, Out], running int) bool {
	if running == 0 && !queue[0].company {
		return true
	}
	return len(queue) >= b.grouping.Eager || time.Since(queue[0].at) >= b.patience(running)
}

// patience is how long the oldest waiting call waits before a batch starts without
// Eager calls: Gather when nothing runs, Linger beside running batches.
func (b *Batcher[In, Out]) patience(running int) time.Duration {
	if running == 0 {
		return b.grouping.Gather
	}
	return b.grouping.Linger
}

// start runs one batch and hands each call its result.
func (b *Batcher[In, Out]) start(reqs []batchReq[In, Out], ended chan<- struct{}) {
	defer func() { ended <- struct{}{} }()
	ins := make([]In, len(reqs))
	for i, r := range reqs {
		ins[i] = r.in
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	outs := b.run(ctx, ins)
	cancel()
	for i, r := range reqs {
		r.out <- outs[i]
	}
}

// Close ends the batcher once the calls already queued have started. A call after it
// runs alone: a task Asynq gave up waiting for at shutdown may still finish.
func (b *Batcher[In, Out]) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed = true
		close(b.reqs)
	}
}

// Do runs one call as part of a batch and waits for its result.
func (b *Batcher[In, Out]) Do(in In) Out {
	out := make(chan Out, 1)
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
		defer cancel()
		return b.run(ctx, []In{in})[0]
	}
	b.reqs <- batchReq[In, Out]{in: in, out: out, at: time.Now()}
	b.mu.RUnlock()
	return <-out
}
