package tasks

import (
	"context"
	"sync"
	"time"

	"herald/channels"
	"herald/models"
)

// Grouped sends: a platform that takes one content to many people in one call
// (channels.GroupSender, DingTalk) gets a chunk's messages that share their content in
// as few calls as its limits allow. Each message is still claimed with the chunk,
// admitted by the limiter on its own (one recipient at a time), and finished with its
// own outcome by the same compare-and-set as a message sent alone.

// groupSender returns the adapter of a chunk's account when it sends in groups; nil
// sends the chunk's messages one by one (a chunk's messages share their account).
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

// contentKey is what the messages of one call share.
type contentKey struct {
	accountID                 int64
	msgType, subject, content string
}

// groupByContent splits messages into groups that share account and content, of at
// most max messages each, in the order they came.
func groupByContent(ms []*models.Message, max int) [][]*models.Message {
	var groups [][]*models.Message
	open := map[contentKey]int{} // the group still taking messages, by content
	for _, m := range ms {
		k := contentKey{m.AccountID, m.MsgType, m.Subject, m.Content}
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

// sendGrouped delivers a chunk's messages through a GroupSender, group by group.
func (s *Sender) sendGrouped(ctx context.Context, gs channels.GroupSender, held []*models.Message) {
	for _, g := range groupByContent(held, gs.MaxGroup()) {
		s.deliverGroup(ctx, g)
	}
}

// deliverGroup admits a group's messages one by one and sends those admitted together.
// A call leaves once its first admission is a quarter of the limiter's margin old, or
// before the limiter makes the worker wait: an admission is good for a call made at
// once, and a call that waited on later admissions would reach the platform late,
// bunched with the calls admitted after it.
func (s *Sender) deliverGroup(ctx context.Context, ms []*models.Message) {
	var (
		ready      []*models.Message
		acct       *models.Account
		gs         channels.GroupSender
		firstAdmit time.Time
	)
	flush := func() {
		if len(ready) > 0 {
			s.callGroup(ctx, acct, gs, ready)
			ready = nil
		}
	}
	maxAge := s.limiter.Margin / 4
	for _, m := range ms {
		// A group's call is checked by its admissions' age here (maxAge), not at its
		// first byte: the admission of each message stays counted.
		a, sender, adm, o, ok := s.prepare(ctx, m, flush)
		if !ok {
			s.finishInChunk(ctx, m, o)
			continue
		}
		g, isGroup := sender.(channels.GroupSender)
		if !isGroup {
			// The account was edited to another platform meanwhile.
			flush()
			o, _ := s.call(ctx, m, a, sender, adm)
			s.finishInChunk(ctx, m, o)
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
// batch of finishes.
func (s *Sender) callGroup(ctx context.Context, acct *models.Account, gs channels.GroupSender, ms []*models.Message) {
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
		wg.Go(func() { s.finishInChunk(ctx, m, o) })
	}
	wg.Wait()
}
