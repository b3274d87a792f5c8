package inhibit

import (
	"context"
	"sync"
	"time"

	"herald/delivery"
)

// rulesTTL is how long a process trusts the rules it read and compiled: a change made in
// another process applies within it; one made through the process's own Referee at once
// (RuleCache.forget).
const rulesTTL = time.Second

// RuleCache keeps the inhibition rules compiled for rulesTTL, so that an event arriving
// through an integration does not read and compile them again: in a storm that is every
// event. A process shares one among its Referees (NewService).
type RuleCache struct {
	mu    sync.Mutex
	read  time.Time
	rules []compiledRule
}

// NewRuleCache returns an empty cache.
func NewRuleCache() *RuleCache { return &RuleCache{} }

// compiled returns the rules, by name, with their matchers compiled; a rule whose
// matchers Go no longer takes is left out (validated when saved, it matches nothing).
func (c *RuleCache) compiled(ctx context.Context, s *Rulebook) ([]compiledRule, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.read.IsZero() && time.Since(c.read) < rulesTTL {
		return c.rules, nil
	}
	rules, err := s.Rules(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]compiledRule, 0, len(rules))
	for i := range rules {
		target, err := delivery.CompileMatchers(rules[i].Target)
		if err != nil {
			continue
		}
		source, err := delivery.CompileMatchers(rules[i].Source)
		if err != nil {
			continue
		}
		out = append(out, compiledRule{&rules[i], source, target})
	}
	c.rules, c.read = out, time.Now()
	return out, nil
}

// forget makes the next read go to the database: the rules changed.
func (c *RuleCache) forget() {
	c.mu.Lock()
	c.read = time.Time{}
	c.mu.Unlock()
}
