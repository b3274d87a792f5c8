package access

import (
	"context"
	"time"
)

// BeginGuess counts a password guess at a time as a sign-in for username does (under
// the user's id when there is such a user), without checking any password; wrong says
// whether the guess is then kept as a wrong one or given back. nil means the guess
// would have been checked; a refusal is a *ThrottledError.
func (s *Credentials) BeginGuess(ctx context.Context, username, ip string, at time.Time, wrong bool) error {
	var list []User
	if err := s.k.Writer(ctx).Where("username = ?", username).Find(&list).Error; err != nil {
		return err
	}
	var u *User
	if len(list) == 1 {
		u = &list[0]
	}
	g, err := s.beginGuess(ctx, guessUserKey(u, username), ip, at)
	if err != nil {
		return err
	}
	s.endGuess(ctx, g, !wrong)
	return nil
}

// AuthenticateAt is Authenticate with the throttle's clock at a given time.
func (s *Credentials) AuthenticateAt(ctx context.Context, username, password, ip string, at time.Time) (*User, error) {
	return s.authenticate(ctx, username, password, ip, at)
}

// HashCost is the bcrypt cost passwords are hashed at from now on.
func HashCost() int { return bcryptCost }
