// Package batch runs calls from many goroutines together, so that the database sees one
// statement and one commit for many of them.
package batch

import (
	"context"
	"sync"
	"time"
)

// Batcher runs calls from many goroutines together. Each runner takes every request
// waiting at that moment (up to max) and runs them as one batch: with no load a call
// runs at once, alone; under load, the requests that queued while the previous batch ran
// go together, so the database sees one statement and one commit for many messages.
type Batcher[In, Out any] struct {
	max  int
	run  func(context.Context, []In) []Out
	reqs chan batchReq[In, Out]

	mu     sync.RWMutex
	closed bool
}

type batchReq[In, Out any] struct {
	in  In
	out chan Out
}

// batchTimeout bounds one batch's database work.
const batchTimeout = 15 * time.Second

// New returns a batcher with runners goroutines, each running up to max calls at once
// through run, which returns one result per input, in order.
func New[In, Out any](runners, max int, run func(context.Context, []In) []Out) *Batcher[In, Out] {
	b := &Batcher[In, Out]{max: max, run: run, reqs: make(chan batchReq[In, Out], runners*max)}
	for range runners {
		go b.loop()
	}
	return b
}

func (b *Batcher[In, Out]) loop() {
	ins := make([]In, 0, b.max)
	waiting := make([]chan Out, 0, b.max)
	for r := range b.reqs {
		ins, waiting = append(ins[:0], r.in), append(waiting[:0], r.out)
	gather:
		for len(ins) < b.max {
			select {
			case r := <-b.reqs:
				ins, waiting = append(ins, r.in), append(waiting, r.out)
			default:
				break gather
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
		outs := b.run(ctx, ins)
		cancel()
		for i, out := range waiting {
			out <- outs[i]
		}
	}
}

// Close ends the runners once the requests already queued have run. A call after it
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
	b.reqs <- batchReq[In, Out]{in: in, out: out}
	b.mu.RUnlock()
	return <-out
}
