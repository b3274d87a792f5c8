package tasks

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"herald/delivery"
	"herald/silence"
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

// liveSilence is a silence that has not ended, ready to test messages with: it holds
// in its windows (one from its start to its end, or a recurring silence's next ones).
type liveSilence struct {
	rule      *delivery.SilenceRule
	windows   []delivery.Window
	recurring bool
}

// activeSilence is a silence active at a moment: its rule, and for a recurring silence
// the end of its window under way (zero otherwise).
type activeSilence struct {
	rule  *delivery.SilenceRule
	until time.Time
}

// compiledSilence is a silence's rule as compiled at one version of its matchers.
type compiledSilence struct {
	version int
	rule    *delivery.SilenceRule
}

// silenceLoader reads the live silences with their windows from now
// (silence.Holds.LiveWindows).
type silenceLoader func(ctx context.Context, now time.Time) ([]silence.Live, error)

// silenceRules caches the live silences for silenceTTL. A reload reads the database and
// compiles only the silences whose version it has not compiled yet, without holding the
// lock: while one caller reloads, the others test with the list read a moment before (or,
// before the first read, wait for it), so a slow read delays no send but the reloader's.
type silenceRules struct {
	mu   sync.Mutex
	read time.Time
	// loading is closed when the reload under way ends; nil when none is.
	loading chan struct{}
	list    []liveSilence
	// compiled is each live silence's rule by id. Only the caller that reloads touches it,
	// one at a time, outside the lock.
	compiled map[int64]compiledSilence
}

// errSilencesUnread answers the callers that waited for a first read that failed.
var errSilencesUnread = errors.New("tasks: the live silences could not be read")

// active returns the silences active at now.
func (c *silenceRules) active(ctx context.Context, load silenceLoader, now time.Time) ([]activeSilence, error) {
	c.mu.Lock()
	if c.read.IsZero() || time.Since(c.read) >= silenceTTL {
		switch done := c.loading; {
		case done == nil:
			if err := c.reload(ctx, load, now); err != nil {
				c.mu.Unlock()
				return nil, err
			}
		case c.read.IsZero():
			// The first read is under way: there is nothing to test with before it.
			c.mu.Unlock()
			select {
			case <-done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			c.mu.Lock()
			if c.read.IsZero() {
				c.mu.Unlock()
				return nil, errSilencesUnread
			}
		}
	}
	var out []activeSilence
	for _, l := range c.list {
		for _, w := range l.windows {
			if !now.Before(w.Start) && now.Before(w.End) {
				a := activeSilence{rule: l.rule}
				if l.recurring {
					a.until = w.End
				}
				out = append(out, a)
				break
			}
		}
	}
	c.mu.Unlock()
	return out, nil
}

// reload reads and compiles the live silences with their windows from now, called and
// returning with c.mu held but releasing it meanwhile.
func (c *silenceRules) reload(ctx context.Context, load silenceLoader, now time.Time) error {
	done := make(chan struct{})
	c.loading = done
	c.mu.Unlock()
	list, next, err := c.compile(ctx, load, now)
	c.mu.Lock()
	c.loading = nil
	close(done)
	if err != nil {
		return err
	}
	c.list, c.compiled, c.read = list, next, time.Now()
	return nil
}

// compile reads the live silences and returns them ready, with each one's compiled
// rule: the one compiled before while its version is the same, a new one otherwise.
// Silences no longer live drop out.
func (c *silenceRules) compile(ctx context.Context, load silenceLoader, now time.Time) ([]liveSilence, map[int64]compiledSilence, error) {
	sils, err := load(ctx, now)
	if err != nil {
		return nil, nil, err
	}
	list := make([]liveSilence, 0, len(sils))
	next := make(map[int64]compiledSilence, len(sils))
	for _, sil := range sils {
		cs, ok := c.compiled[sil.ID]
		if !ok || cs.version != sil.Version {
			rule, err := delivery.NewSilenceRule(sil.ID, sil.Matchers)
			if err != nil {
				continue // validated when saved; an expression Go no longer takes holds nothing
			}
			if sil.HoldsKeyID != nil {
				rule.HoldOnly(*sil.HoldsKeyID)
			}
			cs = compiledSilence{sil.Version, rule}
		}
		next[sil.ID] = cs
		list = append(list, liveSilence{rule: cs.rule, windows: sil.Windows, recurring: sil.Schedule != nil})
	}
	return list, next, nil
}

// holdSilenced holds the due messages among ids that an active silence matches, before
// they are claimed: held, with no attempt used and nothing sent. With no silence active
// it costs nothing but a look at the cache. Which silences are active is judged by
// SenderConfig.SilenceNow.
func (s *Sender) holdSilenced(ctx context.Context, ids []string) error {
	now := s.silenceNow().UTC()
	active, err := s.silences.active(ctx, silence.Of(s.store).LiveWindows, now)
	if err != nil || len(active) == 0 {
		return err
	}
	dueBy := now.Add(holdEarly)
	subjects, err := silence.Of(s.store).SilenceSubjects(ctx, ids, dueBy)
	if err != nil {
		return err
	}
	holds, until := map[string][]int64{}, map[int64]time.Time{}
	for id, subj := range subjects {
		for _, a := range active {
			if a.rule.Matches(subj) {
				holds[id] = append(holds[id], a.rule.ID)
				if !a.until.IsZero() {
					until[a.rule.ID] = a.until
				}
			}
		}
	}
	held, keys, err := silence.Of(s.store).HoldMessages(ctx, holds, until, dueBy)
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
