package handlers

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"herald/channels"
	"herald/delivery"
	"herald/kernel"
	"herald/sending"
)

// SecretMask stands in for a stored secret on reads; sending it back keeps the secret.
const SecretMask = "********"

// accountJSON is the API's account shape (docs/api.md).
type accountJSON struct {
	Name                string         `json:"name"`
	Platform            string         `json:"platform"`
	IsDefault           bool           `json:"is_default"`
	Enabled             *bool          `json:"enabled"`
	AllowPrivateNetwork bool           `json:"allow_private_network"`
	MaxAttempts         int            `json:"max_attempts"`
	Config              map[string]any `json:"config"`
	// Limits absent: a new account starts from its platform's documented limits, an
	// update keeps the account's.
	Limits *delivery.Limits `json:"limits"`
	// ConfirmAboveDocumented confirms limits looser than the platform documents (input
	// only): without it such a change is refused with 422 naming the limit.
	ConfirmAboveDocumented bool `json:"confirm_above_documented,omitempty"`
	// RetryPolicy adjusts the default retries per error class; omitted classes and
	// fields keep the defaults.
	RetryPolicy sending.RetryPolicy `json:"retry_policy,omitempty"`
	// QuietHours, when set, holds normal and low messages in a daily window.
	QuietHours *sending.QuietHours `json:"quiet_hours,omitempty"`
	Healthy    *bool               `json:"healthy,omitempty"`
	HealthNote string              `json:"health_note,omitempty"`
	// SecretsUnreadable says the stored settings cannot be decrypted with
	// HERALD_SECRET_KEY: config is empty and an update must give them again (read-only).
	SecretsUnreadable bool `json:"secrets_unreadable,omitempty"`
	// Warnings name limits that can never be reached and settings that give up
	// encryption (read-only; ignored on input).
	Warnings []string `json:"warnings,omitempty"`
}

// toAccountJSON renders an account with its secrets masked.
func toAccountJSON(a sending.Account) accountJSON {
	cfg := map[string]any{}
	secret := channels.SecretKeys[a.Platform]
	for k, v := range sending.MaskedConfig(a.Config) {
		if slices.Contains(secret, k) && v != "" {
			v = SecretMask
		}
		cfg[k] = v
	}
	enabled, healthy := a.Enabled, a.Healthy
	var quiet *sending.QuietHours
	if a.QuietHours.Set() {
		quiet = &a.QuietHours
	}
	return accountJSON{QuietHours: quiet, Name: a.Name, Platform: a.Platform, IsDefault: a.IsDefault, Enabled: &enabled,
		AllowPrivateNetwork: a.AllowPrivateNetwork, MaxAttempts: a.MaxAttempts, Config: cfg, Limits: &a.Limits,
		RetryPolicy: a.RetryPolicy, Healthy: &healthy, HealthNote: a.HealthNote, SecretsUnreadable: a.Unreadable,
		Warnings: append(append(delivery.LimitWarnings(a.Limits), excessWarnings(a)...), configWarnings(a)...)}
}

// excessWarnings says, in English, which limits are looser than the platform documents.
func excessWarnings(a sending.Account) []string {
	var out []string
	for _, e := range delivery.AboveDocumented(a.Limits, a.Platform, a.Config) {
		out = append(out, e.String())
	}
	return out
}

// configWarnings says, in English, what an account's settings give up.
func configWarnings(a sending.Account) []string {
	var out []string
	for _, n := range channels.ConfigWarnings(a.Platform, a.Config) {
		out = append(out, n.String())
	}
	return out
}

// accountInput turns the API's account shape into what dispatch saves. A secret sent
// back masked is left out, which keeps the stored one as the console's empty input does.
func (in accountJSON) accountInput() (sending.AccountInput, error) {
	out := sending.AccountInput{Name: in.Name, Platform: in.Platform, IsDefault: in.IsDefault, Enabled: in.Enabled,
		AllowPrivateNetwork: in.AllowPrivateNetwork, MaxAttempts: in.MaxAttempts, Limits: in.Limits,
		ConfirmAboveDocumented: in.ConfirmAboveDocumented, RetryPolicy: in.RetryPolicy, Config: map[string]string{}}
	if in.QuietHours != nil {
		out.QuietHours = *in.QuietHours
	}
	for k, v := range in.Config {
		s, err := configString("config."+k, v)
		if err != nil {
			return out, err
		}
		if s != SecretMask {
			out.Config[k] = s
		}
	}
	return out, nil
}

// configString reads one config value of the API's account shape; a value that is not
// a string, a number or a boolean is a *kernel.FieldError naming field.
func configString(field string, v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case float64:
		return formatFloat(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	case nil:
		return "", nil
	}
	return "", kernel.Invalid(field, "accounts.error.config_type")
}

// APIListAccounts is GET /api/v1/accounts.
func (h *Handlers) APIListAccounts(c *gin.Context) {
	list, err := h.Store.Sending().Accounts(c.Request.Context())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := make([]accountJSON, len(list))
	for i, a := range list {
		out[i] = toAccountJSON(a)
	}
	c.JSON(http.StatusOK, out)
}

// APIGetAccount is GET /api/v1/accounts/:name.
func (h *Handlers) APIGetAccount(c *gin.Context) {
	a, err := h.Store.Sending().AccountByName(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, toAccountJSON(*a))
}

// APICreateAccount is POST /api/v1/accounts.
func (h *Handlers) APICreateAccount(c *gin.Context) {
	h.apiSaveAccount(c, nil, http.StatusCreated)
}

// APIUpdateAccount is PUT /api/v1/accounts/:name.
func (h *Handlers) APIUpdateAccount(c *gin.Context) {
	old, err := h.Store.Sending().AccountByName(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	h.apiSaveAccount(c, old, http.StatusOK)
}

func (h *Handlers) apiSaveAccount(c *gin.Context, old *sending.Account, status int) {
	var body accountJSON
	if !decodeJSON(c, &body) {
		return
	}
	if body.Name == "" && old != nil {
		body.Name = old.Name
	}
	in, err := body.accountInput()
	var a *sending.Account
	if err == nil {
		a, err = h.Dispatch.Sending().SaveAccount(c.Request.Context(), actor(c), old, in)
	}
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(status, toAccountJSON(*a))
}

// APIDeleteAccount is DELETE /api/v1/accounts/:name; refused while it has undelivered messages.
func (h *Handlers) APIDeleteAccount(c *gin.Context) {
	a, err := h.Store.Sending().AccountByName(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	if err := h.Dispatch.Sending().DeleteAccount(c.Request.Context(), actor(c), a); err != nil {
		h.apiFail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
