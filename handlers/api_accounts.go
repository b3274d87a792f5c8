package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/channels"
	"herald/models"
)

// SecretMask stands in for a stored secret on reads; sending it back keeps the secret.
const SecretMask = "********"

// accountJSON is the API's account shape (DESIGN.md section 8).
type accountJSON struct {
	Name                string         `json:"name"`
	Platform            string         `json:"platform"`
	IsDefault           bool           `json:"is_default"`
	Enabled             *bool          `json:"enabled"`
	AllowPrivateNetwork bool           `json:"allow_private_network"`
	MaxAttempts         int            `json:"max_attempts"`
	Config              map[string]any `json:"config"`
	Limits              models.Limits  `json:"limits"`
	// RetryPolicy adjusts the default retries per error class; omitted classes and
	// fields keep the defaults.
	RetryPolicy models.RetryPolicy `json:"retry_policy,omitempty"`
	Healthy     *bool              `json:"healthy,omitempty"`
	HealthNote  string             `json:"health_note,omitempty"`
	// Warnings name limits that can never be reached (read-only; ignored on input).
	Warnings []string `json:"warnings,omitempty"`
}

// toAccountJSON renders an account with its secrets masked.
func toAccountJSON(a models.Account) accountJSON {
	cfg := map[string]any{}
	secret := channels.SecretKeys[a.Platform]
	for k, v := range a.Config {
		if slices.Contains(secret, k) && v != "" {
			v = SecretMask
		}
		cfg[k] = v
	}
	enabled, healthy := a.Enabled, a.Healthy
	return accountJSON{Name: a.Name, Platform: a.Platform, IsDefault: a.IsDefault, Enabled: &enabled,
		AllowPrivateNetwork: a.AllowPrivateNetwork, MaxAttempts: a.MaxAttempts, Config: cfg, Limits: a.Limits,
		RetryPolicy: a.RetryPolicy, Healthy: &healthy, HealthNote: a.HealthNote, Warnings: models.LimitWarnings(a.Limits)}
}

// AccountFromInput validates an account as the console and the API submit it. old is
// the stored account when updating (its secrets are kept where the input masks them).
func AccountFromInput(in accountJSON, old *models.Account) (*models.Account, error) {
	a := &models.Account{Name: strings.TrimSpace(in.Name), Platform: in.Platform, IsDefault: in.IsDefault,
		Enabled: in.Enabled == nil || *in.Enabled, AllowPrivateNetwork: in.AllowPrivateNetwork,
		MaxAttempts: in.MaxAttempts, Limits: in.Limits, RetryPolicy: in.RetryPolicy.Compact(), Healthy: true,
		Config: map[string]string{}}
	if a.MaxAttempts == 0 {
		a.MaxAttempts = models.DefaultMaxAttempts
	}
	if old != nil {
		a.ID, a.CreatedAt, a.Healthy, a.HealthNote = old.ID, old.CreatedAt, old.Healthy, old.HealthNote
		if a.Platform == "" {
			a.Platform = old.Platform
		}
	}
	if !slices.Contains(channels.Platforms, a.Platform) {
		return nil, &models.FieldError{Field: "platform", Message: "must be one of " + strings.Join(channels.Platforms, ", ")}
	}
	for k, v := range in.Config {
		s, err := configString(v)
		if err != nil {
			return nil, &models.FieldError{Field: "config." + k, Message: err.Error()}
		}
		if s == SecretMask && old != nil && old.Platform == a.Platform {
			s = old.Config[k]
		}
		a.Config[k] = s
	}
	// A secret left out on update keeps its stored value.
	if old != nil && old.Platform == a.Platform {
		for _, k := range channels.SecretKeys[a.Platform] {
			if _, given := in.Config[k]; !given && old.Config[k] != "" {
				a.Config[k] = old.Config[k]
			}
		}
	}
	if err := models.ValidateAccount(a); err != nil {
		return nil, err
	}
	if err := channels.ValidateConfig(a.Platform, a.Config, a.AllowPrivateNetwork); err != nil {
		var ce *channels.ConfigError
		if errors.As(err, &ce) {
			return nil, &models.FieldError{Field: "config." + ce.Key, Message: ce.Message}
		}
		return nil, &models.FieldError{Field: "config", Message: err.Error()}
	}
	return a, nil
}

func configString(v any) (string, error) {
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
	return "", fmt.Errorf("must be a string or a number")
}

// APIListAccounts is GET /api/v1/accounts.
func (h *Handlers) APIListAccounts(c *gin.Context) {
	list, err := h.Store.Accounts(c.Request.Context())
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
	a, err := h.Store.AccountByName(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, toAccountJSON(*a))
}

// APICreateAccount is POST /api/v1/accounts.
func (h *Handlers) APICreateAccount(c *gin.Context) {
	var body accountJSON
	if !decodeJSON(c, &body) {
		return
	}
	a, err := AccountFromInput(body, nil)
	if err == nil {
		err = h.Store.SaveAccount(c.Request.Context(), a)
	}
	if err != nil {
		h.apiFail(c, err)
		return
	}
	h.accountsChanged()
	h.auditAPI(c, "account.create", "account", a.Name, a.Platform)
	c.JSON(http.StatusCreated, toAccountJSON(*a))
}

// APIUpdateAccount is PUT /api/v1/accounts/:name.
func (h *Handlers) APIUpdateAccount(c *gin.Context) {
	var body accountJSON
	if !decodeJSON(c, &body) {
		return
	}
	old, err := h.Store.AccountByName(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	if body.Name == "" {
		body.Name = old.Name
	}
	a, err := AccountFromInput(body, old)
	if err == nil {
		err = h.Store.SaveAccount(c.Request.Context(), a)
	}
	if err != nil {
		h.apiFail(c, err)
		return
	}
	h.accountsChanged()
	h.auditAPI(c, "account.update", "account", a.Name, "")
	c.JSON(http.StatusOK, toAccountJSON(*a))
}

// APIDeleteAccount is DELETE /api/v1/accounts/:name; refused while it has undelivered messages.
func (h *Handlers) APIDeleteAccount(c *gin.Context) {
	a, err := h.Store.AccountByName(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	err = h.Store.DeleteAccount(c.Request.Context(), a.ID)
	if errors.Is(err, models.ErrInUse) {
		APIError(c, http.StatusConflict, "in_use", "the account has undelivered messages; disable it instead, or wait", "")
		return
	}
	if err != nil {
		h.apiFail(c, err)
		return
	}
	h.accountsChanged()
	h.auditAPI(c, "account.delete", "account", a.Name, "")
	c.Status(http.StatusNoContent)
}

// accountsChanged makes this process's intake see an account change at once (other
// processes see it within their cache's few seconds).
func (h *Handlers) accountsChanged() {
	if h.Dispatch != nil && h.Dispatch.Accounts != nil {
		h.Dispatch.Accounts.Forget()
	}
}
