package tasks

import (
	"context"
	"strconv"
	"sync"
	"time"

	"herald/delivery"
	"herald/models"
)

// A silence holds the messages it matches as their worker comes to claim them: the
// moment they would have been sent. A message held is no longer claimable, so its task
// ends; the pass that ends the silence (dispatch) makes it pending again under a task of
// its own, or cancels it.

// silenceTTL is how long a worker trusts the silences it read: a silence created or
// edited in another process holds messages within it.
const silenceTTL = time.Second

// holdEarly is how far ahead of its due time a message is looked at: as far as the
// claim takes it early.
const holdEarly = time.Second

// liveSilence is a silence that has not ended, ready to test messages with.
type liveSilence struct {
	rule       *delivery.SilenceRule
	start, end time.Time
}

// silenceRules caches the live silences for silenceTTL.
type silenceRules struct {
	mu   sync.Mutex
	read time.Time
	list []liveSilence
}

// active returns the silences active at now.
func (c *silenceRules) active(ctx context.Context, store *models.Store, now time.Time) ([]*delivery.SilenceRule, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read.IsZero() || time.Since(c.read) >= silenceTTL {
		list, err := store.LiveSilences(ctx)
		if err != nil {
			return nil, err
		}
		c.list = c.list[:0]
		for _, sil := range list {
			rule, err := delivery.NewSilenceRule(sil.ID, sil.Matchers)
			if err != nil {
				continue // validated when saved; an expression Go no longer takes holds nothing
			}
			c.list = append(c.list, liveSilence{rule: rule, start: sil.StartsAt, end: sil.End()})
		}
		c.read = time.Now()
	}
	var out []*delivery.SilenceRule
	for _, l := range c.list {
		if !now.Before(l.start) && now.Before(l.end) {
			out = append(out, l.rule)
		}
	}
	return out, nil
}

// holdSilenced holds the due messages among ids that an active silence matches, before
// they are claimed: held, with no attempt used and nothing sent. With no silence active
// it costs nothing but a look at the cache.
func (s *Sender) holdSilenced(ctx context.Context, ids []string) error {
	now := models.Now()
	rules, err := s.silences.active(ctx, s.store, now)
	if err != nil || len(rules) == 0 {
		return err
	}
	dueBy := now.Add(holdEarly)
	subjects, err := s.store.SilenceSubjects(ctx, ids, dueBy)
	if err != nil {
		return err
	}
	holds := map[string][]int64{}
	for id, subj := range subjects {
		for _, r := range rules {
			if r.Matches(subj) {
				holds[id] = append(holds[id], r.ID)
			}
		}
	}
	held, keys, err := s.store.HoldMessages(ctx, holds, dueBy)
	if err != nil {
		return err
	}
	for id, silences := range held {
		s.log.Info("held by silence", "message_id", id, "silences", silences)
		for _, sid := range silences {
			s.metrics.held(sid)
		}
	}
	for _, k := range keys {
		s.callbacks.Kick(k)
	}
	return nil
}

func (m *Metrics) held(silenceID int64) {
	if m != nil {
		m.heldBySilence.WithLabelValues(strconv.FormatInt(silenceID, 10)).Inc()
	}
}
