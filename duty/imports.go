package duty

import (
	"context"
)

// HolidayEffects compares holiday entries to import with those stored for their dates:
// one effect each.
func (s *Schedule) HolidayEffects(ctx context.Context, list []Holiday) ([]string, error) {
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
