package sending

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"herald/audit"
	"herald/channels"
	"herald/delivery"
	"herald/kernel"
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
	MaxAttempts         int // 0: DefaultMaxAttempts
	// Config holds the platform settings as given. On an update of the same platform, a
	// secret key left out keeps the stored secret, as long as no destination setting
	// changes; a secret given as "" clears it.
	Config map[string]string
	// Limits nil: a new account starts from its platform's documented limits
	// (delivery.DocumentedLimits), an update keeps the account's.
	Limits *delivery.Limits
	// ConfirmAboveDocumented confirms limits set looser than the platform documents
	// (above its value, or 0 where it has one): without it such a change is refused,
	// since the platform drops the excess, often without an error.
	ConfirmAboveDocumented bool
	RetryPolicy            RetryPolicy
	// QuietHours: the zero value is none.
	QuietHours QuietHours
}

// SaveAccount validates and saves an account: a new one when old is nil, otherwise an
// update of old as the caller read it (the save is a compare-and-set on that read, so
// it fails with kernel.ErrStateChanged if the account changed since). A stored secret
// the input leaves out is kept only while the platform and every destination setting
// stay as they were: a changed address needs its secret typed again, so no secret is
// handed to an address it was not entered for. The change is audited, with the old and
// new destination and whatever else changed, as done by by, and intake in this process
// sees it at once. A validation failure is a *kernel.FieldError and writes nothing.
func (d *Desk) SaveAccount(ctx context.Context, by audit.Actor, old *Account, in AccountInput) (*Account, error) {
	a, err := accountFromInput(in, old)
	if err != nil {
		return nil, err
	}
	err = d.change(ctx, by, func(tx *AccountBook, ch *audit.Change) error {
		if err := tx.SaveAccount(ctx, a); err != nil {
			return err
		}
		if old == nil {
			ch.Audit("account.create", "account", a.Name, audit.Params{"name": a.Name, "platform": a.Platform,
				"destination": destination(a.Platform, a.Config), "limits": limitsText(a.Limits),
				"above_documented": excessText(newExcess(a, nil))})
		} else {
			p := updateParams(old, a, in.Config)
			p["above_documented"] = excessText(newExcess(a, old))
			ch.Audit("account.update", "account", old.Name, p)
		}
		ch.After(d.accountsChanged)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// SetAccountEnabled enables or disables an account, audited as done by by.
func (d *Desk) SetAccountEnabled(ctx context.Context, by audit.Actor, a *Account, enabled bool) error {
	return d.change(ctx, by, func(tx *AccountBook, ch *audit.Change) error {
		if err := tx.SetAccountEnabled(ctx, a.ID, enabled); err != nil {
			return err
		}
		action := "account.disable"
		if enabled {
			action = "account.enable"
		}
		ch.Audit(action, "account", a.Name, audit.Params{"name": a.Name})
		ch.After(d.accountsChanged)
		return nil
	})
}

// DeleteAccount removes an account that has no undelivered messages (else the error is
// ErrInUse), audited as done by by.
func (d *Desk) DeleteAccount(ctx context.Context, by audit.Actor, a *Account) error {
	return d.change(ctx, by, func(tx *AccountBook, ch *audit.Change) error {
		if err := tx.DeleteAccount(ctx, a.ID); err != nil {
			return err
		}
		ch.Audit("account.delete", "account", a.Name, audit.Params{"name": a.Name, "platform": a.Platform})
		ch.After(d.accountsChanged)
		return nil
	})
}

// AccountTested records that by checked an account's connection (the console's test
// button) and what came of it: ok or failed, and the platform's answer in summary (a
// note rendered in every console language, see channels.Note.Rendered).
func (d *Desk) AccountTested(ctx context.Context, by audit.Actor, a *Account, ok bool, summary string) error {
	return d.change(ctx, by, func(_ *AccountBook, ch *audit.Change) error {
		outcome := "failed"
		if ok {
			outcome = "ok"
		}
		ch.Audit("account.test", "account", a.Name, audit.Params{"name": a.Name, "outcome": outcome, "summary": summary})
		return nil
	})
}

// accountFromInput applies the defaults, keeps the stored secrets the input leaves out
// (or refuses them, see SaveAccount) and validates the result.
func accountFromInput(in AccountInput, old *Account) (*Account, error) {
	a := &Account{Name: strings.TrimSpace(in.Name), Platform: in.Platform, IsDefault: in.IsDefault,
		Enabled: in.Enabled == nil || *in.Enabled, AllowPrivateNetwork: in.AllowPrivateNetwork,
		MaxAttempts: in.MaxAttempts, RetryPolicy: in.RetryPolicy.Compact(), Healthy: true,
		QuietHours: QuietHours{Start: strings.TrimSpace(in.QuietHours.Start), End: strings.TrimSpace(in.QuietHours.End)},
		Config:     maps.Clone(in.Config)}
	if a.Config == nil {
		a.Config = map[string]string{}
	}
	if a.MaxAttempts == 0 {
		a.MaxAttempts = DefaultMaxAttempts
	}
	if old != nil {
		a.ID, a.CreatedAt, a.Healthy, a.HealthNote, a.ConfigEnc = old.ID, old.CreatedAt, old.Healthy, old.HealthNote, old.ConfigEnc
		if a.Platform == "" {
			a.Platform = old.Platform
		}
	}
	if !slices.Contains(channels.Platforms, a.Platform) {
		return nil, kernel.Invalid("platform", "accounts.error.platform", "Platforms", strings.Join(channels.Platforms, ", "))
	}
	switch {
	case in.Limits != nil:
		a.Limits = *in.Limits
	case old != nil:
		a.Limits = old.Limits
	default:
		a.Limits = delivery.DocumentedLimits(a.Platform, a.Config)
	}
	if err := checkExcess(a, old, in.ConfirmAboveDocumented); err != nil {
		return nil, err
	}
	if old != nil && old.Unreadable {
		// Nothing is kept of settings no key opens: each required secret must be given.
		for _, f := range channels.Fields(a.Platform) {
			if f.Secret && f.Required && a.Config[f.Key] == "" {
				return nil, kernel.Invalid("config."+f.Key, "accounts.error.unreadable_secret", "Secret", f.Key)
			}
		}
	}
	var kept []string
	if old != nil && old.Platform == a.Platform {
		KeepMasked(a.Config, old.Config)
		for _, k := range channels.SecretKeys[a.Platform] {
			if _, given := in.Config[k]; !given && old.Config[k] != "" {
				a.Config[k] = old.Config[k]
				kept = append(kept, k)
			}
		}
	}
	if err := ValidateAccount(a); err != nil {
		return nil, err
	}
	// A problem with one setting is a *kernel.FieldError naming config.<key>.
	if err := kernel.SettingInvalid(channels.ValidateConfig(a.Platform, a.Config, a.AllowPrivateNetwork)); err != nil {
		if _, ok := errors.AsType[*kernel.FieldError](err); ok {
			return nil, err
		}
		return nil, fmt.Errorf("sending: account %s: %w", a.Name, err)
	}
	if len(kept) > 0 {
		if changed := channels.DestinationChanges(a.Platform, old.Config, a.Config); len(changed) > 0 {
			return nil, kernel.Invalid("config."+kept[0], "accounts.error.reenter_secret", "Secret", kept[0], "Changed", changed[0].Key)
		}
	}
	return a, nil
}

// ErrAboveDocumented marks the refusal of limits looser than the platform documents,
// set without ConfirmAboveDocumented (the *kernel.FieldError's Err).
var ErrAboveDocumented = kernel.Declare(kernel.DomainError{Kind: kernel.KindInvalid, Code: "validation_failed", Key: "accounts.error.above_documented",
	Text: "limit above the platform's documented limit"})

// newExcess lists the limits a save leaves looser than the platform documents that
// were not so already: every one of a new account, or of an account moving to another
// platform; for an update, those whose value changes. An account kept above its
// platform's limits is not asked again at each save.
func newExcess(a, old *Account) []delivery.Excess {
	all := delivery.AboveDocumented(a.Limits, a.Platform, a.Config)
	// An sms or voice account moving to another provider moves to its limits.
	if old == nil || old.Platform != a.Platform || old.Config["provider"] != a.Config["provider"] {
		return all
	}
	var out []delivery.Excess
	for _, e := range all {
		if e.Value != old.Limits.Of(e.Window) {
			out = append(out, e)
		}
	}
	return out
}

// checkExcess refuses, unless confirmed, limits the save would newly leave looser than
// the platform documents, naming the first.
func checkExcess(a, old *Account, confirmed bool) error {
	ex := newExcess(a, old)
	if len(ex) == 0 || confirmed {
		return nil
	}
	e := ex[0]
	key := "accounts.error.above_documented"
	if e.Value == 0 {
		key = "accounts.error.unlimited_documented"
	}
	fe := kernel.Invalid("limits."+e.Window, key, "Value", e.Value, "Documented", e.Documented, "Platform", a.Platform)
	fe.Err = ErrAboveDocumented
	return fe
}

// excessText names, for the audit log, limits confirmed above the documented ones:
// "per_recipient_per_minute 60 (documented 30)", "per_second none (documented 50)".
func excessText(ex []delivery.Excess) string {
	parts := make([]string, len(ex))
	for i, e := range ex {
		v := "none"
		if e.Value > 0 {
			v = fmt.Sprint(e.Value)
		}
		parts[i] = fmt.Sprintf("%s %s (documented %d)", e.Window, v, e.Documented)
	}
	return strings.Join(parts, ", ")
}

// limitsText names an account's limits for the audit log: "per_second 20, per_minute 600",
// or "none".
func limitsText(l delivery.Limits) string {
	var parts []string
	for _, w := range delivery.LimitWindows {
		if v := *w.Of(&l); v > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", w.Name, v))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
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

// updateParams names, for the audit log, what an update changed: the platform, where
// the account connected and connects now, its quiet hours, limits and attempts, and which
// secrets were entered or cleared; secrets themselves never appear.
func updateParams(old, a *Account, given map[string]string) audit.Params {
	p := audit.Params{"name": old.Name}
	if old.Name != a.Name {
		p["new_name"] = a.Name
	}
	if old.Platform != a.Platform {
		p["platform"] = old.Platform + " → " + a.Platform
		p["destination"] = destination(old.Platform, old.Config) + " → " + destination(a.Platform, a.Config)
	} else {
		var parts []string
		for _, c := range channels.DestinationChanges(a.Platform, old.Config, a.Config) {
			parts = append(parts, fmt.Sprintf("%s %s → %s", c.Key, orNone(c.Old), orNone(c.New)))
		}
		p["destination"] = strings.Join(parts, ", ")
	}
	if old.QuietHours != a.QuietHours {
		p["quiet_hours"] = quietHours(old.QuietHours) + " → " + quietHours(a.QuietHours)
	}
	var limits []string
	for _, w := range delivery.LimitWindows {
		if o, n := *w.Of(&old.Limits), *w.Of(&a.Limits); o != n {
			limits = append(limits, fmt.Sprintf("%s %d → %d", w.Name, o, n))
		}
	}
	p["limits"] = strings.Join(limits, ", ")
	if old.MaxAttempts != a.MaxAttempts {
		p["max_attempts"] = fmt.Sprintf("%d → %d", old.MaxAttempts, a.MaxAttempts)
	}
	var entered, cleared []string
	for _, k := range channels.SecretKeys[a.Platform] {
		switch v, ok := given[k]; {
		case ok && v == "" && old.Config[k] != "":
			cleared = append(cleared, k)
		case ok && v != "":
			entered = append(entered, k)
		}
	}
	p["secrets_entered"], p["secrets_cleared"] = strings.Join(entered, ", "), strings.Join(cleared, ", ")
	return p
}

// quietHours writes a window for the audit log.
func quietHours(q QuietHours) string {
	if !q.Set() {
		return "-"
	}
	return q.Start + "–" + q.End
}

func orNone(v string) string {
	if v == "" {
		return "-"
	}
	return v
}

// accountsChanged makes this process's intake see an account change at once (other
// processes see it within their cache's few seconds).
func (d *Desk) accountsChanged() {
	if d.accounts != nil {
		d.accounts.Forget()
	}
}
