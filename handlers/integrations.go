package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/gin-gonic/gin"

	"herald/channels"
	"herald/delivery"
	"herald/inbound"
	"herald/incident"
	"herald/kernel"
	"herald/sending"
	"herald/templates"
	"herald/views"
)

// The console's integrations pages: every change goes through the integrations'
// service (h.Dispatch.Inbound()), as the API's does.

// Integrations lists the integrations.
func (h *Handlers) Integrations(c *gin.Context) {
	list, err := h.Dispatch.Inbound().Integrations(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	rows := make([]views.IntegrationRow, len(list))
	for i := range list {
		rows[i] = views.IntegrationRow{Integration: list[i], PushURL: h.pushURL(list[i].Name)}
	}
	render(c, http.StatusOK, views.IntegrationsPage(page(c, tr(c, "integrations.console.title"), "alerts"), rows, h.notice(c)))
}

// Integration is one integration's page: its routes and what came in through it.
func (h *Handlers) Integration(c *gin.Context) {
	ctx := c.Request.Context()
	it, err := h.Dispatch.Inbound().Integration(ctx, c.Param("name"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "integrations.console.none"))
		return
	}
	events, err := h.Dispatch.Inbound().Events(ctx, it.Name)
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "integrations.console.none"))
		return
	}
	v := views.IntegrationView{Integration: it, PushURL: h.pushURL(it.Name), Events: events, Notice: h.notice(c)}
	render(c, http.StatusOK, views.IntegrationPage(page(c, it.Name, "alerts"), v))
}

// NewIntegrationForm starts an integration: one route row to fill in.
func (h *Handlers) NewIntegrationForm(c *gin.Context) {
	f := views.IntegrationForm{Format: inbound.FormatAlertmanager, NotifyOnResolve: true,
		Routes: []views.RouteForm{{Matchers: make([]delivery.Matcher, 1)}}}
	h.renderIntegrationForm(c, http.StatusOK, f, nil)
}

// EditIntegrationForm shows an integration's routes and settings to change.
func (h *Handlers) EditIntegrationForm(c *gin.Context) {
	it, err := h.Dispatch.Inbound().Integration(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "integrations.console.none"))
		return
	}
	f := views.IntegrationForm{Original: it.Name, Name: it.Name, Format: it.Format, NotifyOnResolve: it.NotifyOnResolve, Language: it.Language}
	for _, r := range it.Routes {
		f.Routes = append(f.Routes, routeFormOf(r))
	}
	if it.DefaultRoute != nil {
		f.Default = routeFormOf(*it.DefaultRoute)
	}
	if len(it.MappingFields) > 0 {
		f.Mapping = indentJSON(it.MappingFields)
	}
	if len(it.ValueMap) > 0 {
		f.ValueMap = indentJSON(it.ValueMap)
	}
	h.renderIntegrationForm(c, http.StatusOK, f, nil)
}

// routeFormOf shows a saved route on the form, with a blank matcher row to add one.
func routeFormOf(r inbound.Route) views.RouteForm {
	return views.RouteForm{Matchers: append(append([]delivery.Matcher{}, r.Matchers...), delivery.Matcher{}),
		Policy: r.Policy, Template: r.Template, Account: r.Account, Platform: r.Platform, Priority: r.Priority,
		Recipients: strings.Join(r.Recipients, ", "), Noise: noiseFormOf(r.Rules)}
}

// noiseFormOf shows a route's noise settings on the form; a count of 0 (none, or the
// default) shows empty.
func noiseFormOf(r incident.Rules) views.NoiseForm {
	count := func(n int) string {
		if n == 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	return views.NoiseForm{GroupBy: strings.Join(r.GroupBy, ", "), GroupWindow: r.GroupWindow, StormThreshold: count(r.StormThreshold),
		FlapCount: count(r.FlapCount), FlapWindow: r.FlapWindow, MaxNoticesPerHour: count(r.MaxNoticesPerHour)}
}

// rulesOf reads a route's noise settings from the form; a count that is not a whole
// number is an error naming its field under prefix.
func rulesOf(prefix string, n views.NoiseForm) (incident.Rules, error) {
	r := incident.Rules{GroupBy: splitList(n.GroupBy), GroupWindow: n.GroupWindow, FlapWindow: n.FlapWindow}
	for _, f := range []struct {
		name, value string
		into        *int
	}{{"storm_threshold", n.StormThreshold, &r.StormThreshold}, {"flap_count", n.FlapCount, &r.FlapCount},
		{"max_notices_per_hour", n.MaxNoticesPerHour, &r.MaxNoticesPerHour}} {
		if f.value == "" {
			continue
		}
		v, err := strconv.Atoi(f.value)
		if err != nil {
			return r, kernel.Invalid(prefix+"."+f.name, "accounts.error.whole_number")
		}
		*f.into = v
	}
	return r, nil
}

func indentJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// CreateIntegration saves a new integration and shows its token, once.
func (h *Handlers) CreateIntegration(c *gin.Context) {
	f := integrationFormOf(c, "")
	if h.growIntegrationForm(c, &f) {
		return
	}
	in, rows, err := integrationInputOf(f)
	var it *inbound.Integration
	var token string
	if err == nil {
		it, token, err = h.Dispatch.Inbound().CreateIntegration(c.Request.Context(), actor(c), in)
	}
	if err != nil {
		h.integrationFormFailed(c, f, rows, err)
		return
	}
	h.showIntegrationToken(c, http.StatusCreated, it.Name, it.Format, token, true)
}

// UpdateIntegration saves an integration's changed routes and settings.
func (h *Handlers) UpdateIntegration(c *gin.Context) {
	it, err := h.Dispatch.Inbound().Integration(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "integrations.console.none"))
		return
	}
	f := integrationFormOf(c, it.Name)
	f.Format = it.Format
	if h.growIntegrationForm(c, &f) {
		return
	}
	in, rows, err := integrationInputOf(f)
	if err == nil {
		_, err = h.Dispatch.Inbound().UpdateIntegration(c.Request.Context(), actor(c), it.Name, in)
	}
	if err != nil {
		h.integrationFormFailed(c, f, rows, err)
		return
	}
	h.redirectNotice(c, "/integrations/"+it.Name, "saved", it.Name)
}

// RotateIntegrationToken gives an integration a new token, shown once; the old one
// stops working at once.
func (h *Handlers) RotateIntegrationToken(c *gin.Context) {
	ctx := c.Request.Context()
	it, err := h.Dispatch.Inbound().Integration(ctx, c.Param("name"))
	var token string
	if err == nil {
		token, err = h.Dispatch.Inbound().RotateToken(ctx, actor(c), it.Name)
	}
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "integrations.console.none"))
		return
	}
	h.showIntegrationToken(c, http.StatusOK, it.Name, it.Format, token, false)
}

// DeleteIntegration removes an integration and what came in through it.
func (h *Handlers) DeleteIntegration(c *gin.Context) {
	if err := h.Dispatch.Inbound().DeleteIntegration(c.Request.Context(), actor(c), c.Param("name")); err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "integrations.console.none"))
		return
	}
	h.redirectNotice(c, "/integrations", "deleted", c.Param("name"))
}

// showIntegrationToken shows a token with the snippets that use it. The token is in
// this response only: no redirect, and no cache may keep it.
func (h *Handlers) showIntegrationToken(c *gin.Context, status int, name, format, token string, created bool) {
	c.Header("Cache-Control", "no-store")
	v := views.IntegrationTokenView{Name: name, Format: format, PushURL: h.pushURL(name), Token: token, Created: created}
	render(c, status, views.IntegrationTokenPage(page(c, tr(c, "integrations.console.token_title", "Name", name), "alerts"), v))
}

// Bounds on the rows a submitted form is read for: a little past the service's limits,
// so that too many rows are its error to report, not silently dropped.
const (
	maxFormRoutes   = inbound.MaxRoutes + 1
	maxFormMatchers = inbound.MaxMatchers + 1
)

// integrationFormOf reads the integration form: each route row as typed, with its
// matcher rows, and the default route. original names the integration edited.
func integrationFormOf(c *gin.Context, original string) views.IntegrationForm {
	f := views.IntegrationForm{Original: original, Name: strings.TrimSpace(c.PostForm("name")),
		Format: strings.TrimSpace(c.PostForm("format")), NotifyOnResolve: c.PostForm("notify_on_resolve") != "",
		Language: strings.TrimSpace(c.PostForm("language")),
		Mapping:  c.PostForm("mapping"), ValueMap: c.PostForm("value_map"), Default: routeFormFrom(c, "default_route")}
	if original != "" {
		f.Name = original
	}
	n, _ := strconv.Atoi(c.PostForm("route_rows"))
	for i := range min(max(n, 0), maxFormRoutes) {
		f.Routes = append(f.Routes, routeFormFrom(c, views.RouteField(i, "")))
	}
	return f
}

// routeFormFrom reads one route's fields, named under prefix.
func routeFormFrom(c *gin.Context, prefix string) views.RouteForm {
	field := func(name string) string { return strings.TrimSpace(c.PostForm(prefix + "." + name)) }
	r := views.RouteForm{Policy: field("policy"), Template: field("template"), Account: field("account"),
		Platform: field("platform"), Priority: field("priority"), Recipients: field("recipients"), Remove: field("remove") != "",
		Noise: views.NoiseForm{GroupBy: field("group_by"), GroupWindow: field("group_window"), StormThreshold: field("storm_threshold"),
			FlapCount: field("flap_count"), FlapWindow: field("flap_window"), MaxNoticesPerHour: field("max_notices_per_hour")}}
	n, _ := strconv.Atoi(field("matcher_rows"))
	for j := range min(max(n, 0), maxFormMatchers) {
		m := prefix + ".matchers[" + strconv.Itoa(j) + "]."
		r.Matchers = append(r.Matchers, delivery.Matcher{Name: strings.TrimSpace(c.PostForm(m + "name")), Value: c.PostForm(m + "value"),
			Regex: c.PostForm(m+"regex") != "", Negate: c.PostForm(m+"negate") != ""})
	}
	return r
}

// growIntegrationForm answers the form's "add a route" and "add a matcher" buttons:
// the form again with one more blank row, nothing saved. It reports whether it did.
func (h *Handlers) growIntegrationForm(c *gin.Context, f *views.IntegrationForm) bool {
	more := c.PostForm("more")
	switch {
	case more == "route" && len(f.Routes) < inbound.MaxRoutes:
		f.Routes = append(f.Routes, views.RouteForm{Matchers: make([]delivery.Matcher, 1)})
	case strings.HasPrefix(more, "matcher:"):
		i, err := strconv.Atoi(strings.TrimPrefix(more, "matcher:"))
		if err == nil && i >= 0 && i < len(f.Routes) && len(f.Routes[i].Matchers) < inbound.MaxMatchers {
			f.Routes[i].Matchers = append(f.Routes[i].Matchers, delivery.Matcher{})
		}
	case more == "":
		return false
	}
	h.renderIntegrationForm(c, http.StatusOK, *f, nil)
	return true
}

// formRows says which form row each route (and each route's matcher) the service
// checks came from: its field errors name the service's indexes, the form its rows.
type formRows struct {
	routes   []int
	matchers [][]int
}

// integrationInputOf turns the form into the service's input: rows left blank or
// ticked for removal are skipped; the mapping and value map are JSON, a bad one an
// error naming its field.
func integrationInputOf(f views.IntegrationForm) (inbound.IntegrationInput, formRows, error) {
	in := inbound.IntegrationInput{Name: f.Name, Format: f.Format, NotifyOnResolve: f.NotifyOnResolve, Language: f.Language}
	var rows formRows
	for i, rf := range f.Routes {
		if rf.Remove || rf.Blank() {
			continue
		}
		r, ms := routeOf(rf)
		var err error
		if r.Rules, err = rulesOf(fmt.Sprintf("routes[%d]", len(in.Routes)), rf.Noise); err != nil {
			rows.routes = append(rows.routes, i)
			return in, rows, err
		}
		in.Routes = append(in.Routes, r)
		rows.routes, rows.matchers = append(rows.routes, i), append(rows.matchers, ms)
	}
	if !f.Default.Blank() {
		r, _ := routeOf(f.Default)
		var err error
		if r.Rules, err = rulesOf("default_route", f.Default.Noise); err != nil {
			return in, rows, err
		}
		in.DefaultRoute = &r
	}
	if strings.TrimSpace(f.Mapping) != "" {
		if err := json.Unmarshal([]byte(f.Mapping), &in.Mapping); err != nil {
			return in, rows, kernel.Invalid("mapping", "integrations.console.bad_mapping")
		}
	}
	if strings.TrimSpace(f.ValueMap) != "" {
		if err := json.Unmarshal([]byte(f.ValueMap), &in.ValueMap); err != nil {
			return in, rows, kernel.Invalid("value_map", "integrations.console.bad_value_map")
		}
	}
	return in, rows, nil
}

// routeOf turns a route's rows into a route, and says which row each matcher came from.
func routeOf(rf views.RouteForm) (inbound.Route, []int) {
	r := inbound.Route{Policy: rf.Policy, Template: rf.Template, Account: rf.Account, Platform: rf.Platform,
		Priority: rf.Priority, Recipients: splitList(rf.Recipients)}
	var rows []int
	for j, m := range rf.Matchers {
		if m.Name == "" {
			continue
		}
		r.Matchers, rows = append(r.Matchers, m), append(rows, j)
	}
	return r, rows
}

// splitList splits a list typed into one field: by commas (also Chinese ones, and 、)
// and white space.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == ',' || r == '，' || r == '、' })
}

// splitNames splits a field of names (departments, groups), which may hold spaces, by
// commas (either width) and 、, each trimmed.
func splitNames(s string) []string {
	var out []string
	for _, v := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '，' || r == '、' }) {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// integrationFormFailed shows the form again with err beside its field, or on the
// error page when it is no refusal.
func (h *Handlers) integrationFormFailed(c *gin.Context, f views.IntegrationForm, rows formRows, err error) {
	if fe, ok := errors.AsType[*kernel.FieldError](err); ok {
		errs := map[string]string{rows.formField(fe.Field): fe.In(c.Request.Context())}
		h.renderIntegrationForm(c, http.StatusUnprocessableEntity, f, errs)
		return
	}
	h.failOr(c, err, func(a answer) { h.renderIntegrationForm(c, a.Status, f, a.errs()) },
		saying(kernel.ErrNotFound, "integrations.console.none"))
}

var (
	routeErrorField   = regexp.MustCompile(`^routes\[(\d+)\]\.(.*)$`)
	matcherErrorField = regexp.MustCompile(`^matchers\[(\d+)\]\.(name|value)$`)
	// formFields are the fields the form shows an error beside; any other error is
	// shown above it.
	formFields = regexp.MustCompile(`^(name|format|language|mapping|value_map|routes|` +
		`(routes\[\d+\]|default_route)\.(policy|template|account|platform|priority|recipients|matchers|` +
		`group_by|group_window|storm_threshold|flap_count|flap_window|max_notices_per_hour)|` +
		`routes\[\d+\]\.matchers\[\d+\]\.(name|value))$`)
)

// formField is the form field a service error's field names: routes and matchers by
// their rows, a route's one recipient by its recipients field.
func (rows formRows) formField(field string) string {
	if m := routeErrorField.FindStringSubmatch(field); m != nil {
		k, _ := strconv.Atoi(m[1])
		if k < len(rows.routes) {
			rest := m[2]
			if mm := matcherErrorField.FindStringSubmatch(rest); mm != nil {
				j, _ := strconv.Atoi(mm[1])
				if j < len(rows.matchers[k]) {
					rest = fmt.Sprintf("matchers[%d].%s", rows.matchers[k][j], mm[2])
				}
			}
			field = views.RouteField(rows.routes[k], rest)
		}
	}
	for _, list := range []string{".recipients[", ".group_by["} {
		if i := strings.Index(field, list); i >= 0 {
			field = field[:i+len(list)-1]
		}
	}
	if !formFields.MatchString(field) {
		return ""
	}
	return field
}

// routeChoices are what a route's selects offer: the policies, templates, accounts and
// platforms by name.
func (h *Handlers) routeChoices(ctx context.Context) (views.IntegrationChoices, error) {
	choices := views.IntegrationChoices{Platforms: channels.Platforms}
	policies, err := h.Dispatch.Alerts().Policies(ctx)
	var tmpls []templates.Template
	if err == nil {
		tmpls, err = h.Store.Templates().Templates(ctx)
	}
	var accounts []sending.Account
	if err == nil {
		accounts, err = h.Store.Sending().Accounts(ctx)
	}
	if err != nil {
		return choices, err
	}
	for _, p := range policies {
		choices.Policies = append(choices.Policies, p.Name)
	}
	for _, t := range tmpls {
		choices.Templates = append(choices.Templates, t.Name)
	}
	for _, a := range accounts {
		choices.Accounts = append(choices.Accounts, a.Name)
	}
	return choices, nil
}

// renderIntegrationForm shows the form with what its selects offer.
func (h *Handlers) renderIntegrationForm(c *gin.Context, status int, f views.IntegrationForm, errs map[string]string) {
	choices, err := h.routeChoices(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	title := tr(c, "integrations.console.new")
	if f.Original != "" {
		title = tr(c, "integrations.console.edit_title", "Name", f.Original)
	}
	render(c, status, views.IntegrationFormPage(page(c, title, "alerts"), f, choices, errs))
}
