package handlers

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/internal/linediff"
	"herald/kernel"
	"herald/templates"
	"herald/views"
)

// templateHistory fills the editor's versions and waiting messages of the saved
// template it edits (none for a new one).
func (h *Handlers) templateHistory(c *gin.Context, e *views.TemplateEditor) error {
	if e.Form.OldName == "" {
		return nil
	}
	ctx := c.Request.Context()
	t, err := h.Store.Templates().TemplateByName(ctx, e.Form.OldName)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if e.History.Versions, err = h.Store.Templates().TemplateVersions(ctx, t.ID); err != nil {
		return err
	}
	e.History.Current = t.Version
	e.History.Waiting, err = h.Store.Intake().CountWaitingOfTemplate(ctx, t.ID, kernel.Now())
	return err
}

// TemplateDiff shows two versions of a template side by side (?a=&b=; by default the
// one before the latest and the latest).
func (h *Handlers) TemplateDiff(c *gin.Context) {
	ctx := c.Request.Context()
	t, err := h.Store.Templates().TemplateByName(ctx, c.Param("name"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "error.no_template", "Name", c.Param("name")))
		return
	}
	versions, err := h.Store.Templates().TemplateVersions(ctx, t.ID)
	if err != nil {
		h.fail(c, err)
		return
	}
	d := views.TemplateDiff{Name: t.Name, Label: t.Label(), Versions: versions, A: max(t.Version-1, 1), B: t.Version}
	if n, err := strconv.Atoi(c.Query("a")); err == nil {
		d.A = n
	}
	if n, err := strconv.Atoi(c.Query("b")); err == nil {
		d.B = n
	}
	a, b := versionNumbered(versions, d.A), versionNumbered(versions, d.B)
	if a == nil || b == nil {
		ErrorPage(c, http.StatusNotFound, "versions.no_version", "Name", t.Label())
		return
	}
	d.Sections = diffSections(a, b)
	render(c, http.StatusOK, views.TemplateDiffPage(page(c, tr(c, "versions.diff.title", "Name", t.Label()), "templates"), d))
}

// versionNumbered is the version numbered n of the list, or nil.
func versionNumbered(list []templates.TemplateVersion, n int) *templates.TemplateVersion {
	for i := range list {
		if list[i].Number == n {
			return &list[i]
		}
	}
	return nil
}

// diffSections compares two versions field by field, leaving out the fields both have
// empty.
func diffSections(a, b *templates.TemplateVersion) []views.DiffSection {
	var out []views.DiffSection
	for _, f := range []struct{ name, a, b string }{
		{"msg_type", a.MsgType, b.MsgType}, {"subject", a.Subject, b.Subject}, {"body", a.Body, b.Body}, {"html", a.HTML, b.HTML},
		{"variables", strings.Join(a.Variables, "\n"), strings.Join(b.Variables, "\n")},
		{"fallback", strings.Join(templates.Chain(a.Fallback), "\n"), strings.Join(templates.Chain(b.Fallback), "\n")},
	} {
		if f.a != "" || f.b != "" {
			out = append(out, views.DiffSection{Field: f.name, Rows: linediff.Lines(f.a, f.b)})
		}
	}
	return out
}

// RollbackTemplate makes a new version of the template equal to the chosen older one.
func (h *Handlers) RollbackTemplate(c *gin.Context) {
	name := c.Param("name")
	n, _ := strconv.Atoi(c.PostForm("version"))
	rerender := c.PostForm("waiting") == views.WaitingRerender
	t, err := h.Dispatch.Templates().RollbackTemplate(c.Request.Context(), actor(c), name, n, rerender)
	if err != nil {
		h.failOr(c, err, func(a answer) { h.rerenderEditor(c, a, name, rerender) }, saying(kernel.ErrNotFound, "error.no_template", "Name", name))
		return
	}
	h.redirectNotice(c, "/templates", "saved", tr(c, "versions.rolled_back", "Name", t.Label(), "From", n, "Version", t.Version))
}

// RetireTemplateVersion retires the chosen version of the template (POST
// /templates/:name/retire, form field version): sends can no longer pin it.
func (h *Handlers) RetireTemplateVersion(c *gin.Context) {
	name := c.Param("name")
	n, _ := strconv.Atoi(c.PostForm("version"))
	_, err := h.Dispatch.Templates().RetireTemplateVersion(c.Request.Context(), actor(c), name, n)
	if err != nil {
		h.failOr(c, err, func(a answer) { h.rerenderEditor(c, a, name, false) }, saying(kernel.ErrNotFound, "error.no_template", "Name", name))
		return
	}
	h.redirectNotice(c, "/templates", "saved", tr(c, "versions.retired_note", "Name", name, "Version", n))
}

// rerenderEditor shows the saved template's editor again with errors of a form on it
// other than the editor's own (the rollback).
func (h *Handlers) rerenderEditor(c *gin.Context, refused answer, name string, rerender bool) {
	t, err := h.Store.Templates().TemplateByName(c.Request.Context(), name)
	if err != nil {
		h.fail(c, err)
		return
	}
	f := savedTemplateForm(c, t)
	f.Rerender = rerender
	h.renderTemplateForm(c, refused.Status, f, refused.errs())
}
