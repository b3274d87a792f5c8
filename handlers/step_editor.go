package handlers

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/alert"
	"herald/chatgroups"
	"herald/directory"
	"herald/views"
)

// maxEditorRows caps the steps or turns an editor reads from a form: more than a policy
// or a rotation may have, so that the domain's own check names the excess.
const maxEditorRows = 100

// maxPicked is how many people the people picker lists for a search.
const maxPicked = 20

// editorRows reads an editor's rows from the form: prefix.<i>.<field> for i from 0,
// as long as the row's marker field (a step's wait, a turn's marker) is there.
func editorRows(c *gin.Context, prefix, marker string) int {
	n := 0
	for n < maxEditorRows {
		if _, ok := c.GetPostForm(fmt.Sprintf("%s.%d.%s", prefix, n, marker)); !ok {
			break
		}
		n++
	}
	return n
}

// editRows applies an editor's op to its rows: add_step adds a row (blank), remove_step:i
// removes row i, remove_target:i:j takes value j off row i, add_person:i:<id> and
// add_choice:i (the value chosen beside row i) add a value to row i once. values gives a
// row's values to change; choice the value chosen beside a row.
func editRows[T any](rows []T, op string, blank T, values func(*T) *[]string, choice func(int) string) []T {
	verb, rest, _ := strings.Cut(op, ":")
	if verb == "add_step" {
		return append(rows, blank)
	}
	at, rest, _ := strings.Cut(rest, ":")
	i, err := strconv.Atoi(at)
	if err != nil || i < 0 || i >= len(rows) {
		return rows
	}
	list := values(&rows[i])
	add := func(v string) {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(*list, v) {
			*list = append(*list, v)
		}
	}
	switch verb {
	case "remove_step":
		return slices.Delete(rows, i, i+1)
	case "remove_target":
		if j, err := strconv.Atoi(rest); err == nil && j >= 0 && j < len(*list) {
			*list = slices.Delete(*list, j, j+1)
		}
	case "add_person":
		add(rest)
	case "add_choice":
		add(choice(i))
	}
	return rows
}

// policyFormOf reads the policy form: each step's targets, wait, via and advance.
func policyFormOf(c *gin.Context, original string) views.PolicyForm {
	f := views.PolicyForm{Original: original, Name: strings.TrimSpace(c.PostForm("name")),
		Repeat: strings.TrimSpace(c.PostForm("repeat")), NotifyOnAck: c.PostForm("notify_on_ack") != ""}
	for i := range editorRows(c, "step", "wait") {
		f.Steps = append(f.Steps, views.PolicyStepForm{Targets: c.PostFormArray(views.StepField(i, "target")),
			Wait: c.PostForm(views.StepField(i, "wait")), Via: strings.TrimSpace(c.PostForm(views.StepField(i, "via"))),
			Advance: c.PostForm(views.StepField(i, "advance")) != ""})
	}
	return f
}

// policyOf turns the form into a policy, as the API takes it.
func policyOf(f views.PolicyForm) (alert.EscalationPolicy, error) {
	p := alert.EscalationPolicy{Name: f.Name, NotifyOnAck: f.NotifyOnAck}
	for _, s := range f.Steps {
		p.Steps = append(p.Steps, alert.PolicyStep{Targets: s.Targets, Wait: strings.TrimSpace(s.Wait), Via: s.Via, AdvanceOnNoAnswer: s.Advance})
	}
	n, err := strconv.Atoi(f.Repeat)
	if err != nil {
		return p, invalidRepeat()
	}
	p.Repeat = n
	return p, nil
}

// policyFormOfPolicy is a saved policy in the editor.
func policyFormOfPolicy(p *alert.EscalationPolicy) views.PolicyForm {
	f := views.PolicyForm{Original: p.Name, Name: p.Name, Repeat: strconv.Itoa(p.Repeat), NotifyOnAck: p.NotifyOnAck}
	for _, s := range p.Steps {
		f.Steps = append(f.Steps, views.PolicyStepForm{Targets: slices.Clone(s.Targets), Wait: s.Wait, Via: s.Via, Advance: s.AdvanceOnNoAnswer})
	}
	return f
}

// fillPolicyForm gives the editor what it shows beside the steps: the names of the
// people the steps name, the other targets a step may add, the accounts it may go by.
func (h *Handlers) fillPolicyForm(c *gin.Context, f *views.PolicyForm) error {
	ctx := c.Request.Context()
	var ids []string
	for _, s := range f.Steps {
		ids = append(ids, s.Targets...)
	}
	var err error
	if f.People, err = h.peopleNames(c, ids); err != nil {
		return err
	}
	f.Choices = []string{alert.TargetOnDuty}
	rotations, err := h.Store.Duty().Rotations(ctx)
	if err != nil {
		return err
	}
	for _, r := range rotations {
		f.Choices = append(f.Choices, "rotation:"+r.Name, "rotation:"+r.Name+"+1")
	}
	departments, err := h.Store.Directory().Departments(ctx)
	if err != nil {
		return err
	}
	slices.SortFunc(departments, directory.CompareNames)
	for _, d := range departments {
		f.Choices = append(f.Choices, "department:"+d)
	}
	groups, err := h.chatGroups().Groups(ctx, chatgroups.Filter{})
	if err != nil {
		return err
	}
	for _, g := range groups {
		f.Choices = append(f.Choices, alert.TargetGroup+g.Name)
	}
	accounts, err := h.Store.Sending().EnabledAccounts(ctx)
	for _, a := range accounts {
		f.Accounts = append(f.Accounts, a.Name)
	}
	return err
}

// peopleNames names the people among ids (external ids; other values are left out).
func (h *Handlers) peopleNames(c *gin.Context, ids []string) (map[string]string, error) {
	people, err := h.Store.Directory().CachedRecipientsByExternalIDs(c.Request.Context(), ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(people))
	for _, p := range people {
		out[p.ExternalID] = p.Name
	}
	return out, nil
}

// PolicyEditor applies a change to the policy editor's steps (?op=) and answers them
// as they are now; nothing is saved (an htmx partial).
func (h *Handlers) PolicyEditor(c *gin.Context) {
	f := policyFormOf(c, "")
	f.Steps = editRows(f.Steps, c.PostForm("op"), views.PolicyStepForm{Wait: "10m"},
		func(s *views.PolicyStepForm) *[]string { return &s.Targets },
		func(i int) string { return c.PostForm(views.StepField(i, "choice")) })
	if err := h.fillPolicyForm(c, &f); err != nil {
		h.fail(c, err)
		return
	}
	render(c, http.StatusOK, views.PolicySteps(f, nil))
}

// rotationFormOf reads the rotation form: each turn's people in order.
func rotationFormOf(c *gin.Context, original string) views.RotationForm {
	f := views.RotationForm{Original: original, Name: strings.TrimSpace(c.PostForm("name")),
		Start: strings.TrimSpace(c.PostForm("start")), TurnDays: strings.TrimSpace(c.PostForm("turn_days")), Covers: c.PostForm("covers")}
	for i := range editorRows(c, "turn", "at") {
		f.Turns = append(f.Turns, c.PostFormArray(views.TurnField(i, "member")))
	}
	for _, v := range c.PostFormArray("weekdays") {
		if n, err := strconv.Atoi(v); err == nil {
			f.Weekdays = append(f.Weekdays, n)
		}
	}
	return f
}

// fillRotationForm names the people of the turns.
func (h *Handlers) fillRotationForm(c *gin.Context, f *views.RotationForm) error {
	var err error
	f.People, err = h.peopleNames(c, slices.Concat(f.Turns...))
	return err
}

// RotationEditor applies a change to the rotation editor's turns (?op=) and answers
// them as they are now; nothing is saved (an htmx partial).
func (h *Handlers) RotationEditor(c *gin.Context) {
	f := rotationFormOf(c, "")
	f.Turns = editRows(f.Turns, c.PostForm("op"), []string{},
		func(t *[]string) *[]string { return t }, func(int) string { return "" })
	if err := h.fillRotationForm(c, &f); err != nil {
		h.fail(c, err)
		return
	}
	render(c, http.StatusOK, views.RotationTurns(f, nil))
}

// PickPeople is the editors' people picker: the active people ?q= finds (by name,
// pinyin or id, as compose's picker finds them), in pinyin order, each a button that
// adds them to row ?row= of the editor ?editor= (an htmx partial).
func (h *Handlers) PickPeople(c *gin.Context) {
	v := views.PeoplePick{Editor: c.Query("editor")}
	if v.Editor != views.EditorPolicy && v.Editor != views.EditorRotation {
		c.Status(http.StatusNotFound)
		return
	}
	var err error
	if v.Row, err = strconv.Atoi(c.Query("row")); err != nil || v.Row < 0 {
		c.Status(http.StatusNotFound)
		return
	}
	picker, err := h.peoplePicker(c, c.Query("q"), nil)
	if err != nil {
		h.fail(c, err)
		return
	}
	v.Query, v.People = picker.Query, picker.People
	if len(v.People) > maxPicked {
		v.People, v.More = v.People[:maxPicked], true
	}
	render(c, http.StatusOK, views.PeoplePicked(v))
}
