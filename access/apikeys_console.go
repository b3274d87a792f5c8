package access

import (
	"context"
	"fmt"

	"herald/kernel"
)

// APIKeyByID returns one API key (its hash, never a secret).
func (s *Credentials) APIKeyByID(ctx context.Context, id int64) (*APIKey, error) {
	var k APIKey
	if err := s.k.Reader(ctx).First(&k, id).Error; err != nil {
		return nil, fmt.Errorf("access: api key %d: %w", id, kernel.NotFound(err))
	}
	return &k, nil
}
