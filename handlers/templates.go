package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/audit"
	"herald/channels"
	"herald/directory"
	"herald/dispatch"
	"herald/kernel"
	"herald/templates"
	"herald/views"
)

// Templates lists the templates.
func (h *Handlers) Templates(c *gin.Context) {
	list, err := h.Store.Templates().Templates(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	render(c, http.StatusOK, views.TemplatesPage(page(c, tr(c, "title.templates"), "templates"), list, h.notice(c)))
}

// splitVariables reads the comma-separated variables field.
func splitVariables(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// parseSamples reads "name = value" lines.
func parseSamples(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		name, value, ok := strings.Cut(line, "=")
		if name = strings.TrimSpace(name); ok && name != "" {
			out[name] = strings.TrimSpace(value)
		}
	}
	return out
}

// sampleLines prefills the sample values of a template's variables.
func sampleLines(c *gin.Context, vars []string) string {
	var b strings.Builder
	for _, v := range vars {
		fmt.Fprintf(&b, "%s = %s\n", v, tr(c, "templates.sample.value", "Name", v))
	}
	return b.String()
}

func templateFormOf(c *gin.Context, oldName string) views.TemplateForm {
	f := views.TemplateForm{OldName: oldName, Name: strings.TrimSpace(c.PostForm("name")), DisplayName: c.PostForm("display_name"), MsgType: c.PostForm("msg_type"),
		Subject: c.PostForm("subject"), Body: c.PostForm("body"), HTML: c.PostForm("html"), Variables: c.PostForm("variables"), Samples: c.PostForm("samples"),
		Fallback: c.PostForm("fallback"), ProviderTemplate: strings.TrimSpace(c.PostForm("provider_template")),
		ProviderParams: c.PostForm("provider_params")}
	f.Digest = digestForm(c)
	f.Rerender = c.PostForm("waiting") == views.WaitingRerender
	f.TestRecipient, _ = strconv.ParseInt(c.PostForm("test_recipient"), 10, 64)
	f.TestAccount, _ = strconv.ParseInt(c.PostForm("test_account"), 10, 64)
	return f
}

// templateInput is the form as the service takes it, the same as the API's body.
func templateInput(f views.TemplateForm) templates.TemplateInput {
	return templates.TemplateInput{Name: f.Name, DisplayName: f.DisplayName, MsgType: f.MsgType, Subject: f.Subject, Body: f.Body,
		HTML: f.HTML, Variables: splitVariables(f.Variables), Fallback: f.Fallback, Rerender: f.Rerender,
		Digest: digestRequest(f.Digest), ProviderTemplate: f.ProviderTemplate, ProviderParams: paramLines(f.ProviderParams)}
}

// paramLines reads the editor's provider parameters, one name=expression a line.
func paramLines(s string) []string {
	var out []string
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// samplePerson is whom a preview renders for when no one is chosen, named in the
// language of the request.
func samplePerson(c *gin.Context) directory.Recipient {
	return directory.Recipient{ExternalID: "E0000", Name: tr(c, "templates.sample.person"),
		Branch: tr(c, "templates.sample.branch"), Department: tr(c, "templates.sample.department")}
}

// preview renders the form's template with its sample values, or says why it cannot.
// It checks the template exactly as saving does (templates.CompileTemplate).
func (h *Handlers) preview(c *gin.Context, f views.TemplateForm) views.TemplatePreview {
	person := samplePerson(c)
	if f.TestRecipient != 0 {
		if people, err := h.Store.Directory().RecipientsByIDs(c.Request.Context(), []int64{f.TestRecipient}); err == nil && len(people) == 1 {
			person = people[0]
		}
	}
	out := views.TemplatePreview{For: tr(c, "templates.preview.for", "Name", person.Name)}
	in := templateInput(f)
	t := &templates.Template{Name: in.Name, MsgType: in.MsgType, Subject: in.Subject, Body: in.Body, HTML: in.HTML, Variables: in.Variables,
		ProviderTemplate: in.ProviderTemplate, ProviderParams: in.ProviderParams}
	if t.MsgType == "" {
		t.MsgType = "text"
	}
	if t.Name == "" {
		t.Name = "preview" // the name does not change how it renders
	}
	compiled, err := templates.CompileTemplate(t)
	if err != nil {
		out.Errors = []string{templateFieldMessage(c, err)}
		return out
	}
	samples := parseSamples(f.Samples)
	vars := map[string]string{}
	names := t.VariableNames()
	for _, v := range names {
		value, ok := samples[v]
		if !ok {
			value = "‹" + v + "›"
			out.Notes = append(out.Notes, tr(c, "templates.preview.no_sample", "Name", v, "Shown", value))
		}
		vars[v] = value
	}
	for name := range samples {
		if !slices.Contains(names, name) {
			out.Notes = append(out.Notes, tr(c, "templates.preview.undeclared_sample", "Name", name))
		}
	}
	slices.Sort(out.Notes)
	if out.Subject, out.Body, err = compiled.Render(c.Request.Context(), "", vars, &person); err == nil {
		out.HTML, err = compiled.RenderHTML(c.Request.Context(), "", vars, &person)
	}
	if err == nil && t.ProviderTemplate != "" {
		// An SMS's text as the person receives it, and how it is billed.
		out.Chars, out.Segments = channels.Segments(out.Body)
		var params []channels.Param
		params, err = compiled.RenderParams(c.Request.Context(), "sms", vars, &person)
		for _, p := range params {
			out.Params = append(out.Params, p.Name+" = "+p.Value)
		}
	}
	if err != nil {
		out.Errors = []string{templateFieldMessage(c, err)}
	}
	return out
}

// templateFormLabels are the editor's labels of the fields a template's validation
// names (templates.form.<label>).
var templateFormLabels = map[string]string{"name": "name", "display_name": "display_name", "msg_type": "type",
	"variables": "variables", "subject": "subject", "body": "body", "html": "html", "provider_template": "provider_template"}

// templateFieldMessage is a validation message of the editor's preview, with the field
// named as the editor labels it ("正文：第 1 行：…").
func templateFieldMessage(c *gin.Context, err error) string {
	fe, ok := errors.AsType[*kernel.FieldError](err)
	if !ok {
		return fieldMessage(c, err)
	}
	label := fe.Field
	if l, ok := templateFormLabels[fe.Field]; ok {
		label = tr(c, "templates.form."+l)
	}
	return tr(c, "compose.field_error", "Field", label, "Message", fe.In(c.Request.Context()))
}

// TemplatePreview renders the live preview of the editor's current input (an htmx partial).
func (h *Handlers) TemplatePreview(c *gin.Context) {
	render(c, http.StatusOK, views.TemplatePreviewPanel(h.preview(c, templateFormOf(c, ""))))
}

func (h *Handlers) renderTemplateForm(c *gin.Context, status int, f views.TemplateForm, errs map[string]string) {
	ctx := c.Request.Context()
	people, err := h.Store.Directory().ActiveRecipients(ctx, composeListLimit)
	if err != nil {
		h.fail(c, err)
		return
	}
	accounts, err := h.Store.Sending().EnabledAccounts(ctx)
	if err != nil {
		h.fail(c, err)
		return
	}
	title := tr(c, "templates.form.new_heading")
	if f.OldName != "" {
		title = f.OldName
		if f.OldDisplayName != "" {
			title = f.OldDisplayName
		}
	}
	e := views.TemplateEditor{Form: f, Preview: h.preview(c, f), People: people, Accounts: accounts}
	if err := h.templateHistory(c, &e); err != nil {
		h.fail(c, err)
		return
	}
	render(c, status, views.TemplateFormPage(page(c, title, "templates"), e, errs))
}

// NewTemplateForm shows an empty template editor: a new template starts blank, not as a
// copy of an example someone would have to clear first.
func (h *Handlers) NewTemplateForm(c *gin.Context) {
	h.renderTemplateForm(c, http.StatusOK, views.TemplateForm{MsgType: "text"}, nil)
}

// CreateTemplate saves a new template, validated as the API validates it.
func (h *Handlers) CreateTemplate(c *gin.Context) {
	f := templateFormOf(c, "")
	t, err := h.Dispatch.Templates().CreateTemplate(c.Request.Context(), actor(c), templateInput(f))
	if errs, ok := fieldErrors(c, err); ok {
		h.renderTemplateForm(c, http.StatusUnprocessableEntity, f, errs)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.redirectNotice(c, "/templates", "created", tr(c, "templates.subject", "Name", t.Label()))
}

// EditTemplateForm shows a template in the editor (read-only for viewers).
func (h *Handlers) EditTemplateForm(c *gin.Context) {
	t, err := h.Store.Templates().TemplateByName(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "error.no_template", "Name", c.Param("name")))
		return
	}
	h.renderTemplateForm(c, http.StatusOK, savedTemplateForm(c, t), nil)
}

// savedTemplateForm is the editor filled with a saved template.
func savedTemplateForm(c *gin.Context, t *templates.Template) views.TemplateForm {
	return views.TemplateForm{OldName: t.Name, OldDisplayName: t.DisplayName, Name: t.Name,
		DisplayName: t.DisplayName, MsgType: t.MsgType, Subject: t.Subject,
		Body: t.Body, HTML: t.HTML, Variables: strings.Join(t.Variables, ", "), Samples: sampleLines(c, t.VariableNames()),
		Fallback: strings.Join(templates.Chain(t.Fallback), ", "), Digest: digestFormOf(templates.TemplateDigest(t)),
		ProviderTemplate: t.ProviderTemplate, ProviderParams: strings.Join(t.ProviderParams, "\n")}
}

// UpdateTemplate saves a changed template (it may be renamed).
func (h *Handlers) UpdateTemplate(c *gin.Context) {
	f := templateFormOf(c, c.Param("name"))
	t, err := h.Dispatch.Templates().UpdateTemplate(c.Request.Context(), actor(c), f.OldName, templateInput(f))
	if err != nil {
		h.failOr(c, err, func(a answer) { h.renderTemplateForm(c, a.Status, f, a.errs()) }, saying(kernel.ErrNotFound, "error.no_template", "Name", f.OldName))
		return
	}
	h.redirectNotice(c, "/templates", "saved", tr(c, "templates.subject", "Name", t.Label()))
}

// DeleteTemplate removes a template.
func (h *Handlers) DeleteTemplate(c *gin.Context) {
	name := c.Param("name")
	err := h.Dispatch.Templates().DeleteTemplate(c.Request.Context(), actor(c), name)
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "error.no_template", "Name", name))
		return
	}
	h.redirectNotice(c, "/templates", "deleted", tr(c, "templates.subject", "Name", name))
}

// TestSendTemplate sends the saved template to one person through intake, like any
// other message, and shows its batch.
func (h *Handlers) TestSendTemplate(c *gin.Context) {
	f := templateFormOf(c, c.Param("name"))
	errs := map[string]string{}
	switch {
	case f.TestRecipient == 0:
		errs["test"] = tr(c, "templates.test.choose_person", "Field", tr(c, "templates.form.render_for"))
	case f.TestAccount == 0:
		errs["test"] = tr(c, "templates.test.choose_account")
	}
	if len(errs) > 0 {
		h.renderTemplateForm(c, http.StatusUnprocessableEntity, f, errs)
		return
	}
	u := CurrentUser(c)
	res, err := h.Dispatch.Submit(c.Request.Context(), dispatch.Request{Source: "console", Actor: u.Username,
		AccountID: f.TestAccount, RecipientIDs: []int64{f.TestRecipient}, Template: f.OldName, Variables: parseSamples(f.Samples),
		AuditIP: c.ClientIP()})
	if _, ok := fieldErrors(c, err); ok {
		h.renderTemplateForm(c, http.StatusUnprocessableEntity, f, map[string]string{"test": fieldMessage(c, err)})
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.audit(c, u.Username, "template.test_send", "batch", res.Batch.ID, "template "+f.OldName,
		audit.Params{"template": f.OldName, "batch": res.Batch.ID})
	c.Redirect(http.StatusSeeOther, "/batches/"+res.Batch.ID)
}
