package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/channels"
	"herald/delivery"
	"herald/kernel"
	"herald/sending"
	"herald/views"
)

// retryRows lays out the retry table: the account's adjustments as values, the defaults
// as placeholders. typed, when not nil, holds the form as submitted.
func retryRows(p sending.RetryPolicy, typed map[string]string) []views.RetryRow {
	def := delivery.DefaultPolicy
	rows := make([]views.RetryRow, 0, len(sending.RetryClasses))
	for _, class := range sending.RetryClasses {
		d, adj := def[channels.Class(class)], p[class]
		row := views.RetryRow{Class: class, Fields: []views.RetryField{
			{Key: "max_retries", Value: intText(adj.MaxRetries), Default: strconv.Itoa(d.MaxRetries), Unlimited: d.MaxRetries < 0},
			{Key: "delay_seconds", Value: floatText(adj.DelaySeconds), Default: formatFloat(d.Base.Seconds())},
			{Key: "factor", Value: floatText(adj.Factor), Default: formatFloat(d.Factor)},
			{Key: "max_delay_seconds", Value: floatText(adj.MaxDelaySeconds), Default: formatFloat(d.Max.Seconds())},
		}}
		if typed != nil {
			for i := range row.Fields {
				row.Fields[i].Value = typed[row.Fields[i].Name(class)]
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// retryInput reads the retry table of the account form; values that are not numbers
// are reported in errs under their field names.
func retryInput(c *gin.Context, errs map[string]string) (sending.RetryPolicy, map[string]string) {
	policy, typed := sending.RetryPolicy{}, map[string]string{}
	for _, row := range retryRows(nil, nil) {
		var r sending.RetryRule
		for _, f := range row.Fields {
			name := f.Name(row.Class)
			v := strings.TrimSpace(c.PostForm(name))
			typed[name] = v
			if v == "" {
				continue
			}
			if f.Key == "max_retries" {
				n, err := strconv.Atoi(v)
				if err != nil {
					errs[name] = tr(c, "accounts.error.whole_or_default")
				}
				r.MaxRetries = &n
				continue
			}
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				errs[name] = tr(c, "accounts.error.number_or_default")
			}
			switch f.Key {
			case "delay_seconds":
				r.DelaySeconds = &x
			case "factor":
				r.Factor = &x
			default:
				r.MaxDelaySeconds = &x
			}
		}
		policy[row.Class] = r
	}
	return policy, typed
}

func intText(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

func floatText(p *float64) string {
	if p == nil {
		return ""
	}
	return formatFloat(*p)
}

func formatFloat(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// configFields lays out a platform's settings. Secrets are never filled in: stored
// says only whether the saved account has one.
func configFields(platform string, values map[string]string, stored *sending.Account) []views.ConfigField {
	var out []views.ConfigField
	for _, cf := range channels.Fields(platform) {
		f := views.ConfigField{Key: cf.Key, Required: cf.Required, Label: cf.LabelNote(), Help: cf.HelpNote(), Multiline: cf.Multiline}
		for _, o := range cf.Options {
			f.Options = append(f.Options, views.ConfigOption{Value: o, Label: cf.OptionNote(o)})
		}
		if cf.Secret {
			f.Secret = true
			f.Stored = stored != nil && stored.Platform == platform && stored.Config[cf.Key] != ""
		} else {
			f.Value = values[cf.Key]
			if len(cf.Options) > 0 {
				// A choice shows what an empty value means, so none is ever chosen by default.
				f.Value = cf.Value(values)
				if w := cf.Warnings[f.Value]; w != "" {
					f.Warning = channels.Note{Key: w}
				}
			}
		}
		out = append(out, f)
	}
	return out
}

// accountForm lays out the form for an account.
func accountForm(a *sending.Account, oldName string, stored *sending.Account) views.AccountForm {
	f := views.AccountForm{OldName: oldName, Name: a.Name, Platform: a.Platform, Platforms: channels.Platforms,
		IsDefault: a.IsDefault, Enabled: a.Enabled, AllowPrivateNetwork: a.AllowPrivateNetwork,
		MaxAttempts: strconv.Itoa(a.MaxAttempts), QuietHours: a.QuietHours, Config: configFields(a.Platform, sending.MaskedConfig(a.Config), stored),
		Warnings: delivery.UnreachableLimits(a.Limits), Excess: delivery.AboveDocumented(a.Limits, a.Platform, a.Config),
		Retry: retryRows(a.RetryPolicy, nil)}
	f.Limits = limitFields(a.Limits, a.Platform, a.Config)
	f.Unreadable = stored != nil && stored.Unreadable
	if oldName == "" {
		f.LimitsNote = limitsNote(a.Platform)
	}
	return f
}

// limitFields lays out limits for the form, each beside what the platform documents.
func limitFields(limits delivery.Limits, platform string, cfg map[string]string) []views.LimitField {
	documented := delivery.DocumentedLimits(platform, cfg)
	var out []views.LimitField
	for _, w := range delivery.LimitWindows {
		l := views.LimitField{Key: w.Name, Documented: *w.Of(&documented)}
		if v := *w.Of(&limits); v > 0 {
			l.Value = strconv.Itoa(v)
		}
		out = append(out, l)
	}
	return out
}

// limitsNote is the catalog key of the sentence saying a new account's limits start
// from what its platform documents ("" for a platform that documents none).
func limitsNote(platform string) string {
	if channels.ChoosesProvider(platform) {
		return "accounts.form.provider_limits"
	}
	if delivery.DocumentedLimits(platform, nil) == (delivery.Limits{}) {
		return ""
	}
	return "accounts.form.platform_limits." + platform
}

// accountInput reads the account form into the input the API gives too, so that
// dispatch saves both alike. Number fields that are not numbers are reported in errs;
// the form as typed comes back for re-display.
func accountInput(c *gin.Context, old *sending.Account) (sending.AccountInput, views.AccountForm, map[string]string) {
	errs := map[string]string{}
	enabled := c.PostForm("enabled") == "true"
	in := sending.AccountInput{Name: strings.TrimSpace(c.PostForm("name")), Platform: c.PostForm("platform"),
		IsDefault: c.PostForm("is_default") == "true", Enabled: &enabled,
		AllowPrivateNetwork: c.PostForm("allow_private_network") == "true", Config: map[string]string{}, Limits: &delivery.Limits{},
		ConfirmAboveDocumented: c.PostForm("confirm_above_documented") == "true"}
	oldName := ""
	if old != nil {
		oldName = old.Name
	}
	f := views.AccountForm{OldName: oldName, Name: in.Name, Platform: in.Platform, Platforms: channels.Platforms,
		IsDefault: in.IsDefault, Enabled: enabled, AllowPrivateNetwork: in.AllowPrivateNetwork,
		MaxAttempts: strings.TrimSpace(c.PostForm("max_attempts")), ConfirmAboveDocumented: in.ConfirmAboveDocumented}
	in.QuietHours = sending.QuietHours{Start: strings.TrimSpace(c.PostForm("quiet_hours.start")), End: strings.TrimSpace(c.PostForm("quiet_hours.end"))}
	f.QuietHours = in.QuietHours
	if f.MaxAttempts != "" {
		n, err := strconv.Atoi(f.MaxAttempts)
		if err != nil {
			errs["max_attempts"] = tr(c, "accounts.error.whole_number")
		}
		in.MaxAttempts = n
	}
	documented := delivery.DocumentedLimits(in.Platform, map[string]string{"provider": c.PostForm("config.provider")})
	anyLimit := false
	for _, w := range delivery.LimitWindows {
		l := views.LimitField{Key: w.Name, Value: strings.TrimSpace(c.PostForm("limits." + w.Name)), Documented: *w.Of(&documented)}
		if l.Value != "" {
			anyLimit = true
			n, err := strconv.Atoi(l.Value)
			if err != nil {
				errs["limits."+w.Name] = tr(c, "accounts.error.limit_number")
			}
			*w.Of(in.Limits) = n
		}
		f.Limits = append(f.Limits, l)
	}
	values := map[string]string{}
	for _, cf := range channels.Fields(in.Platform) {
		v := strings.TrimSpace(c.PostForm("config." + cf.Key))
		if cf.Multiline {
			v = strings.ReplaceAll(v, "\r\n", "\n") // a browser's text area sends CRLF
		}
		switch {
		case cf.Secret && c.PostForm("config."+cf.Key+".clear") == "true" && !cf.Required:
			in.Config[cf.Key] = "" // cleared on purpose
		case v == "" && cf.Secret:
			// Left empty: dispatch keeps the stored secret, if the address is unchanged.
		case v == "" && !cf.Required:
			// An optional setting left empty takes its default.
		default:
			in.Config[cf.Key] = v
		}
		if !cf.Secret {
			values[cf.Key] = v
		}
	}
	f.Config = configFields(in.Platform, values, old)
	f.Warnings = delivery.UnreachableLimits(*in.Limits)
	f.Excess = delivery.AboveDocumented(*in.Limits, in.Platform, in.Config)
	if old == nil && !anyLimit && channels.ChoosesProvider(in.Platform) {
		// A new sms or voice account with no limit typed starts from its provider's,
		// which the form could not show before the provider was chosen.
		in.Limits, f.Excess = nil, nil
	}
	var typed map[string]string
	in.RetryPolicy, typed = retryInput(c, errs)
	f.Retry = retryRows(nil, typed)
	return in, f, errs
}

// Accounts lists the accounts with their health, limits and live usage.
func (h *Handlers) Accounts(c *gin.Context) {
	h.renderAccounts(c, http.StatusOK, nil)
}

func (h *Handlers) renderAccounts(c *gin.Context, status int, errs map[string]string) {
	ctx := c.Request.Context()
	list, err := h.Store.Sending().Accounts(ctx)
	if err != nil {
		h.fail(c, err)
		return
	}
	rows := make([]views.AccountListRow, len(list))
	for i, a := range list {
		rows[i] = views.AccountListRow{Account: a, Warnings: delivery.UnreachableLimits(a.Limits), Excess: delivery.AboveDocumented(a.Limits, a.Platform, a.Config),
			ConfigWarnings: channels.ConfigWarnings(a.Platform, a.Config)}
	}
	render(c, status, views.AccountsPage(page(c, tr(c, "title.accounts"), "accounts"), rows, h.accountUsage(c, list), h.notice(c), errs))
}

// accountUsage reads each account's current use of its limits.
func (h *Handlers) accountUsage(c *gin.Context, list []sending.Account) []views.AccountRow {
	out := make([]views.AccountRow, len(list))
	for i, a := range list {
		row := views.AccountRow{Name: a.Name, Platform: a.Platform, Enabled: a.Enabled, Healthy: a.Healthy, HealthNote: a.HealthNote}
		usage, err := h.Limiter.AccountUsage(c.Request.Context(), &a)
		if err != nil {
			row.UsageError = err.Error()
		}
		for _, u := range usage {
			row.Usage = append(row.Usage, views.UsageRow{Window: u.Window, Used: u.Used, Limit: u.Limit})
		}
		out[i] = row
	}
	return out
}

// AccountsUsage renders the live usage of every account (an htmx partial polled every 2 s).
func (h *Handlers) AccountsUsage(c *gin.Context) {
	list, err := h.Store.Sending().Accounts(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	render(c, http.StatusOK, views.AccountsUsage(h.accountUsage(c, list)))
}

// AccountUsage is GET /accounts/:name/usage: the account's use of each limited window, as JSON.
func (h *Handlers) AccountUsage(c *gin.Context) {
	a, err := h.Store.Sending().AccountByName(c.Request.Context(), c.Param("name"))
	if isNotFound(err) {
		APIError(c, http.StatusNotFound, "not_found", "no such account", "")
		return
	}
	if err != nil {
		h.apiFail(c, err)
		return
	}
	usage, err := h.Limiter.AccountUsage(c.Request.Context(), a)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	if usage == nil {
		usage = []delivery.Usage{}
	}
	c.JSON(http.StatusOK, usage)
}

// AccountConfigFields renders the settings of ?platform= for the form (an htmx partial).
func (h *Handlers) AccountConfigFields(c *gin.Context) {
	var stored *sending.Account
	if name := c.Query("account"); name != "" {
		if a, err := h.Store.Sending().AccountByName(c.Request.Context(), name); err == nil {
			stored = a
		}
	}
	values := map[string]string{}
	if stored != nil && stored.Platform == c.Query("platform") {
		values = sending.MaskedConfig(stored.Config)
	}
	fields := configFields(c.Query("platform"), values, stored)
	if c.Query("account") == "" {
		// A new account: its limits start from what the platform documents.
		platform := c.Query("platform")
		render(c, http.StatusOK, views.NewAccountPlatformFields(fields, limitFields(delivery.DocumentedLimits(platform, nil), platform, nil), limitsNote(platform)))
		return
	}
	render(c, http.StatusOK, views.AccountConfigFields(fields, nil))
}

// NewAccountForm shows an empty account form.
func (h *Handlers) NewAccountForm(c *gin.Context) {
	a := &sending.Account{Platform: channels.Platforms[0], Enabled: true, MaxAttempts: sending.DefaultMaxAttempts,
		Limits: delivery.DocumentedLimits(channels.Platforms[0], nil)}
	render(c, http.StatusOK, views.AccountFormPage(page(c, tr(c, "title.new_account"), "accounts"), accountForm(a, "", nil), nil))
}

// CreateAccount saves a new account by the rules the API follows too (sending.Desk.SaveAccount).
func (h *Handlers) CreateAccount(c *gin.Context) {
	h.saveAccount(c, nil)
}

// storedAccount loads the account named in the path, or shows 404.
func (h *Handlers) storedAccount(c *gin.Context) (*sending.Account, bool) {
	a, err := h.Store.Sending().AccountByName(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "error.no_account", "Name", c.Param("name")))
		return nil, false
	}
	return a, true
}

// EditAccountForm shows an account's form, its secrets left empty.
func (h *Handlers) EditAccountForm(c *gin.Context) {
	if a, ok := h.storedAccount(c); ok {
		f := accountForm(a, a.Name, a)
		if a.Platform == "voice" {
			f.CallbackURL = strings.TrimSuffix(h.PublicURL, "/") + "/callbacks/voice/" + url.PathEscape(a.Name) + "?token=<callback_token>"
		}
		render(c, http.StatusOK, views.AccountFormPage(page(c, a.Name, "accounts"), f, nil))
	}
}

// UpdateAccount saves an account's changes; empty secret inputs keep the stored secrets
// while the account's address stays the same.
func (h *Handlers) UpdateAccount(c *gin.Context) {
	if old, ok := h.storedAccount(c); ok {
		h.saveAccount(c, old)
	}
}

func (h *Handlers) saveAccount(c *gin.Context, old *sending.Account) {
	in, f, errs := accountInput(c, old)
	title, notice := tr(c, "title.new_account"), "created"
	if old != nil {
		title, notice = old.Name, "saved"
	}
	if len(errs) > 0 {
		render(c, http.StatusUnprocessableEntity, views.AccountFormPage(page(c, title, "accounts"), f, errs))
		return
	}
	a, err := h.Dispatch.Sending().SaveAccount(c.Request.Context(), actor(c), old, in)
	if err != nil {
		// Limits looser than the platform documents are saved once confirmed: the
		// confirmation shows with the error.
		f.AskConfirm = errors.Is(err, sending.ErrAboveDocumented)
		h.failOr(c, err, func(r answer) { render(c, r.Status, views.AccountFormPage(page(c, title, "accounts"), f, r.errs())) },
			saying(kernel.ErrStateChanged, "accounts.error.state_changed"))
		return
	}
	h.redirectNotice(c, "/accounts", notice, tr(c, "accounts.subject", "Name", a.Name))
}

// TestAccount is POST /accounts/:name/test: it checks the saved account's connection and
// credentials without sending a message and shows what the platform answered (an htmx
// partial, or the form again without htmx).
func (h *Handlers) TestAccount(c *gin.Context) {
	a, ok := h.storedAccount(c)
	if !ok {
		return
	}
	res := h.Channels.Probe(c.Request.Context(), a.Channel())
	if err := h.Dispatch.Sending().AccountTested(c.Request.Context(), actor(c), a, res.OK, res.Summary.Rendered()); err != nil {
		h.fail(c, err)
		return
	}
	if c.GetHeader("HX-Request") == "" {
		f := accountForm(a, a.Name, a)
		f.Probe = &res
		render(c, http.StatusOK, views.AccountFormPage(page(c, a.Name, "accounts"), f, nil))
		return
	}
	render(c, http.StatusOK, views.AccountProbe(a.Name, &res))
}

// SetAccountEnabled enables or disables an account.
func (h *Handlers) SetAccountEnabled(c *gin.Context) {
	a, ok := h.storedAccount(c)
	if !ok {
		return
	}
	enabled := c.PostForm("enabled") == "true"
	if err := h.Dispatch.Sending().SetAccountEnabled(c.Request.Context(), actor(c), a, enabled); err != nil {
		h.fail(c, err)
		return
	}
	notice := "disabled"
	if enabled {
		notice = "enabled"
	}
	h.redirectNotice(c, "/accounts", notice, tr(c, "accounts.subject", "Name", a.Name))
}

// DeleteAccount removes an account that has no undelivered messages.
func (h *Handlers) DeleteAccount(c *gin.Context) {
	a, ok := h.storedAccount(c)
	if !ok {
		return
	}
	if err := h.Dispatch.Sending().DeleteAccount(c.Request.Context(), actor(c), a); err != nil {
		h.failOr(c, err, func(r answer) { h.renderAccounts(c, r.Status, r.errs()) }, saying(sending.ErrInUse, "accounts.error.in_use", "Name", a.Name))
		return
	}
	h.redirectNotice(c, "/accounts", "deleted", tr(c, "accounts.subject", "Name", a.Name))
}
