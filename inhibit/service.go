package inhibit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"herald/alert"
	"herald/audit"
	"herald/delivery"
	"herald/inbound"
	"herald/kernel"
	"herald/models"
)

// Escalator starts an alert's escalation once it is released (alert.Service).
type Escalator interface {
	// ScheduleStep has the step fired when it comes due.
	ScheduleStep(ctx context.Context, s alert.AlertStep)
	// FireAlertStep fires a step that is due.
	FireAlertStep(ctx context.Context, stepID int64, now time.Time) (bool, error)
}

// Referee makes the inhibition rules' changes, each validated, then written with its
// audit entry in one transaction (audit.Run); it decides what an alert opening is
// inhibited by, and releases the alerts whose sources have ended.
type Referee struct {
	store  *models.Store
	alerts Escalator
	// clock is the clock; nil means kernel.Now.
	clock func() time.Time
	log   *slog.Logger
	// rules are the compiled rules, shared by the process's Referees.
	rules *RuleCache
}

// NewService builds the inhibition service on store; alerts starts the escalation of a
// released alert; clock is the clock (nil: kernel.Now); log defaults to slog.Default();
// rules is the process's cache of compiled rules (nil: one of this Referee's own).
func NewService(store *models.Store, alerts Escalator, clock func() time.Time, log *slog.Logger, rules *RuleCache) *Referee {
	if log == nil {
		log = slog.Default()
	}
	if rules == nil {
		rules = NewRuleCache()
	}
	return &Referee{store: store, alerts: alerts, clock: clock, log: log, rules: rules}
}

// now is the service's clock, in UTC, to the microsecond the database keeps.
func (d *Referee) now() time.Time { return kernel.Clock(d.clock).Now().Truncate(time.Microsecond) }

// change runs fn with a store bound to one transaction, with the audit entries fn
// records (audit.Run).
func (d *Referee) change(ctx context.Context, by audit.Actor, fn func(tx *models.Store, ch *audit.Change) error) error {
	err := audit.RunOn(ctx, d.store.DB(), by, d.store.On, fn)
	d.rules.forget()
	return err
}

// Limits of a rule.
const (
	maxName     = 64
	maxMatchers = 20
	maxEqual    = 10
	// MaxRules is how many rules there may be: every alert opening tests them all.
	MaxRules = 100
)

// RuleInput is a rule as a person writes it.
type RuleInput struct {
	Name   string
	Source []delivery.Matcher
	Target []delivery.Matcher
	Equal  []string
}

// labelName is what a label's name may be.
var labelName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\-]*$`)

// checkMatchers checks one side of a rule (field source or target): at least one
// matcher, each as a route's are (inbound.CheckMatcher), the title on the target alone:
// it is known of the alert being opened, not stored with the open ones.
func checkMatchers(field string, ms []delivery.Matcher, title bool) error {
	if len(ms) == 0 {
		return kernel.Invalid(field, "inhibit.check.matchers_required")
	}
	if len(ms) > maxMatchers {
		return kernel.Invalid(field, "inhibit.check.too_many", "Max", maxMatchers)
	}
	for i := range ms {
		at := field + "[" + strconv.Itoa(i) + "]"
		if err := inbound.CheckMatcher(at, &ms[i]); err != nil {
			return err
		}
		if !title && ms[i].Name == inbound.MatchTitle {
			return kernel.Invalid(at+".name", "inhibit.check.title_on_target")
		}
		if err := kernel.CheckText(at+".value", ms[i].Value, false); err != nil {
			return err
		}
	}
	return nil
}

// sameMatchers reports whether two lists hold the same matchers, in any order.
func sameMatchers(a, b []delivery.Matcher) bool {
	key := func(m delivery.Matcher) string {
		return fmt.Sprintf("%s\x00%s\x00%t\x00%t", m.Name, m.Value, m.Regex, m.Negate)
	}
	ka, kb := make([]string, len(a)), make([]string, len(b))
	for i := range a {
		ka[i] = key(a[i])
	}
	for i := range b {
		kb[i] = key(b[i])
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(slices.Compact(ka), slices.Compact(kb))
}

// checkRule validates a rule as written; the error names its field.
func checkRule(in *RuleInput) error {
	in.Name = strings.TrimSpace(in.Name)
	if err := kernel.CheckText("name", in.Name, true); err != nil {
		return err
	}
	if in.Name == "" || utf8.RuneCountInString(in.Name) > maxName {
		return kernel.Invalid("name", "inhibit.check.name", "Max", maxName)
	}
	if err := checkMatchers("source", in.Source, false); err != nil {
		return err
	}
	if err := checkMatchers("target", in.Target, true); err != nil {
		return err
	}
	if sameMatchers(in.Source, in.Target) {
		return kernel.Invalid("target", "inhibit.check.self")
	}
	if len(in.Equal) == 0 {
		return kernel.Invalid("equal", "inhibit.check.equal_required")
	}
	if len(in.Equal) > maxEqual {
		return kernel.Invalid("equal", "inhibit.check.too_many_equal", "Max", maxEqual)
	}
	for i, l := range in.Equal {
		in.Equal[i] = strings.TrimPrefix(strings.TrimSpace(l), inbound.LabelPrefix)
		if !labelName.MatchString(in.Equal[i]) {
			return kernel.Invalid("equal["+strconv.Itoa(i)+"]", "inhibit.check.equal_label")
		}
	}
	return nil
}

// ruleParams are a rule's values for its audit entries.
func ruleParams(r *Rule) audit.Params {
	return audit.Params{"id": strconv.FormatInt(r.ID, 10), "name": r.Name, "source": matchersText(r.Source),
		"target": matchersText(r.Target), "equal": strings.Join(r.Equal, ", ")}
}

// matchersText writes matchers as name=value, name=~value, name!=value, name!~value.
func matchersText(ms []delivery.Matcher) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.String()
	}
	return strings.Join(out, ", ")
}

// Rules lists the rules by name.
func (d *Referee) Rules(ctx context.Context) ([]Rule, error) { return Of(d.store).Rules(ctx) }

// Rule returns one rule; kernel.ErrNotFound when there is none.
func (d *Referee) Rule(ctx context.Context, id int64) (*Rule, error) {
	return Of(d.store).RuleByID(ctx, id)
}

// CreateRule validates and saves a new rule, audited. Past MaxRules it is a
// *kernel.FieldError naming name.
func (d *Referee) CreateRule(ctx context.Context, by audit.Actor, in RuleInput) (*Rule, error) {
	if err := checkRule(&in); err != nil {
		return nil, err
	}
	r := &Rule{Name: in.Name, Source: in.Source, Target: in.Target, Equal: in.Equal}
	err := d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		list, err := Of(tx).Rules(ctx)
		if err != nil {
			return err
		}
		if len(list) >= MaxRules {
			return kernel.Invalid("name", "inhibit.check.too_many_rules", "Max", MaxRules)
		}
		if err := Of(tx).CreateRule(ctx, r); err != nil {
			return err
		}
		ch.Audit("inhibit.create", "inhibit_rule", strconv.FormatInt(r.ID, 10), ruleParams(r))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// UpdateRule replaces a rule with in, audited; kernel.ErrNotFound when it is gone.
// Alerts it inhibits stay so until their sources end.
func (d *Referee) UpdateRule(ctx context.Context, by audit.Actor, id int64, in RuleInput) (*Rule, error) {
	if err := checkRule(&in); err != nil {
		return nil, err
	}
	r, err := Of(d.store).RuleByID(ctx, id)
	if err != nil {
		return nil, err
	}
	r.Name, r.Source, r.Target, r.Equal = in.Name, in.Source, in.Target, in.Equal
	err = d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := Of(tx).UpdateRule(ctx, r); err != nil {
			return err
		}
		ch.Audit("inhibit.update", "inhibit_rule", strconv.FormatInt(r.ID, 10), ruleParams(r))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// DeleteRule removes a rule, audited; kernel.ErrNotFound when it is gone.
func (d *Referee) DeleteRule(ctx context.Context, by audit.Actor, id int64) error {
	r, err := Of(d.store).RuleByID(ctx, id)
	if err != nil {
		return err
	}
	return d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := Of(tx).DeleteRule(ctx, id); err != nil {
			return err
		}
		ch.Audit("inhibit.delete", "inhibit_rule", strconv.FormatInt(id, 10), ruleParams(r))
		return nil
	})
}

// compiledRule is a rule with its matchers ready.
type compiledRule struct {
	rule           *Rule
	source, target delivery.MatcherSet
}

// inhibitor finds what inhibits an alert of subject among the open alerts, the alert
// except left out: the first rule whose target subject matches and, under it, the
// oldest open alert its source matches with the same values of its equal labels.
func (d *Referee) inhibitor(ctx context.Context, subject delivery.Subject, except int64) (*inbound.Inhibited, error) {
	rules, err := d.rules.compiled(ctx, Of(d.store))
	if err != nil {
		return nil, err
	}
	var compiled []compiledRule
	for _, c := range rules {
		if c.target.Matches(subject) {
			compiled = append(compiled, c)
		}
	}
	if len(compiled) == 0 {
		return nil, nil
	}
	open, err := Of(d.store).OpenAlerts(ctx, except)
	if err != nil {
		return nil, err
	}
	for _, c := range compiled {
		for _, a := range open {
			src := inbound.AlertSubject(a.Source, a.Severity, "", a.Labels)
			if c.source.Matches(src) && equalLabels(c.rule.Equal, src, subject) {
				return &inbound.Inhibited{RuleID: c.rule.ID, RuleName: c.rule.Name, SourceAlertID: a.ID}, nil
			}
		}
	}
	return nil, nil
}

// equalLabels reports whether two subjects have the same value of each label named.
func equalLabels(labels []string, a, b delivery.Subject) bool {
	for _, l := range labels {
		if a[inbound.LabelPrefix+l] != b[inbound.LabelPrefix+l] {
			return false
		}
	}
	return true
}

// Inhibiting returns what inhibits an alert of subject being opened, nil when nothing
// does (inbound.Inhibitor).
func (d *Referee) Inhibiting(ctx context.Context, subject delivery.Subject) (*inbound.Inhibited, error) {
	return d.inhibitor(ctx, subject, 0)
}

// Record records, in tx, that the alert a is opened inhibited as in says, with its audit
// entry.
func Record(ctx context.Context, tx *models.Store, ch *audit.Change, a *alert.Alert, in *inbound.Inhibited) error {
	err := Of(tx).Record(ctx, &Inhibition{AlertID: a.ID, RuleID: in.RuleID, RuleName: in.RuleName, SourceAlertID: in.SourceAlertID,
		InhibitedAt: a.OpenedAt})
	if err != nil {
		return err
	}
	id := strconv.FormatInt(a.ID, 10)
	ch.Audit("alert.inhibit", "alert", id, audit.Params{"id": id, "source": strconv.FormatInt(in.SourceAlertID, 10), "rule": in.RuleName})
	return nil
}

// SourceEnded settles the inhibitions of the alert id, which has ended
// (inbound.Inhibitor).
func (d *Referee) SourceEnded(ctx context.Context, alertID int64) error {
	_, err := d.settle(ctx, alertID)
	return err
}

// Settle settles every inhibition whose source or own alert has ended, and reports how
// many it released; the inhibition pass runs it as a safety net behind SourceEnded,
// and for the sources resolved another way (the console, the API, an acknowledgment).
func (d *Referee) Settle(ctx context.Context) (int, error) { return d.settle(ctx, 0) }

// settle settles the inhibitions of the source sourceID (0: of every ended source): an
// alert that has ended itself is no longer inhibited; one that another open alert
// inhibits under a rule stays so, under that alert; the others are released, their
// escalation's first step due at once. Each move is a compare-and-set, so several
// workers settle each once.
func (d *Referee) settle(ctx context.Context, sourceID int64) (int, error) {
	list, err := Of(d.store).Settleable(ctx, sourceID)
	if err != nil {
		return 0, err
	}
	released := 0
	for _, in := range list {
		ok, err := d.settleOne(ctx, in)
		switch {
		case errors.Is(err, kernel.ErrStateChanged): // another worker settled it
		case err != nil:
			return released, err
		case ok:
			released++
		}
	}
	return released, nil
}

// settleOne settles one inhibition and reports whether it released its alert.
func (d *Referee) settleOne(ctx context.Context, in Inhibition) (bool, error) {
	a, err := alert.Of(d.store).AlertByID(ctx, in.AlertID)
	if err != nil {
		return false, err
	}
	now := d.now()
	id := strconv.FormatInt(a.ID, 10)
	by := audit.System("inhibition")
	if a.EndedAt != nil {
		return false, d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
			if err := Of(tx).Move(ctx, a.ID, StateEnded, now); err != nil {
				return err
			}
			ch.Audit("alert.inhibit_end", "alert", id, audit.Params{"id": id, "state": a.State})
			return nil
		})
	}
	next, err := d.inhibitor(ctx, inbound.AlertSubject(a.Source, a.Severity, "", a.Labels), a.ID)
	if err != nil {
		return false, err
	}
	if next != nil && next.SourceAlertID != in.SourceAlertID {
		return false, d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
			if err := Of(tx).Reassign(ctx, a.ID, in.SourceAlertID, next.SourceAlertID); err != nil {
				return err
			}
			ch.Audit("alert.inhibit", "alert", id, audit.Params{"id": id, "source": strconv.FormatInt(next.SourceAlertID, 10), "rule": next.RuleName})
			return nil
		})
	}
	var first *alert.AlertStep
	err = d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := Of(tx).Move(ctx, a.ID, StateReleased, now); err != nil {
			return err
		}
		if a.State == alert.AlertOpen {
			// Nobody heard of it while it was inhibited: its first step is due at once.
			first = &alert.AlertStep{AlertID: a.ID, N: 1, Round: 1, DueAt: now}
			if err := alert.Of(tx).AddAlertStep(ctx, first); err != nil {
				return err
			}
		}
		ch.Audit("alert.release", "alert", id, audit.Params{"id": id, "source": strconv.FormatInt(in.SourceAlertID, 10)})
		return nil
	})
	if err != nil {
		return false, err
	}
	if first != nil && d.alerts != nil {
		d.alerts.ScheduleStep(ctx, *first)
		if _, err := d.alerts.FireAlertStep(ctx, first.ID, now); err != nil {
			d.log.Warn("inhibit: first step of a released alert; the escalation poll will fire it", "alert", a.ID, "error", err)
		}
	}
	return true, nil
}
