package dispatch

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"herald/audit"
	"herald/kernel"
	"herald/models"
)

// CreateRotation saves a new rotation, audited as done by by. A validation failure is a
// *kernel.FieldError and writes nothing.
func (d *Dispatcher) CreateRotation(ctx context.Context, by audit.Actor, spec models.RotationSpec) (models.RotationSpec, error) {
	var saved models.RotationSpec
	err := d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		r, err := tx.CreateRotation(ctx, spec)
		if err != nil {
			return err
		}
		if saved, err = rotationSpec(ctx, tx, *r); err != nil {
			return err
		}
		ch.Audit("duty.rotation.create", "rotation", r.Name, rotationParams(saved))
		return nil
	})
	return saved, err
}

// ErrRotationInUse refuses deleting or renaming a rotation that escalation policies
// name as a target: their steps would find nobody. It is made With the rotation's Name
// and the Policies that name it, which its message lists.
var ErrRotationInUse = kernel.Declare(kernel.DomainError{Kind: kernel.KindConflict, Code: "rotation_in_use", Key: "rotation.in_use",
	Text: "rotation in use"})

// checkRotationUnused refuses (ErrRotationInUse) taking the name of rotation away
// from the policies that name it, read in tx.
func checkRotationUnused(ctx context.Context, tx *models.Store, rotation string) error {
	policies, err := tx.Policies(ctx)
	if err != nil {
		return err
	}
	var users []string
	for _, p := range policies {
		if policyNamesRotation(&p, rotation) {
			users = append(users, p.Name)
		}
	}
	if len(users) > 0 {
		names := strings.Join(users, ", ")
		return fmt.Errorf("dispatch: rotation %s is used by escalation policies %s: %w", rotation, names,
			ErrRotationInUse.With("Name", rotation, "Policies", names))
	}
	return nil
}

// policyNamesRotation reports whether a step of p targets rotation (its turn or the
// next in turn).
func policyNamesRotation(p *models.EscalationPolicy, rotation string) bool {
	for _, s := range p.Steps {
		for _, t := range s.Targets {
			if kind, name := parseTarget(t); kind == targetRotation && name == rotation {
				return true
			}
		}
	}
	return false
}

// UpdateRotation replaces the rotation called name (which may rename it), audited with
// what it was and what it is now. kernel.ErrNotFound: no such rotation;
// ErrRotationInUse: a rename of a rotation escalation policies name.
func (d *Dispatcher) UpdateRotation(ctx context.Context, by audit.Actor, name string, spec models.RotationSpec) (models.RotationSpec, error) {
	var saved models.RotationSpec
	err := d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		before, after, err := tx.UpdateRotation(ctx, name, spec)
		if err != nil {
			return err
		}
		if after.Name != before.Name {
			if err := checkRotationUnused(ctx, tx, before.Name); err != nil {
				return err
			}
		}
		specs, err := tx.RotationSpecs(ctx, []models.Rotation{*before, *after})
		if err != nil {
			return err
		}
		saved = specs[1]
		p := rotationParams(saved)
		old := rotationParams(specs[0])
		p["before"] = old["members"] + "; " + old["start"] + "; " + old["turn_days"] + "; " + old["covers"]
		p["new_name"] = saved.Name
		ch.Audit("duty.rotation.update", "rotation", before.Name, p)
		return nil
	})
	return saved, err
}

// DeleteRotation removes a rotation, audited. kernel.ErrNotFound: no such rotation;
// ErrRotationInUse: escalation policies name it (change them first).
func (d *Dispatcher) DeleteRotation(ctx context.Context, by audit.Actor, name string) error {
	return d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := tx.DeleteRotation(ctx, name); err != nil {
			return err
		}
		if err := checkRotationUnused(ctx, tx, name); err != nil {
			return err
		}
		ch.Audit("duty.rotation.delete", "rotation", name, audit.Params{"name": name})
		return nil
	})
}

// rotationSpec is a stored rotation as callers see it (members by external id).
func rotationSpec(ctx context.Context, st *models.Store, r models.Rotation) (models.RotationSpec, error) {
	specs, err := st.RotationSpecs(ctx, []models.Rotation{r})
	if err != nil {
		return models.RotationSpec{}, err
	}
	return specs[0], nil
}

// rotationParams names a rotation for its audit sentence: its name, turns, start, length
// of turn and the days it covers (weekdays 1=Mon..7=Sun).
func rotationParams(s models.RotationSpec) audit.Params {
	covers := s.Covers
	if s.Covers == models.CoversWeekdays {
		days := make([]string, len(s.Weekdays))
		for i, d := range s.Weekdays {
			days[i] = strconv.Itoa(d)
		}
		covers += " " + strings.Join(days, ",")
	}
	return audit.Params{"name": s.Name, "members": strings.Join(s.Members, ", "), "start": s.Start,
		"turn_days": strconv.Itoa(s.TurnDays), "covers": covers}
}
