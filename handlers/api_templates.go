package handlers

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"herald/kernel"
	"herald/templates"
)

// templateJSON is the API's template shape (docs/api.md).
type templateJSON struct {
	Name string `json:"name"`
	// DisplayName is what the console shows, in any language; Name stays the API's.
	DisplayName string `json:"display_name"`
	MsgType     string `json:"msg_type"`
	Subject     string `json:"subject"`
	Body        string `json:"body"`
	// HTML is the body's HTML alternative, sent by email only.
	HTML      string   `json:"html"`
	Variables []string `json:"variables"`
	// Fallback is the chain of requests that name none.
	Fallback []string `json:"fallback"`
	// Digest is the digest of sends that name none (null: none).
	Digest *templates.DigestRequest `json:"digest"`
	// ProviderTemplate is the provider's template code an SMS or a call goes as, and
	// ProviderParams map its parameters in order, each "name=expression".
	ProviderTemplate string   `json:"provider_template"`
	ProviderParams   []string `json:"provider_params"`

	// Version is the number of the latest version (an answer only; ignored when sent).
	Version int `json:"version,omitempty"`
}

func toTemplateJSON(t templates.Template) templateJSON {
	vars := []string(t.Variables)
	if vars == nil {
		vars = []string{}
	}
	chain := templates.Chain(t.Fallback)
	if chain == nil {
		chain = []string{}
	}
	return templateJSON{Name: t.Name, DisplayName: t.DisplayName, MsgType: t.MsgType, Subject: t.Subject, Body: t.Body, HTML: t.HTML,
		Variables: vars, Fallback: chain, Digest: templates.TemplateDigest(&t), Version: t.Version,
		ProviderTemplate: t.ProviderTemplate, ProviderParams: paramList(t.ProviderParams)}
}

// input is the body as the service takes it.
func (body templateJSON) input() templates.TemplateInput {
	return templates.TemplateInput{Name: body.Name, DisplayName: body.DisplayName, MsgType: body.MsgType, Subject: body.Subject,
		Body: body.Body, HTML: body.HTML, Variables: body.Variables, Fallback: strings.Join(body.Fallback, ","), Digest: body.Digest,
		ProviderTemplate: body.ProviderTemplate, ProviderParams: body.ProviderParams}
}

// APIListTemplates is GET /api/v1/templates.
func (h *Handlers) APIListTemplates(c *gin.Context) {
	list, err := h.Store.Templates().Templates(c.Request.Context())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := make([]templateJSON, len(list))
	for i, t := range list {
		out[i] = toTemplateJSON(t)
	}
	c.JSON(http.StatusOK, out)
}

// APIGetTemplate is GET /api/v1/templates/:name.
func (h *Handlers) APIGetTemplate(c *gin.Context) {
	t, err := h.Store.Templates().TemplateByName(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, toTemplateJSON(*t))
}

// APICreateTemplate is POST /api/v1/templates.
func (h *Handlers) APICreateTemplate(c *gin.Context) {
	var body templateJSON
	if !decodeJSON(c, &body) {
		return
	}
	t, err := h.Dispatch.Templates().CreateTemplate(c.Request.Context(), actor(c), body.input())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusCreated, toTemplateJSON(*t))
}

// templateUpdateJSON is the body of PUT /api/v1/templates/:name: the template, and
// whether its scheduled and awaiting-approval messages are rendered again from it.
type templateUpdateJSON struct {
	templateJSON
	RerenderWaiting bool `json:"rerender_waiting"`
}

// APIUpdateTemplate is PUT /api/v1/templates/:name; with rerender_waiting, the
// template's messages still waiting are rendered again from the new version, as a
// rollback does.
func (h *Handlers) APIUpdateTemplate(c *gin.Context) {
	var body templateUpdateJSON
	if !decodeJSON(c, &body) {
		return
	}
	if body.Name == "" {
		body.Name = c.Param("name")
	}
	in := body.input()
	in.Rerender = body.RerenderWaiting
	t, err := h.Dispatch.Templates().UpdateTemplate(c.Request.Context(), actor(c), c.Param("name"), in)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, toTemplateJSON(*t))
}

// APIDeleteTemplate is DELETE /api/v1/templates/:name.
func (h *Handlers) APIDeleteTemplate(c *gin.Context) {
	if err := h.Dispatch.Templates().DeleteTemplate(c.Request.Context(), actor(c), c.Param("name")); err != nil {
		h.apiFail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// templateVersionJSON is the API's shape of a template version (docs/api.md).
type templateVersionJSON struct {
	Template  string    `json:"template"`
	Number    int       `json:"number"`
	Actor     string    `json:"actor"`
	CreatedAt time.Time `json:"created_at"`
	MsgType   string    `json:"msg_type"`
	Subject   string    `json:"subject"`
	Body      string    `json:"body"`
	HTML      string    `json:"html"`
	Variables []string  `json:"variables"`
	Fallback  []string  `json:"fallback"`
	// ProviderTemplate and ProviderParams are the version's (templateJSON).
	ProviderTemplate string   `json:"provider_template"`
	ProviderParams   []string `json:"provider_params"`
	// RetiredAt and RetiredBy say when and by whom the version was retired (null: in
	// use).
	RetiredAt *time.Time `json:"retired_at"`
	RetiredBy string     `json:"retired_by,omitempty"`
}

func toTemplateVersionJSON(name string, v templates.TemplateVersion) templateVersionJSON {
	vars := []string(v.Variables)
	if vars == nil {
		vars = []string{}
	}
	chain := templates.Chain(v.Fallback)
	if chain == nil {
		chain = []string{}
	}
	return templateVersionJSON{Template: name, Number: v.Number, Actor: v.Actor, CreatedAt: v.CreatedAt, MsgType: v.MsgType,
		Subject: v.Subject, Body: v.Body, HTML: v.HTML, Variables: vars, Fallback: chain, RetiredAt: v.RetiredAt, RetiredBy: v.RetiredBy,
		ProviderTemplate: v.ProviderTemplate, ProviderParams: paramList(v.ProviderParams)}
}

// APITemplateVersions is GET /api/v1/templates/:name/versions, newest first.
func (h *Handlers) APITemplateVersions(c *gin.Context) {
	ctx := c.Request.Context()
	t, err := h.Store.Templates().TemplateByName(ctx, c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	list, err := h.Store.Templates().TemplateVersions(ctx, t.ID)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := make([]templateVersionJSON, len(list))
	for i, v := range list {
		out[i] = toTemplateVersionJSON(t.Name, v)
	}
	c.JSON(http.StatusOK, out)
}

// APITemplateVersion is GET /api/v1/templates/:name/versions/:n.
func (h *Handlers) APITemplateVersion(c *gin.Context) {
	ctx := c.Request.Context()
	t, err := h.Store.Templates().TemplateByName(ctx, c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	n, err := strconv.Atoi(c.Param("n"))
	if err != nil {
		h.apiFail(c, kernel.ErrNotFound)
		return
	}
	v, err := h.Store.Templates().TemplateVersionOf(ctx, t.ID, n)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, toTemplateVersionJSON(t.Name, *v))
}

// APIRetireTemplateVersion is POST /api/v1/templates/:name/versions/:n/retire: a send
// can no longer pin the version (422 naming template_version), nor a rollback restore
// it; 200 with the version. The current version, or one retired already, is 422 naming
// version.
func (h *Handlers) APIRetireTemplateVersion(c *gin.Context) {
	n, err := strconv.Atoi(c.Param("n"))
	if err != nil {
		h.apiFail(c, kernel.ErrNotFound)
		return
	}
	v, err := h.Dispatch.Templates().RetireTemplateVersion(c.Request.Context(), actor(c), c.Param("name"), n)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, toTemplateVersionJSON(c.Param("name"), *v))
}

// rollbackRequest is the body of POST /api/v1/templates/:name/rollback.
type rollbackRequest struct {
	Version         int  `json:"version"`
	RerenderWaiting bool `json:"rerender_waiting"`
}

// APIRollbackTemplate is POST /api/v1/templates/:name/rollback: a new version equal to
// an older one.
func (h *Handlers) APIRollbackTemplate(c *gin.Context) {
	var body rollbackRequest
	if !decodeJSON(c, &body) {
		return
	}
	t, err := h.Dispatch.Templates().RollbackTemplate(c.Request.Context(), actor(c), c.Param("name"), body.Version, body.RerenderWaiting)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, toTemplateJSON(*t))
}

// paramList is a mapping as the API shows it: [] for none.
func paramList(l templates.StringList) []string {
	if l == nil {
		return []string{}
	}
	return l
}
