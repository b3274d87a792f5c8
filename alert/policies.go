package alert

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"herald/audit"
	"herald/chatgroups"
	"herald/directory"
	"herald/kernel"
	"herald/models"
)

// Escalation policy limits.
const (
	MinStepWait     = 30 * time.Second
	MaxStepWait     = 24 * time.Hour
	MaxPolicyRepeat = 5
	maxPolicySteps  = 10
	maxStepTargets  = 20
)

// Target kinds of a policy step; anything else names a person by external id.
const (
	TargetOnDuty     = "on_duty"
	targetRotation   = "rotation:"
	targetDepartment = "department:"
	// TargetGroup names a chat group: the step posts to it, @-ing as the group says.
	TargetGroup  = "group:"
	backupSuffix = "+1"
)

// CreatePolicy saves a new escalation policy, audited. A validation failure is a
// *kernel.FieldError and writes nothing.
func (d *Service) CreatePolicy(ctx context.Context, by audit.Actor, p EscalationPolicy) (*EscalationPolicy, error) {
	if err := d.checkPolicy(ctx, &p); err != nil {
		return nil, err
	}
	err := d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := Of(tx).CreatePolicy(ctx, &p); err != nil {
			return err
		}
		ch.Audit("alert.policy.create", "escalation_policy", p.Name, policyParams(&p))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// UpdatePolicy replaces the policy called name (which may rename it), audited with what
// it was. Alerts already open keep the copy they opened with. kernel.ErrNotFound: no
// such policy.
func (d *Service) UpdatePolicy(ctx context.Context, by audit.Actor, name string, p EscalationPolicy) (*EscalationPolicy, error) {
	if err := d.checkPolicy(ctx, &p); err != nil {
		return nil, err
	}
	err := d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		before, err := Of(tx).UpdatePolicy(ctx, name, &p)
		if err != nil {
			return err
		}
		params := policyParams(&p)
		params["before"] = policyParams(before)["steps"]
		params["old_name"] = before.Name
		ch.Audit("alert.policy.update", "escalation_policy", before.Name, params)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// DeletePolicy removes a policy, audited. Alerts already open keep their copy.
// kernel.ErrNotFound: no such policy.
func (d *Service) DeletePolicy(ctx context.Context, by audit.Actor, name string) error {
	return d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := Of(tx).DeletePolicy(ctx, name); err != nil {
			return err
		}
		ch.Audit("alert.policy.delete", "escalation_policy", name, audit.Params{"name": name})
		return nil
	})
}

// policyParams names a policy for its audit sentence.
func policyParams(p *EscalationPolicy) audit.Params {
	steps := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		steps[i] = strings.Join(s.Targets, " ") + " / " + s.Wait
		if s.Via != "" {
			steps[i] += " / " + s.Via
		}
		if s.AdvanceOnNoAnswer {
			steps[i] += " / advance_on_no_answer"
		}
	}
	return audit.Params{"name": p.Name, "steps": strings.Join(steps, "; "), "repeat": strconv.Itoa(p.Repeat),
		"notify_on_ack": strconv.FormatBool(p.NotifyOnAck)}
}

// checkPolicy validates a policy field by field, naming the field of the first problem
// (steps[i].targets[j], steps[i].wait, repeat), and tidies its values.
func (d *Service) checkPolicy(ctx context.Context, p *EscalationPolicy) error {
	p.Name = strings.TrimSpace(p.Name)
	switch n := utf8.RuneCountInString(p.Name); {
	case n == 0:
		return kernel.Invalid("name", "alerts.invalid.name_required")
	case n > MaxPolicyName:
		return kernel.Invalid("name", "alerts.invalid.name_long", "Max", MaxPolicyName)
	case strings.ContainsAny(p.Name, "/?#%"):
		return kernel.Invalid("name", "alerts.invalid.name_chars")
	}
	if err := kernel.CheckText("name", p.Name, false); err != nil {
		return err
	}
	if len(p.Steps) == 0 || len(p.Steps) > maxPolicySteps {
		return kernel.Invalid("steps", "alerts.invalid.steps_count", "Max", maxPolicySteps)
	}
	for i := range p.Steps {
		if err := d.checkStep(ctx, i, &p.Steps[i]); err != nil {
			return err
		}
	}
	if p.Repeat < 0 || p.Repeat > MaxPolicyRepeat {
		return kernel.Invalid("repeat", "alerts.invalid.repeat", "Max", MaxPolicyRepeat)
	}
	return nil
}

// checkStep validates one step: its wait and each of its targets.
func (d *Service) checkStep(ctx context.Context, i int, s *PolicyStep) error {
	field := fmt.Sprintf("steps[%d]", i)
	s.Wait = strings.TrimSpace(s.Wait)
	w, err := time.ParseDuration(s.Wait)
	if err != nil || w < shortestWait(d.minStepWait) || w > MaxStepWait {
		return kernel.Invalid(field+".wait", "alerts.invalid.wait")
	}
	if len(s.Targets) == 0 || len(s.Targets) > maxStepTargets {
		return kernel.Invalid(field+".targets", "alerts.invalid.targets_count", "Max", maxStepTargets)
	}
	s.Via = strings.TrimSpace(s.Via)
	if err := d.checkVia(ctx, field, s); err != nil {
		return err
	}
	for j := range s.Targets {
		s.Targets[j] = strings.TrimSpace(s.Targets[j])
		if err := d.checkTarget(ctx, s.Targets[j]); err != nil {
			var fe *kernel.FieldError
			if errors.As(err, &fe) {
				fe.Field = fmt.Sprintf("%s.targets[%d]", field, j)
			}
			return err
		}
	}
	return nil
}

// checkTarget reports a target naming no rotation, department or person Herald knows.
func (d *Service) checkTarget(ctx context.Context, target string) error {
	kind, name := parseTarget(target)
	switch kind {
	case TargetOnDuty:
		return nil
	case targetRotation:
		if _, err := d.store.Duty().RotationByName(ctx, name); errors.Is(err, kernel.ErrNotFound) {
			return kernel.Invalid("target", "alerts.invalid.unknown_rotation", "Name", name)
		} else if err != nil {
			return err
		}
	case targetDepartment:
		people, err := d.store.Directory().ActiveRecipientsIn(ctx, []string{name}, nil, 1)
		if err != nil {
			return err
		}
		if len(people) == 0 {
			return kernel.Invalid("target", "alerts.invalid.unknown_department", "Name", name)
		}
	case TargetGroup:
		if _, err := chatgroups.NewStore(d.store.DB()).GroupByName(ctx, name); errors.Is(err, kernel.ErrNotFound) {
			return kernel.Invalid("target", "chatgroups.error.group_unknown", "Name", name)
		} else if err != nil {
			return err
		}
	default:
		if name == "" || len(name) > directory.MaxExternalID {
			return kernel.Invalid("target", "alerts.invalid.target_blank")
		}
		people, err := d.store.Directory().CachedRecipientsByExternalIDs(ctx, []string{name})
		if err != nil {
			return err
		}
		if len(people) == 0 {
			return kernel.Invalid("target", "alerts.invalid.unknown_person", "Name", name)
		}
	}
	return nil
}

// parseTarget splits a target into its kind (TargetOnDuty, targetRotation,
// targetDepartment, or "" for a person) and the name it carries; a rotation's backup
// keeps its "+1".
func parseTarget(t string) (kind, name string) {
	switch {
	case t == TargetOnDuty:
		return TargetOnDuty, ""
	case strings.HasPrefix(t, targetRotation):
		return targetRotation, strings.TrimSuffix(strings.TrimPrefix(t, targetRotation), backupSuffix)
	case strings.HasPrefix(t, targetDepartment):
		return targetDepartment, strings.TrimPrefix(t, targetDepartment)
	case strings.HasPrefix(t, TargetGroup):
		return TargetGroup, strings.TrimPrefix(t, TargetGroup)
	}
	return "", t
}

// Policies lists the escalation policies by name.
func (d *Service) Policies(ctx context.Context) ([]EscalationPolicy, error) {
	return Of(d.store).Policies(ctx)
}

// stepWait is a step's wait; policies are checked when saved, so a wait that no longer
// parses falls back to the shortest (shortestWait of the dispatcher's Config.StepWait).
func stepWait(s PolicyStep, shortest time.Duration) time.Duration {
	w, err := time.ParseDuration(s.Wait)
	if least := shortestWait(shortest); err != nil || w < least {
		return least
	}
	return w
}

// shortestWait is the shortest wait a step may have: MinStepWait, unless a test set
// Config.StepWait (given here as knob).
func shortestWait(knob time.Duration) time.Duration {
	if knob > 0 {
		return knob
	}
	return MinStepWait
}

// PolicyUsers is duty's RotationUsers: the escalation policies whose steps target a
// rotation.
type PolicyUsers struct{}

// PoliciesNaming names the escalation policies whose steps target rotation, read in tx.
func (PolicyUsers) PoliciesNaming(ctx context.Context, tx *kernel.DB, rotation string) ([]string, error) {
	policies, err := (&Ledger{k: tx}).Policies(ctx)
	if err != nil {
		return nil, err
	}
	var users []string
	for _, p := range policies {
		if policyNamesRotation(&p, rotation) {
			users = append(users, p.Name)
		}
	}
	return users, nil
}

// policyNamesRotation reports whether a step of p targets rotation (its turn or the
// next in turn).
func policyNamesRotation(p *EscalationPolicy, rotation string) bool {
	return slices.Contains(p.Rotations(), rotation)
}

// Rotations names the rotations p's steps target (their turn or the next in turn),
// each once, in the order the steps name them.
func (p *EscalationPolicy) Rotations() []string {
	var out []string
	for _, s := range p.Steps {
		for _, t := range s.Targets {
			if kind, name := parseTarget(t); kind == targetRotation && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}
