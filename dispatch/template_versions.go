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

// RetireTemplateVersion retires version n of the template called name, audited as
// template.version_retire: a send can no longer pin it (a field error on
// template_version), nor a rollback restore it; messages rendered from it already keep
// their content. The current version cannot be retired (save or roll back to another
// first), nor one retired already: field errors on version, as is an unknown version.
// kernel.ErrNotFound: no such template.
func (d *Dispatcher) RetireTemplateVersion(ctx context.Context, by audit.Actor, name string, n int) (*templates.TemplateVersion, error) {
	var retired *templates.TemplateVersion
	err := d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		t, err := tx.Templates().TemplateByName(ctx, name)
		if err != nil {
			return err
		}
		if n == t.Version {
			return kernel.Invalid("version", "versions.retire_current", "Version", n)
		}
		err = tx.Templates().RetireTemplateVersion(ctx, t.ID, n, by.Name, d.now())
		switch {
		case errors.Is(err, kernel.ErrNotFound):
			return kernel.Invalid("version", "versions.unknown", "Version", n, "Latest", t.Version)
		case errors.Is(err, kernel.ErrStateChanged):
			return kernel.Invalid("version", "versions.retired_already", "Version", n)
		case err != nil:
			return err
		}
		if retired, err = tx.Templates().TemplateVersionOf(ctx, t.ID, n); err != nil {
			return err
		}
		ch.Audit("template.version_retire", "template", t.Name, audit.Params{"name": t.Name, "version": strconv.Itoa(n)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return retired, nil
}

// RollbackTemplate makes a new version of the template called name equal to its version
// n (content, variables, type, fallback; the names stay), audited as template.rollback.
// rerender renders its waiting messages again from it, as an edit can. kernel.ErrNotFound:
// no such template; an unknown or retired version is a field error on version.
func (d *Dispatcher) RollbackTemplate(ctx context.Context, by audit.Actor, name string, n int, rerender bool) (*templates.Template, error) {
	var saved *templates.Template
	err := d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		cur, err := tx.Templates().TemplateByName(ctx, name)
		if err != nil {
			return err
		}
		v, err := tx.Templates().TemplateVersionOf(ctx, cur.ID, n)
		if errors.Is(err, kernel.ErrNotFound) {
			return kernel.Invalid("version", "versions.unknown", "Version", n, "Latest", cur.Version)
		}
		if err != nil {
			return err
		}
		if v.RetiredAt != nil {
			return kernel.Invalid("version", "versions.rollback_retired", "Version", n)
		}
		t := v.Of(cur)
		if err := tx.Templates().UpdateTemplate(ctx, name, t); err != nil {
			return err
		}
		if _, err := tx.Templates().AddTemplateVersion(ctx, t, by.Name); err != nil {
			return err
		}
		p := TemplateParams(t)
		p["from"] = strconv.Itoa(n)
		ch.Audit("template.rollback", "template", t.Name, p)
		saved = t
		return d.settleWaiting(ctx, tx, ch, t, rerender)
	})
	if err != nil {
		return nil, err
	}
	return saved, nil
}

// settleWaiting deals with the scheduled messages of a template just saved as a new
// version. Their content was rendered at intake, so by default they keep it (and the
// version they record). Those of a batch approved or awaiting approval always keep it
// (models.Store.WaitingOfTemplate leaves them out): the content a second person approves
// is the content sent. With rerender, each other one still waiting is
// rendered again from t for its person with its batch's variables, in the saving
// transaction; one that has moved on meanwhile is left alone (compare-and-set on its
// state). A message the new version cannot render fails the save, naming it.
func (d *Dispatcher) settleWaiting(ctx context.Context, tx *models.Store, ch *audit.Change, t *templates.Template, rerender bool) error {
	if !rerender {
		return nil
	}
	waiting, err := tx.WaitingOfTemplate(ctx, t.ID, d.now())
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
		ok, err := tx.Rerender(ctx, &w.Message, t.Version)
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
		if err := tx.SetBatchTemplateContent(ctx, id, models.ContentOf(t)); err != nil {
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
