package access

import (
	"context"
	"errors"
	"strconv"
	"time"

	"herald/audit"
	"herald/kernel"
)

// CreateUser adds a console user with an initial password, audited as done by by (an
// admin in the console, the command line, or Herald's first start). A user an admin
// created (in the console or through the API) must change the initial password at the
// first sign-in; the command line and the first start set a password the person typed
// or was shown themself. A username, password or role that is not good enough is a
// *kernel.FieldError and writes nothing.
func (d *Warden) CreateUser(ctx context.Context, by audit.Actor, username, password string, role Role) (*User, error) {
	var u *User
	err := d.change(ctx, by, func(tx *Credentials, ch *audit.Change) error {
		var err error
		if u, err = tx.CreateUser(ctx, username, password, role); err != nil {
			return err
		}
		if u.MustChangePassword = givenByAnAdmin(by); u.MustChangePassword {
			if err := tx.RequirePasswordChange(ctx, u.ID); err != nil {
				return err
			}
		}
		ch.Audit("user.create", "user", u.Username, audit.Params{"username": u.Username, "role": string(u.Role),
			"must_change": strconv.FormatBool(u.MustChangePassword)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// SetUserRole changes a user's role, audited with the old role and the new one. The
// user's sessions stay: the role is read on every request, so it applies at once.
func (d *Warden) SetUserRole(ctx context.Context, by audit.Actor, u *User, role Role) error {
	return d.change(ctx, by, func(tx *Credentials, ch *audit.Change) error {
		if err := tx.SetUserRole(ctx, u.ID, role); err != nil {
			return err
		}
		ch.Audit("user.role", "user", u.Username, audit.Params{"username": u.Username,
			"old_role": string(u.Role), "role": string(role)})
		return nil
	})
}

// SetUserDisabled disables a user, revoking their sessions in the same transaction, or
// enables them again; audited.
func (d *Warden) SetUserDisabled(ctx context.Context, by audit.Actor, u *User, disabled bool) error {
	return d.change(ctx, by, func(tx *Credentials, ch *audit.Change) error {
		if err := tx.SetUserDisabled(ctx, u.ID, disabled); err != nil {
			return err
		}
		action := "user.enable"
		if disabled {
			action = "user.disable"
		}
		ch.Audit(action, "user", u.Username, audit.Params{"username": u.Username})
		return nil
	})
}

// ResetPassword sets a new password for a user without the old one (an admin's action,
// or the command line's for a lost password) and signs them out everywhere; audited. A
// password an admin reset must be changed at the next sign-in.
// A password that is not good enough is a *kernel.FieldError naming password.
func (d *Warden) ResetPassword(ctx context.Context, by audit.Actor, u *User, password string) error {
	return d.change(ctx, by, func(tx *Credentials, ch *audit.Change) error {
		if err := tx.ResetPassword(ctx, u.ID, password); err != nil {
			return err
		}
		if givenByAnAdmin(by) {
			if err := tx.RequirePasswordChange(ctx, u.ID); err != nil {
				return err
			}
		}
		ch.Audit("user.password_reset", "user", u.Username, audit.Params{"username": u.Username})
		return nil
	})
}

// SetUserLanguage stores the console language a user chose (empty: follow the browser),
// audited with the old choice and the new one ("-" for none).
func (d *Warden) SetUserLanguage(ctx context.Context, by audit.Actor, u *User, lang string) error {
	return d.change(ctx, by, func(tx *Credentials, ch *audit.Change) error {
		if err := tx.SetUserLanguage(ctx, u.ID, lang); err != nil {
			return err
		}
		ch.Audit("user.language", "user", u.Username, audit.Params{"username": u.Username,
			"old_language": orDash(u.Language), "language": orDash(lang)})
		return nil
	})
}

// ChangePassword sets a user's own password after checking the current one and revokes
// every session of theirs; the caller starts a fresh one for this browser. The check is
// throttled as a sign-in is: ErrThrottled, recorded at most once a minute per
// user and address. A wrong current password is a *kernel.FieldError naming
// current_password and is recorded as a failed attempt (the guess counted); a new
// password that is not good enough names new_password and writes nothing.
func (d *Warden) ChangePassword(ctx context.Context, by audit.Actor, u *User, current, next string) error {
	checked, err := d.store.CheckCurrentPassword(ctx, u.ID, current, by.IP)
	if errors.Is(err, ErrThrottled) {
		e := by.Entry("user.password_change_throttled", "user", u.Username, audit.Params{"username": u.Username})
		e.Detail = "status 429: too many wrong passwords"
		if _, aerr := d.store.AuditLog().Once(ctx, e, "password "+u.Username+" "+by.IP, time.Minute); aerr != nil {
			return aerr
		}
		return err
	}
	if fe, ok := errors.AsType[*kernel.FieldError](err); ok && fe.Field == "current_password" {
		if aerr := d.change(ctx, by, func(_ *Credentials, ch *audit.Change) error {
			ch.AuditDetail("user.password_change_failed", "user", u.Username, "status 422: wrong current password",
				audit.Params{"username": u.Username})
			return nil
		}); aerr != nil {
			return aerr
		}
		return err
	}
	if err != nil {
		return err
	}
	return d.change(ctx, by, func(tx *Credentials, ch *audit.Change) error {
		if err := tx.SetOwnPassword(ctx, checked, next); err != nil {
			return err
		}
		ch.Audit("user.password_change", "user", u.Username, audit.Params{"username": u.Username})
		return nil
	})
}

// SignOutEverywhere revokes every session of u, audited; the caller clears this
// browser's cookie.
func (d *Warden) SignOutEverywhere(ctx context.Context, by audit.Actor, u *User) error {
	return d.change(ctx, by, func(tx *Credentials, ch *audit.Change) error {
		if err := tx.DeleteUserSessions(ctx, u.ID); err != nil {
			return err
		}
		ch.Audit("user.logout_everywhere", "user", u.Username, audit.Params{"username": u.Username})
		return nil
	})
}

// givenByAnAdmin says a password set by by is one a person was given, not chose: set
// by a console user or an API key, not by the command line or Herald's first start.
func givenByAnAdmin(by audit.Actor) bool { return by.Type != audit.ActorSystem }

// SignOutSession ends one of u's sessions (another device's, or this one), audited with
// the browser and system it was; ErrNotFound when it is not u's or has ended already.
func (d *Warden) SignOutSession(ctx context.Context, by audit.Actor, u *User, id string) error {
	return d.change(ctx, by, func(tx *Credentials, ch *audit.Change) error {
		sess, err := tx.SessionByID(ctx, u.ID, id)
		if err != nil {
			return err
		}
		if err := tx.EndUserSession(ctx, u.ID, id); err != nil {
			return err
		}
		a := ParseAgent(sess.UserAgent)
		ch.Audit("user.session_sign_out", "user", u.Username, audit.Params{"username": u.Username, "browser": a.Browser,
			"version": a.Version, "system": a.System, "ip": sess.IP})
		return nil
	})
}

// orDash shows an empty setting as "-" in audit entries.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
