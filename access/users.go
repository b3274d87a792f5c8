package access

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"

	"herald/kernel"
)

// Role is a console user's role. Each role includes the rights of those below it.
type Role string

// The console roles, from least to most privileged.
const (
	RoleViewer   Role = "viewer"
	RoleOperator Role = "operator"
	RoleAdmin    Role = "admin"
)

var roleRank = map[Role]int{RoleViewer: 1, RoleOperator: 2, RoleAdmin: 3}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return roleRank[r] > 0 }

// Allows reports whether a user with role r may do what needs role need.
func (r Role) Allows(need Role) bool {
	return roleRank[r] > 0 && roleRank[need] > 0 && roleRank[r] >= roleRank[need]
}

// User is a console user.
type User struct {
	ID           int64
	Username     string
	PasswordHash string
	Role         Role
	Disabled     bool
	// Language is the console language the user chose (zh-CN, en), or empty to follow
	// the browser.
	Language string
	// MustChangePassword is set while the password is one an admin gave (a new user's,
	// or one reset): the console sends the user to the password form until they choose
	// their own. API keys are not affected.
	MustChangePassword bool
	PasswordChangedAt  time.Time
	LastLoginAt        *time.Time
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// TableName implements gorm's tabler.
func (User) TableName() string { return "console_users" }

// passwordCost is the bcrypt cost of a password hash, above bcrypt's default of 10: a
// login is rare, a leaked hash is forever.
const passwordCost = 11

// bcryptCost is the cost of the hashes made from now on: passwordCost, or bcrypt's
// least in a test binary (UseCheapPasswordHashes).
var bcryptCost = passwordCost

// UseCheapPasswordHashes makes the passwords hashed from now on, and the hash compared
// against for unknown usernames, as cheap as bcrypt allows. Test binaries that sign in
// hundreds of times call it first (under the race detector a real hash takes a
// second); a Herald process never does.
func UseCheapPasswordHashes() {
	bcryptCost = bcrypt.MinCost
	dummyHash, _ = bcrypt.GenerateFromPassword([]byte("herald-timing-equaliser"), bcryptCost)
}

var usernameRe = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{1,63}$`)

// ValidateUser checks a new user's username, password and role.
func ValidateUser(username, password string, role Role) error {
	if !usernameRe.MatchString(username) {
		return kernel.Invalid("username", "users.username_invalid")
	}
	if err := CheckPassword(username, password); err != nil {
		return err
	}
	if !role.Valid() {
		return kernel.Invalid("role", "users.role_invalid")
	}
	return nil
}

// NormalizeUsername folds a username to lower case: usernames are case-insensitive on
// every database, not only where the collation happens to be.
func NormalizeUsername(u string) string { return strings.ToLower(strings.TrimSpace(u)) }

// CreateUser validates and stores a new console user with a hashed password.
func (s *Credentials) CreateUser(ctx context.Context, username, password string, role Role) (*User, error) {
	username = NormalizeUsername(username)
	if err := ValidateUser(username, password, role); err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcryptCost)
	if err != nil {
		return nil, fmt.Errorf("access: hash password: %w", err)
	}
	now := kernel.Now()
	u := &User{Username: username, PasswordHash: string(hash), Role: role, PasswordChangedAt: now}
	if err := s.k.Writer(ctx).Create(u).Error; err != nil {
		if kernel.IsDuplicate(err) {
			return nil, kernel.DuplicateField("username", "validation.username_taken")
		}
		return nil, fmt.Errorf("access: create user %s: %w", username, err)
	}
	return u, nil
}

// CountUsers reports how many console users exist.
func (s *Credentials) CountUsers(ctx context.Context) (int64, error) {
	var n int64
	err := s.k.Reader(ctx).Model(&User{}).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("access: count users: %w", err)
	}
	return n, nil
}

// UserByID returns one user.
func (s *Credentials) UserByID(ctx context.Context, id int64) (*User, error) {
	var u User
	if err := s.k.Reader(ctx).First(&u, id).Error; err != nil {
		return nil, fmt.Errorf("access: user %d: %w", id, kernel.NotFound(err))
	}
	return &u, nil
}

// dummyHash is compared against when a username does not exist, so a login for an
// unknown user takes as long as one with a wrong password. It is written out, made
// once at passwordCost (TestDummyHashMatchesThePasswordCost holds the two together),
// rather than made as the process starts: making it costs as much as a login, which
// every command (help, migrate status) would pay before doing anything, a second and
// a half under the race detector.
var dummyHash = []byte(dummyHashAtPasswordCost)

// dummyHashAtPasswordCost is the hash of "herald-timing-equaliser" at passwordCost.
const dummyHashAtPasswordCost = "$2a$11$olGGNctCafVOQeFiKcGDluFTm3PRRipH9Kq8/HujqFfvBmOV1cgL6"

// ErrBadCredentials is returned for an unknown user, a wrong password or a disabled user.
var ErrBadCredentials = kernel.Declare(kernel.DomainError{Kind: kernel.KindUnauthorized, Code: "unauthorized", Key: "login.wrong", Text: "wrong username or password"})

// Authenticate checks a username and password from an address and records the login
// time. A name that no username could be is refused without a lookup; the user is
// found by the name exactly as stored (usernames are stored lower-case and compared
// byte for byte on every database: ＡＤＭＩＮ or ädmin is never admin), and the guess is
// counted against the user's id and the address before the password is compared.
// ErrThrottled (a *ThrottledError) means the address is over its limit or the user's
// gate is closed, and the password was not compared.
func (s *Credentials) Authenticate(ctx context.Context, username, password, ip string) (*User, error) {
	return s.authenticate(ctx, username, password, ip, kernel.Now())
}

// authenticate is Authenticate with the throttle's clock at now.
func (s *Credentials) authenticate(ctx context.Context, username, password, ip string, now time.Time) (*User, error) {
	username = NormalizeUsername(username)
	var u *User
	if usernameRe.MatchString(username) {
		var list []User
		if err := s.k.Reader(ctx).Where("username = ?", username).Limit(1).Find(&list).Error; err != nil {
			return nil, fmt.Errorf("access: authenticate %s: %w", username, err)
		}
		if len(list) == 1 && list[0].Username == username {
			u = &list[0]
		}
	}
	userKey := ""
	if u != nil || usernameRe.MatchString(username) {
		userKey = guessUserKey(u, username)
	}
	g, err := s.beginGuess(ctx, userKey, ip, now)
	if err != nil {
		return nil, err
	}
	err = checkPassword(u, password)
	s.endGuess(ctx, g, err == nil)
	if err != nil {
		return nil, err
	}
	at := kernel.Now()
	u.LastLoginAt = &at
	if err := s.k.Writer(ctx).Model(u).Update("last_login_at", at).Error; err != nil {
		return nil, fmt.Errorf("access: record login %s: %w", username, err)
	}
	return u, nil
}

// checkPassword returns ErrBadCredentials unless u is an enabled user with the password;
// for no user it compares against a dummy hash, taking as long.
func checkPassword(u *User, password string) error {
	if u == nil {
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
		return ErrBadCredentials
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil || u.Disabled {
		return ErrBadCredentials
	}
	return nil
}

// ChangePassword sets a new password after checking the current one, and revokes every
// session of the user; the caller starts a fresh one. The check of the current password
// is throttled as a sign-in is (ErrThrottled), and shares its allowance.
func (s *Credentials) ChangePassword(ctx context.Context, userID int64, current, next, ip string) error {
	u, err := s.CheckCurrentPassword(ctx, userID, current, ip)
	if err != nil {
		return err
	}
	return s.SetOwnPassword(ctx, u, next)
}

// CheckCurrentPassword returns the user if current is their password: the check a
// password change starts with. It is throttled as a sign-in is (ErrThrottled), and shares
// its allowance; a wrong password is a *FieldError naming current_password. The guess is
// counted outside any transaction of the caller's, so that a change refused afterwards
// still counts it.
func (s *Credentials) CheckCurrentPassword(ctx context.Context, userID int64, current, ip string) (*User, error) {
	u, err := s.UserByID(ctx, userID)
	if err != nil {
		return nil, err
	}
	g, err := s.beginGuess(ctx, guessUserKey(u, u.Username), ip, kernel.Now())
	if err != nil {
		return nil, err
	}
	right := bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(current)) == nil
	s.endGuess(ctx, g, right)
	if !right {
		return nil, kernel.Invalid("current_password", "users.wrong_current_password")
	}
	return u, nil
}

// SetOwnPassword sets the new password of u, whose current password was just checked
// (CheckCurrentPassword), and revokes every session of the user. It is a compare-and-set
// on the password u was read with: ErrStateChanged if it changed meanwhile. A password
// that is not good enough is a *FieldError naming new_password.
func (s *Credentials) SetOwnPassword(ctx context.Context, u *User, next string) error {
	if err := ValidateUser(u.Username, next, u.Role); err != nil {
		var fe *kernel.FieldError
		if errors.As(err, &fe) && fe.Field == "password" {
			fe.Field = "new_password"
		}
		return err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(next), bcryptCost)
	if err != nil {
		return fmt.Errorf("access: hash password: %w", err)
	}
	return s.k.Tx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&User{}).Where("id = ? AND password_hash = ?", u.ID, u.PasswordHash).
			Updates(map[string]any{"password_hash": string(hash), "password_changed_at": kernel.Now(), "must_change_password": false})
		if res.Error != nil {
			return fmt.Errorf("access: change password %d: %w", u.ID, res.Error)
		}
		if res.RowsAffected == 0 {
			return kernel.ErrStateChanged
		}
		return tx.Where("user_id = ?", u.ID).Delete(&Session{}).Error
	})
}
