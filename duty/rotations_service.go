package duty

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"herald/audit"
	"herald/kernel"
)

// CreateRotation saves a new rotation, audited as done by by. A validation failure is a
// *kernel.FieldError and writes nothing.
func (d *Planner) CreateRotation(ctx context.Context, by audit.Actor, spec RotationSpec) (RotationSpec, error) {
	var saved RotationSpec
	err := d.change(ctx, by, func(tx *Schedule, ch *audit.Change) error {
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

// RotationUsers names the escalation policies whose steps target a rotation, read in
// the transaction of a rotation's change (tx): the policies are another domain's, and
// the duty service reaches them through this alone.
type RotationUsers interface {
	PoliciesNaming(ctx context.Context, tx *kernel.DB, rotation string) ([]string, error)
}

// checkRotationUnused refuses (ErrRotationInUse) taking the name of rotation away
// from the policies that name it, read in tx.
func (d *Planner) checkRotationUnused(ctx context.Context, tx *Schedule, rotation string) error {
	users, err := d.rotationUsers.PoliciesNaming(ctx, tx.k, rotation)
	if err != nil {
		return err
	}
	if len(users) > 0 {
		names := strings.Join(users, ", ")
		return fmt.Errorf("duty: rotation %s is used by escalation policies %s: %w", rotation, names,
			ErrRotationInUse.With("Name", rotation, "Policies", names))
	}
	return nil
}

// UpdateRotation replaces the rotation called name (which may rename it), audited with
// what it was and what it is now. kernel.ErrNotFound: no such rotation;
// ErrRotationInUse: a rename of a rotation escalation policies name.
func (d *Planner) UpdateRotation(ctx context.Context, by audit.Actor, name string, spec RotationSpec) (RotationSpec, error) {
	var saved RotationSpec
	err := d.change(ctx, by, func(tx *Schedule, ch *audit.Change) error {
		before, after, err := tx.UpdateRotation(ctx, name, spec)
		if err != nil {
			return err
		}
		if after.Name != before.Name {
			if err := d.checkRotationUnused(ctx, tx, before.Name); err != nil {
				return err
			}
		}
		specs, err := tx.RotationSpecs(ctx, []Rotation{*before, *after})
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
func (d *Planner) DeleteRotation(ctx context.Context, by audit.Actor, name string) error {
	return d.change(ctx, by, func(tx *Schedule, ch *audit.Change) error {
		if err := tx.DeleteRotation(ctx, name); err != nil {
			return err
		}
		if err := d.checkRotationUnused(ctx, tx, name); err != nil {
			return err
		}
		ch.Audit("duty.rotation.delete", "rotation", name, audit.Params{"name": name})
		return nil
	})
}

// rotationSpec is a stored rotation as callers see it (members by external id).
func rotationSpec(ctx context.Context, st *Schedule, r Rotation) (RotationSpec, error) {
	specs, err := st.RotationSpecs(ctx, []Rotation{r})
	if err != nil {
		return RotationSpec{}, err
	}
	return specs[0], nil
}

// rotationParams names a rotation for its audit sentence: its name, turns, start, length
// of turn and the days it covers (weekdays 1=Mon..7=Sun).
func rotationParams(s RotationSpec) audit.Params {
	covers := s.Covers
	if s.Covers == CoversWeekdays {
		days := make([]string, len(s.Weekdays))
		for i, d := range s.Weekdays {
			days[i] = strconv.Itoa(d)
		}
		covers += " " + strings.Join(days, ",")
	}
	return audit.Params{"name": s.Name, "members": strings.Join(s.Members, ", "), "start": s.Start,
		"turn_days": strconv.Itoa(s.TurnDays), "covers": covers}
}
