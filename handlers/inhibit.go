package handlers

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/delivery"
	"herald/inhibit"
	"herald/kernel"
	"herald/views"
)

// The console's inhibition rules, reached from the alerts page as the escalation
// policies and the integrations are (the navigation keeps to one row at 1366 px): every
// change goes through the inhibition service (h.inhibition()), as the API's does.

// InhibitRules lists the inhibition rules.
func (h *Handlers) InhibitRules(c *gin.Context) {
	list, err := h.inhibition().Rules(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	render(c, http.StatusOK, views.InhibitRulesPage(page(c, tr(c, "inhibit.title"), "alerts"), list, h.notice(c)))
}

// NewInhibitRuleForm starts a rule.
func (h *Handlers) NewInhibitRuleForm(c *gin.Context) {
	h.renderInhibitRuleForm(c, http.StatusOK, views.InhibitRuleForm{}, nil)
}

// EditInhibitRuleForm shows a rule to change or delete.
func (h *Handlers) EditInhibitRuleForm(c *gin.Context) {
	r, ok := h.inhibitRule(c)
	if !ok {
		return
	}
	f := views.InhibitRuleForm{ID: r.ID, Name: r.Name, Source: views.MatcherLines(r.Source), Target: views.MatcherLines(r.Target),
		Equal: strings.Join(r.Equal, ", ")}
	h.renderInhibitRuleForm(c, http.StatusOK, f, nil)
}

// CreateInhibitRule saves a new rule.
func (h *Handlers) CreateInhibitRule(c *gin.Context) {
	f := inhibitRuleFormOf(c, 0)
	in, err := inhibitRuleInputOf(f)
	if err == nil {
		_, err = h.inhibition().CreateRule(c.Request.Context(), actor(c), in)
	}
	if err != nil {
		h.inhibitRuleFormFailed(c, f, err)
		return
	}
	h.redirectNotice(c, "/inhibit-rules", "created", f.Name)
}

// UpdateInhibitRule saves a rule's changes.
func (h *Handlers) UpdateInhibitRule(c *gin.Context) {
	r, ok := h.inhibitRule(c)
	if !ok {
		return
	}
	f := inhibitRuleFormOf(c, r.ID)
	in, err := inhibitRuleInputOf(f)
	if err == nil {
		_, err = h.inhibition().UpdateRule(c.Request.Context(), actor(c), r.ID, in)
	}
	if err != nil {
		h.inhibitRuleFormFailed(c, f, err)
		return
	}
	h.redirectNotice(c, "/inhibit-rules", "saved", f.Name)
}

// DeleteInhibitRule removes a rule; the alerts it inhibits stay so until their sources
// end.
func (h *Handlers) DeleteInhibitRule(c *gin.Context) {
	r, ok := h.inhibitRule(c)
	if !ok {
		return
	}
	if err := h.inhibition().DeleteRule(c.Request.Context(), actor(c), r.ID); err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "inhibit.none"))
		return
	}
	h.redirectNotice(c, "/inhibit-rules", "deleted", r.Name)
}

// inhibitRule reads the rule of the route's :id; false after answering 404.
func (h *Handlers) inhibitRule(c *gin.Context) (*inhibit.Rule, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		err = kernel.ErrNotFound
	}
	var r *inhibit.Rule
	if err == nil {
		r, err = h.inhibition().Rule(c.Request.Context(), id)
	}
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "inhibit.none"))
		return nil, false
	}
	return r, true
}

// inhibitRuleFormOf reads the rule form; id names the rule edited.
func inhibitRuleFormOf(c *gin.Context, id int64) views.InhibitRuleForm {
	return views.InhibitRuleForm{ID: id, Name: strings.TrimSpace(c.PostForm("name")), Source: strings.TrimSpace(c.PostForm("source")),
		Target: strings.TrimSpace(c.PostForm("target")), Equal: strings.TrimSpace(c.PostForm("equal"))}
}

// inhibitRuleInputOf parses the form's matchers (one a line) and labels (separated by
// commas); a line that is no matcher is a *kernel.FieldError naming its side.
func inhibitRuleInputOf(f views.InhibitRuleForm) (inhibit.RuleInput, error) {
	in := inhibit.RuleInput{Name: f.Name}
	for _, side := range []struct {
		field, text string
		into        *[]delivery.Matcher
	}{{"source", f.Source, &in.Source}, {"target", f.Target, &in.Target}} {
		for _, line := range strings.Split(side.text, "\n") {
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			m, ok := delivery.ParseMatcher(line)
			if !ok {
				return in, kernel.Invalid(side.field, "inhibit.check.line", "Line", line)
			}
			*side.into = append(*side.into, m)
		}
	}
	for _, l := range strings.Split(f.Equal, ",") {
		if l = strings.TrimSpace(l); l != "" {
			in.Equal = append(in.Equal, l)
		}
	}
	return in, nil
}

// inhibitRuleFormFailed shows the form again with err beside its field: a matcher's
// error beside its side, a label's beside the labels.
func (h *Handlers) inhibitRuleFormFailed(c *gin.Context, f views.InhibitRuleForm, err error) {
	h.failOr(c, err, func(a answer) {
		field, _, _ := strings.Cut(strings.SplitN(a.Field, "[", 2)[0], ".")
		switch field {
		case "name", "source", "target", "equal":
		default:
			field = ""
		}
		h.renderInhibitRuleForm(c, a.Status, f, map[string]string{field: a.Message})
	}, saying(kernel.ErrNotFound, "inhibit.none"))
}

// renderInhibitRuleForm shows the rule form.
func (h *Handlers) renderInhibitRuleForm(c *gin.Context, status int, f views.InhibitRuleForm, errs map[string]string) {
	title := tr(c, "inhibit.new")
	if f.ID != 0 {
		title = tr(c, "inhibit.edit_title", "Name", f.Name)
	}
	render(c, status, views.InhibitRuleFormPage(page(c, title, "alerts"), f, errs))
}
