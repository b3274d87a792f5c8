package dispatch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"herald/channels"
	"herald/models"
)

// AccountInput is an account as an admin submits it, through the console form or the
// API; both save it with SaveAccount, so the two follow one set of rules.
type AccountInput struct {
	Name string
	// Platform may be left empty on an update: the account keeps its platform.
	Platform            string
	IsDefault           bool
	Enabled             *bool // nil: enabled
	AllowPrivateNetwork bool
	MaxAttempts         int // 0: models.DefaultMaxAttempts
	// Config holds the platform settings as given. On an update of the same platform, a
	// secret key left out keeps the stored secret, as long as no destination setting
	// changes; a secret given as "" clears it.
	Config map[string]string
	// Limits nil: a new account starts from its platform's documented limits
	// (models.DefaultLimits), an update keeps the account's.
	Limits      *models.Limits
	RetryPolicy models.RetryPolicy
	// QuietHours: the zero value is none.
	QuietHours models.QuietHours
}

// SaveAccount validates and saves an account: a new one when old is nil, otherwise an
// update of old as the caller read it (the save is a compare-and-set on that read, so
// it fails with models.ErrStateChanged if the account changed since). A stored secret
// the input leaves out is kept only while the platform and every destination setting
// stay as they were: a changed address needs its secret typed again, so no secret is
// handed to an address it was not entered for. The change is audited, with the old and
// new destination, as done by by (Actor, ActorType and IP), and intake in this process
// sees it at once. A validation failure is a *models.FieldError and writes nothing.
func (d *Dispatcher) SaveAccount(ctx context.Context, old *models.Account, in AccountInput, by models.AuditEntry) (*models.Account, error) {
	a, err := accountFromInput(in, old)
	if err != nil {
		return nil, err
	}
	if err := d.Store.SaveAccount(ctx, a); err != nil {
		return nil, err
	}
	d.accountsChanged()
	if old == nil {
		d.auditAccount(ctx, by, "account.create", a.Name, a.Platform+"; "+destination(a.Platform, a.Config))
	} else {
		d.auditAccount(ctx, by, "account.update", a.Name, updateDetail(old, a, in.Config))
	}
	return a, nil
}

// SetAccountEnabled enables or disables an account, audited as done by by.
func (d *Dispatcher) SetAccountEnabled(ctx context.Context, a *models.Account, enabled bool, by models.AuditEntry) error {
	if err := d.Store.SetAccountEnabled(ctx, a.ID, enabled); err != nil {
		return err
	}
	d.accountsChanged()
	action := "account.disable"
	if enabled {
		action = "account.enable"
	}
	d.auditAccount(ctx, by, action, a.Name, "")
	return nil
}

// DeleteAccount removes an account that has no undelivered messages (else the error is
// models.ErrInUse), audited as done by by.
func (d *Dispatcher) DeleteAccount(ctx context.Context, a *models.Account, by models.AuditEntry) error {
	if err := d.Store.DeleteAccount(ctx, a.ID); err != nil {
		return err
	}
	d.accountsChanged()
	d.auditAccount(ctx, by, "account.delete", a.Name, a.Platform)
	return nil
}

// accountFromInput applies the defaults, keeps the stored secrets the input leaves out
// (or refuses them, see SaveAccount) and validates the result.
func accountFromInput(in AccountInput, old *models.Account) (*models.Account, error) {
	a := &models.Account{Name: strings.TrimSpace(in.Name), Platform: in.Platform, IsDefault: in.IsDefault,
		Enabled: in.Enabled == nil || *in.Enabled, AllowPrivateNetwork: in.AllowPrivateNetwork,
		MaxAttempts: in.MaxAttempts, RetryPolicy: in.RetryPolicy.Compact(), Healthy: true,
		QuietHours: models.QuietHours{Start: strings.TrimSpace(in.QuietHours.Start), End: strings.TrimSpace(in.QuietHours.End)},
		Config:     maps.Clone(in.Config)}
	if a.Config == nil {
		a.Config = map[string]string{}
	}
	if a.MaxAttempts == 0 {
		a.MaxAttempts = models.DefaultMaxAttempts
	}
	if old != nil {
		a.ID, a.CreatedAt, a.Healthy, a.HealthNote, a.ConfigEnc = old.ID, old.CreatedAt, old.Healthy, old.HealthNote, old.ConfigEnc
		if a.Platform == "" {
			a.Platform = old.Platform
		}
	}
	if !slices.Contains(channels.Platforms, a.Platform) {
		return nil, models.Invalid("platform", "accounts.error.platform", "Platforms", strings.Join(channels.Platforms, ", "))
	}
	switch {
	case in.Limits != nil:
		a.Limits = *in.Limits
	case old != nil:
		a.Limits = old.Limits
	default:
		a.Limits = models.DefaultLimits(a.Platform)
	}
	var kept []string
	if old != nil && old.Platform == a.Platform {
		for _, k := range channels.SecretKeys[a.Platform] {
			if _, given := in.Config[k]; !given && old.Config[k] != "" {
				a.Config[k] = old.Config[k]
				kept = append(kept, k)
			}
		}
	}
	if err := models.ValidateAccount(a); err != nil {
		return nil, err
	}
	// A problem with one setting is a *models.FieldError naming config.<key>.
	if err := models.SettingInvalid(channels.ValidateConfig(a.Platform, a.Config, a.AllowPrivateNetwork)); err != nil {
		if _, ok := errors.AsType[*models.FieldError](err); ok {
			return nil, err
		}
		return nil, fmt.Errorf("dispatch: account %s: %w", a.Name, err)
	}
	if len(kept) > 0 {
		if changed := channels.DestinationChanges(a.Platform, old.Config, a.Config); len(changed) > 0 {
			return nil, models.Invalid("config."+kept[0], "accounts.error.reenter_secret", "Secret", kept[0], "Changed", changed[0].Key)
		}
	}
	return a, nil
}

// destination says where an account connects, for the audit log.
func destination(platform string, cfg map[string]string) string {
	var parts []string
	for _, f := range channels.Fields(platform) {
		if v := f.Value(cfg); f.Destination && v != "" {
			parts = append(parts, f.Key+" "+v)
		}
	}
	if len(parts) == 0 {
		return "no destination settings"
	}
	return strings.Join(parts, ", ")
}

// updateDetail says, for the audit log, where an account connected and connects now,
// and which secrets were given; secrets themselves never appear.
func updateDetail(old, a *models.Account, given map[string]string) string {
	var parts []string
	if old.Platform != a.Platform {
		parts = append(parts, fmt.Sprintf("platform %s → %s; destination %s → %s", old.Platform, a.Platform,
			destination(old.Platform, old.Config), destination(a.Platform, a.Config)))
	} else {
		for _, c := range channels.DestinationChanges(a.Platform, old.Config, a.Config) {
			parts = append(parts, fmt.Sprintf("%s %s → %s", c.Key, orNone(c.Old), orNone(c.New)))
		}
	}
	if old.QuietHours != a.QuietHours {
		parts = append(parts, fmt.Sprintf("quiet hours %s → %s", quietHours(old.QuietHours), quietHours(a.QuietHours)))
	}
	for _, k := range channels.SecretKeys[a.Platform] {
		switch v, ok := given[k]; {
		case ok && v == "" && old.Config[k] != "":
			parts = append(parts, k+" cleared")
		case ok && v != "":
			parts = append(parts, k+" entered")
		}
	}
	return strings.Join(parts, "; ")
}

// quietHours writes a window for the audit log.
func quietHours(q models.QuietHours) string {
	if !q.Set() {
		return "(none)"
	}
	return q.Start + "–" + q.End
}

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// accountsChanged makes this process's intake see an account change at once (other
// processes see it within their cache's few seconds).
func (d *Dispatcher) accountsChanged() {
	if d.Accounts != nil {
		d.Accounts.Forget()
	}
}

// auditAccount records an account change. A failure to write the audit log is logged,
// not returned: the change itself has been made.
func (d *Dispatcher) auditAccount(ctx context.Context, by models.AuditEntry, action, name, detail string) {
	by.Action, by.TargetType, by.TargetID, by.Detail = action, "account", name, detail
	if err := d.Store.Audit(ctx, by); err != nil && d.Log != nil {
		d.Log.Error("audit log write failed", "action", action, "error", err)
	}
}
