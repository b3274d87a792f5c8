package models

import (
	"context"
	"strings"
)

// What an imported row does to what is stored: the imports' previews say it of each
// row before anything is written.
const (
	EffectCreate    = "create"
	EffectUpdate    = "update"
	EffectUnchanged = "unchanged"
)

// RecipientEffects compares people to import with those stored under the same external
// ids: one effect each.
func (s *Store) RecipientEffects(ctx context.Context, list []Recipient) ([]string, error) {
	ids := make([]string, len(list))
	for i, r := range list {
		ids[i] = strings.TrimSpace(r.ExternalID)
	}
	existing, err := s.RecipientsByExternalIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	stored := make(map[string]Recipient, len(existing))
	for _, r := range existing {
		stored[r.ExternalID] = r
	}
	out := make([]string, len(list))
	for i, r := range list {
		old, ok := stored[r.ExternalID]
		switch {
		case !ok:
			out[i] = EffectCreate
		default:
			r.ID, r.CreatedAt, r.UpdatedAt = old.ID, old.CreatedAt, old.UpdatedAt
			out[i] = EffectUpdate
			if r == old {
				out[i] = EffectUnchanged
			}
		}
	}
	return out, nil
}

// HolidayEffects compares holiday entries to import with those stored for their dates:
// one effect each.
func (s *Store) HolidayEffects(ctx context.Context, list []Holiday) ([]string, error) {
	changes, err := s.HolidayChanges(ctx, list)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c.Effect
	}
	return out, nil
}
