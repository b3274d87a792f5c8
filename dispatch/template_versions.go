package dispatch

import (
	"context"
	"errors"
	"strconv"

	"herald/audit"
	"herald/channels"
	"herald/directory"
	"herald/kernel"
	"herald/models"
	"herald/templates"
)

// pinned is t as version n of it, for a send that names one (0: t as it is now). An
// unknown version is a field error on template_version.
func (d *Dispatcher) pinned(ctx context.Context, t *templates.Template, n int) (*templates.Template, error) {
	if n == 0 || n == t.Version {
		return t, nil
	}
	if n < 0 {
		return nil, kernel.Invalid("template_version", "versions.pin_unknown", "Version", n, "Name", t.Name, "Latest", t.Version)
	}
	v, err := d.store.Templates().TemplateVersionOf(ctx, t.ID, n)
	if errors.Is(err, kernel.ErrNotFound) {
		return nil, kernel.Invalid("template_version", "versions.pin_unknown", "Version", n, "Name", t.Name, "Latest", t.Version)
	}
	if err != nil {
		return nil, err
	}
	if v.RetiredAt != nil {
		return nil, kernel.Invalid("template_version", "versions.pin_retired", "Version", n, "Name", t.Name, "Latest", t.Version)
	}
	return v.Of(t), nil
}

// templateWaiting is the messages as saving a template sees them (templates.Waiting).
type templateWaiting struct{ d *Dispatcher }

// Settle deals with the scheduled messages of a template just saved as a new
// version. Their content was rendered at intake, so by default they keep it (and the
// version they record). Those of a batch approved or awaiting approval always keep it
// (models.Store.WaitingOfTemplate leaves them out): the content a second person approves
// is the content sent. With rerender, each other one still waiting is
// rendered again from t for its person with its batch's variables, in the saving
// transaction; one that has moved on meanwhile is left alone (compare-and-set on its
// state). A message the new version cannot render fails the save, naming it.
func (w templateWaiting) Settle(ctx context.Context, k *kernel.DB, ch *audit.Change, t *templates.Template, rerender bool) error {
	d, tx := w.d, w.d.store.On(k)
	if !rerender {
		return nil
	}
	waiting, err := tx.Intake().WaitingOfTemplate(ctx, t.ID, d.now())
	if err != nil || len(waiting) == 0 {
		return err
	}
	tmpl, err := templates.CompileTemplate(t)
	if err != nil {
		return err
	}
	people, err := waitingPeople(ctx, tx, waiting)
	if err != nil {
		return err
	}
	done := 0
	batches := map[string]bool{}
	for i := range waiting {
		w := &waiting[i]
		p := people[w.RecipientID]
		if err := renderAgain(ctx, tmpl, w, &p); err != nil {
			return err
		}
		ok, err := tx.Intake().Rerender(ctx, &w.Message, t.Version)
		if err != nil {
			return err
		}
		if ok {
			done++
			batches[w.BatchID] = true
		}
	}
	for id := range batches {
		// Their fallback messages, if any, follow the version chosen too.
		if err := tx.Intake().SetBatchTemplateContent(ctx, id, models.ContentOf(t)); err != nil {
			return err
		}
	}
	ch.Audit("template.rerender", "template", t.Name, audit.Params{"name": t.Name, "version": strconv.Itoa(t.Version),
		"count": strconv.Itoa(done)})
	return nil
}

// waitingPeople loads the people of the waiting messages, by id.
func waitingPeople(ctx context.Context, tx *models.Store, waiting []models.WaitingMessage) (map[int64]directory.Recipient, error) {
	ids := make([]int64, 0, len(waiting))
	for _, w := range waiting {
		ids = append(ids, w.RecipientID)
	}
	list, err := tx.Directory().RecipientsByIDs(ctx, dedupe(ids))
	if err != nil {
		return nil, err
	}
	out := make(map[int64]directory.Recipient, len(list))
	for _, p := range list {
		out[p.ID] = p
	}
	return out, nil
}

// renderAgain sets a waiting message's content to tmpl rendered for p with its batch's
// variables, as intake would have; a failure is a field error on waiting naming the
// person.
func renderAgain(ctx context.Context, tmpl *templates.Compiled, w *models.WaitingMessage, p *directory.Recipient) error {
	fail := func(err error) error {
		if fe, ok := errors.AsType[*kernel.FieldError](err); ok {
			return kernel.Invalid("waiting", "versions.rerender_failed", "Recipient", who(p), "Err", fe)
		}
		return err
	}
	vars := map[string]string(w.Variables)
	if err := tmpl.CheckVariables(vars); err != nil {
		return fail(err)
	}
	subject, body, err := tmpl.Render(ctx, w.Platform, vars, p)
	if err != nil {
		return fail(err)
	}
	html := ""
	if channels.TakesHTML(w.Platform) {
		if html, err = tmpl.RenderHTML(ctx, w.Platform, vars, p); err != nil {
			return fail(err)
		}
	}
	w.MsgType, w.Subject, w.Content, w.ContentHTML = tmpl.MsgType(), kernel.TruncateRunes(subject, maxSubjectLen), body, html
	if err := templates.CheckSize("waiting", w.Platform, who(p), channels.Message{MsgType: w.MsgType, Title: w.Subject, Content: body}); err != nil {
		return err
	}
	return nil
}
