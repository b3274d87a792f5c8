package handlers

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/dispatch"
	"herald/models"
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
}

func toTemplateJSON(t models.Template) templateJSON {
	vars := []string(t.Variables)
	if vars == nil {
		vars = []string{}
	}
	chain := models.Chain(t.Fallback)
	if chain == nil {
		chain = []string{}
	}
	return templateJSON{Name: t.Name, DisplayName: t.DisplayName, MsgType: t.MsgType, Subject: t.Subject, Body: t.Body, HTML: t.HTML,
		Variables: vars, Fallback: chain}
}

// input is the body as the service takes it.
func (body templateJSON) input() dispatch.TemplateInput {
	return dispatch.TemplateInput{Name: body.Name, DisplayName: body.DisplayName, MsgType: body.MsgType, Subject: body.Subject,
		Body: body.Body, HTML: body.HTML, Variables: body.Variables, Fallback: strings.Join(body.Fallback, ",")}
}

// APIListTemplates is GET /api/v1/templates.
func (h *Handlers) APIListTemplates(c *gin.Context) {
	list, err := h.Store.Templates(c.Request.Context())
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
	t, err := h.Store.TemplateByName(c.Request.Context(), c.Param("name"))
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
	t, err := h.Dispatch.CreateTemplate(c.Request.Context(), actor(c), body.input())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusCreated, toTemplateJSON(*t))
}

// APIUpdateTemplate is PUT /api/v1/templates/:name.
func (h *Handlers) APIUpdateTemplate(c *gin.Context) {
	var body templateJSON
	if !decodeJSON(c, &body) {
		return
	}
	if body.Name == "" {
		body.Name = c.Param("name")
	}
	t, err := h.Dispatch.UpdateTemplate(c.Request.Context(), actor(c), c.Param("name"), body.input())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, toTemplateJSON(*t))
}

// APIDeleteTemplate is DELETE /api/v1/templates/:name.
func (h *Handlers) APIDeleteTemplate(c *gin.Context) {
	if err := h.Dispatch.DeleteTemplate(c.Request.Context(), actor(c), c.Param("name")); err != nil {
		h.apiFail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
