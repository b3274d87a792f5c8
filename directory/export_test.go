package directory

import "time"

// UseRecipientClock sets the clock of the store's cache of recipients.
func (s *Staff) UseRecipientClock(now func() time.Time) {
	s.people.mu.Lock()
	s.people.now = now
	s.people.mu.Unlock()
}

// FillAfterMisses is fillAfterMisses, for tests.
const FillAfterMisses = fillAfterMisses

// RecipientCacheHeld reports how many people the intake's cache holds, and whether it
// is reading the whole directory.
func (s *Staff) RecipientCacheHeld() (held int, filling bool) {
	s.people.mu.Lock()
	defer s.people.mu.Unlock()
	return len(s.people.byExt), s.people.filling
}
