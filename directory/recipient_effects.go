package directory

import (
	"context"
	"herald/kernel"
	"strings"
)

// RecipientEffects compares people to import with those stored under the same external
// ids: one effect each.
func (s *Staff) RecipientEffects(ctx context.Context, list []Recipient) ([]string, error) {
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
			out[i] = kernel.EffectCreate
		default:
			r.ID, r.CreatedAt, r.UpdatedAt = old.ID, old.CreatedAt, old.UpdatedAt
			out[i] = kernel.EffectUpdate
			if r == old {
				out[i] = kernel.EffectUnchanged
			}
		}
	}
	return out, nil
}
