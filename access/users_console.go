package access

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"

	"herald/i18n"
	"herald/kernel"
)

// Users lists every console user by username.
func (s *Credentials) Users(ctx context.Context) ([]User, error) {
	var out []User
	if err := s.k.Reader(ctx).Order("username").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("access: list users: %w", err)
	}
	return out, nil
}

// UserByUsername returns the user with a username (case-insensitive), or ErrNotFound.
func (s *Credentials) UserByUsername(ctx context.Context, username string) (*User, error) {
	username = NormalizeUsername(username)
	var u User
	if err := s.k.Reader(ctx).Where("username = ?", username).First(&u).Error; err != nil {
		return nil, fmt.Errorf("access: user %q: %w", username, kernel.NotFound(err))
	}
	return &u, nil
}

// SetUserRole changes a user's role. The user's sessions stay: the role is read on
// every request, so it applies at once.
func (s *Credentials) SetUserRole(ctx context.Context, id int64, role Role) error {
	if !role.Valid() {
		return kernel.Invalid("role", "users.role_invalid")
	}
	return s.setUser(ctx, id, "role", role)
}

// SetUserLanguage sets the console language of a user; empty follows the browser.
func (s *Credentials) SetUserLanguage(ctx context.Context, id int64, lang string) error {
	if lang != "" && !i18n.Valid(lang) {
		return kernel.Invalid("language", "validation.language", "Languages", strings.Join(i18n.Languages, ", "))
	}
	return s.setUser(ctx, id, "language", lang)
}

// setUser sets one column of a user (and updated_at); kernel.ErrNotFound when there is
// no such user.
func (s *Credentials) setUser(ctx context.Context, id int64, column string, value any) error {
	res := s.k.Writer(ctx).Model(&User{}).Where("id = ?", id).Updates(map[string]any{column: value, "updated_at": kernel.Now()})
	if res.Error != nil {
		return fmt.Errorf("access: set %s of user %d: %w", column, id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("access: user %d: %w", id, kernel.ErrNotFound)
	}
	return nil
}

// SetUserDisabled disables or enables a user. Disabling also revokes every session of
// the user in the same transaction, so nobody stays signed in as them.
func (s *Credentials) SetUserDisabled(ctx context.Context, id int64, disabled bool) error {
	return s.k.Tx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&User{}).Where("id = ?", id).Updates(map[string]any{"disabled": disabled, "updated_at": kernel.Now()})
		if res.Error != nil {
			return fmt.Errorf("access: disable user %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("access: user %d: %w", id, kernel.ErrNotFound)
		}
		if !disabled {
			return nil
		}
		if err := tx.Where("user_id = ?", id).Delete(&Session{}).Error; err != nil {
			return fmt.Errorf("access: revoke sessions of user %d: %w", id, err)
		}
		return nil
	})
}

// ResetPassword sets a new password for a user without knowing the old one (an admin's
// action) and revokes every session of the user.
func (s *Credentials) ResetPassword(ctx context.Context, id int64, password string) error {
	u, err := s.UserByID(ctx, id)
	if err != nil {
		return err
	}
	if err := ValidateUser(u.Username, password, u.Role); err != nil {
		return err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcryptCost)
	if err != nil {
		return fmt.Errorf("access: hash password: %w", err)
	}
	return s.k.Tx(ctx, func(tx *gorm.DB) error {
		err := tx.Model(&User{}).Where("id = ?", id).
			Updates(map[string]any{"password_hash": string(hash), "password_changed_at": kernel.Now(), "updated_at": kernel.Now()}).Error
		if err != nil {
			return fmt.Errorf("access: reset password of user %d: %w", id, err)
		}
		if err := tx.Where("user_id = ?", id).Delete(&Session{}).Error; err != nil {
			return fmt.Errorf("access: revoke sessions of user %d: %w", id, err)
		}
		return nil
	})
}

// RequirePasswordChange makes the user choose their own password at the next sign-in
// (User.MustChangePassword): their password is one an admin gave.
func (s *Credentials) RequirePasswordChange(ctx context.Context, id int64) error {
	return s.setUser(ctx, id, "must_change_password", true)
}

// SessionCount reports how many live sessions a user has.
func (s *Credentials) SessionCount(ctx context.Context, userID int64) (int64, error) {
	var n int64
	err := s.k.Reader(ctx).Model(&Session{}).Where("user_id = ? AND expires_at > ?", userID, kernel.Now()).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("access: count sessions of user %d: %w", userID, err)
	}
	return n, nil
}
