package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"herald/channels"
	"herald/directory"
	"herald/kernel"
	"herald/models"
	"herald/sending"
	"herald/tasks"
	"herald/templates"
)

// checkFallback checks a request's fallback chain (or its template's, when it names
// none) against the platform it sends on (templates.CheckChain). It returns the chain
// to keep. Errors name fallback.
func checkFallback(req Request, platform string, tmpl *templates.Compiled) ([]string, error) {
	chain := req.Fallback
	if len(chain) == 0 && tmpl != nil {
		chain = templates.Chain(tmpl.Template().Fallback)
	}
	if err := templates.CheckChain(chain, platform); err != nil || len(chain) == 0 {
		return nil, err
	}
	return chain, nil
}

// fallbackRead is how many chains one pass moves on.
const fallbackRead = 200

// FallBack makes the next message of every chain whose message stopped (or was created
// stopped for want of an address): on the next platform of the chain where the person
// has an address and that has an enabled default account, rendered for it, linked to
// the one before, in the same batch, and enqueued. The duty decision is not taken again.
// A chain with no platform left ends. Workers call it after a message stops, and the
// recovery pass every few seconds, so a crash between the stop and this loses nothing.
func (d *Dispatcher) FallBack(ctx context.Context) (int, error) {
	made := 0
	for {
		due, err := d.store.Intake().DueFallbacks(ctx, fallbackRead)
		if err != nil || len(due) == 0 {
			return made, err
		}
		var jobs []tasks.Job
		pass := &fallbackPass{batches: map[string]*models.Batch{}, templates: map[string]*templates.Compiled{}}
		for i := range due {
			next, err := d.fallBack(ctx, pass, &due[i])
			switch {
			case errors.Is(err, kernel.ErrStateChanged):
				continue // another process moved it on
			case err != nil:
				d.enqueue(ctx, jobs)
				return made, err
			case next != nil:
				made++
				jobs = append(jobs, tasks.Single(next.ID, next.Priority, next.SendAt, ""))
			}
		}
		d.enqueue(ctx, jobs)
		if len(due) < fallbackRead {
			return made, nil
		}
	}
}

// fallbackPass keeps what one pass reads per batch: the chains of a batch share its
// variables and template content, compiled once (nil: the batch has none, or its
// content no longer compiles, and the text sent before goes).
type fallbackPass struct {
	batches   map[string]*models.Batch
	templates map[string]*templates.Compiled
}

func (d *Dispatcher) passBatch(ctx context.Context, pass *fallbackPass, id string) (*models.Batch, *templates.Compiled, error) {
	b, ok := pass.batches[id]
	if !ok {
		var err error
		if b, err = d.store.BatchByID(ctx, id); err != nil {
			return nil, nil, err
		}
		pass.batches[id] = b
	}
	tmpl, ok := pass.templates[id]
	if !ok {
		var err error
		if tmpl, err = d.batchTemplate(ctx, b); err != nil {
			return nil, nil, err
		}
		pass.templates[id] = tmpl
	}
	return b, tmpl, nil
}

// batchTemplate compiles the template content a batch was created with. A batch from
// before the content was kept renders from its template as it is now, if it still
// exists.
func (d *Dispatcher) batchTemplate(ctx context.Context, b *models.Batch) (*templates.Compiled, error) {
	var t *templates.Template
	switch {
	case b.TemplateContent != nil:
		t = b.TemplateContent.Template()
	case b.TemplateID != nil:
		var err error
		if t, err = d.store.Templates().TemplateByID(ctx, *b.TemplateID); errors.Is(err, kernel.ErrNotFound) {
			return nil, nil
		} else if err != nil {
			return nil, err
		}
	default:
		return nil, nil
	}
	tmpl, err := templates.CompileTemplate(t)
	if err != nil {
		d.log.Warn("dispatch: a batch's template does not compile; its fallbacks carry the text sent before", "batch", b.ID, "error", err)
		return nil, nil
	}
	return tmpl, nil
}

// fallBack moves one chain on and returns the message it made (nil: the chain ended).
func (d *Dispatcher) fallBack(ctx context.Context, pass *fallbackPass, prev *models.Message) (*models.Message, error) {
	b, tmpl, err := d.passBatch(ctx, pass, prev.BatchID)
	if err != nil {
		return nil, err
	}
	people, err := d.store.Directory().RecipientsByIDs(ctx, []int64{prev.RecipientID})
	if err != nil {
		return nil, err
	}
	accounts := d.accounts
	if accounts == nil {
		accounts = d.store.Sending().NewAccountCache(0)
	}
	chain := templates.Chain(prev.Fallback)
	for i, platform := range chain {
		if len(people) != 1 || !people[0].Active {
			break
		}
		p := &people[0]
		addr := p.Address(platform)
		if addr == "" {
			continue
		}
		acct, err := accounts.Default(ctx, platform)
		if errors.Is(err, kernel.ErrNotFound) || (err == nil && !acct.Enabled) {
			continue
		}
		if err != nil {
			return nil, err
		}
		next, err := d.nextInChain(ctx, prev, b, tmpl, p, acct, addr)
		if err != nil {
			d.log.Warn("dispatch: fallback cannot be rendered for the platform; trying the next", "message", prev.ID, "platform", platform, "error", err)
			continue
		}
		next.Fallback = templates.JoinChain(chain[i+1:])
		if err := d.store.Intake().LinkFallback(ctx, prev, next); err != nil {
			return nil, err
		}
		d.stats.Count(acct.ID, "created", 1)
		return next, nil
	}
	return nil, d.store.Intake().EndFallback(ctx, prev)
}

// nextInChain is the message prev falls back to on acct: the template rendered for the
// platform with the batch's variables, or the text prev carried.
func (d *Dispatcher) nextInChain(ctx context.Context, prev *models.Message, b *models.Batch, tmpl *templates.Compiled, p *directory.Recipient, acct *sending.Account, addr string) (*models.Message, error) {
	now := d.now()
	next := &models.Message{ID: models.NewID(), BatchID: prev.BatchID, RecipientID: prev.RecipientID, AccountID: acct.ID,
		Platform: acct.Platform, Address: addr, MsgType: prev.MsgType, Subject: prev.Subject, Content: prev.Content,
		Priority: prev.Priority, Status: models.StatusPending, MaxAttempts: acct.MaxAttempts, SendAt: now, NextAttemptAt: &now,
		CallbackKeyID: prev.CallbackKeyID}
	if tmpl != nil {
		subject, body, err := tmpl.Render(ctx, acct.Platform, b.Variables, p)
		if err != nil {
			return nil, err
		}
		next.Subject, next.Content, next.MsgType = kernel.TruncateRunes(subject, maxSubjectLen), body, tmpl.MsgType()
		if v := tmpl.Template().Version; v > 0 {
			next.TemplateVersion = &v
		}
		if channels.TakesHTML(acct.Platform) {
			if next.ContentHTML, err = tmpl.RenderHTML(ctx, acct.Platform, b.Variables, p); err != nil {
				return nil, err
			}
		}
		if channels.ChoosesProvider(acct.Platform) && tmpl.ProviderTemplate() != "" {
			// A chain that ends in an SMS or a call sends the provider template too.
			if next.ProviderTemplate, err = providerTemplate(ctx, acct, tmpl, b.Variables, p); err != nil {
				return nil, err
			}
		}
	}
	if err := templates.CheckSize("content", acct.Platform, who(p), channels.Message{MsgType: next.MsgType, Title: next.Subject, Content: next.Content}); err != nil {
		return nil, fmt.Errorf("dispatch: fallback of %s: %w", prev.ID, err)
	}
	return next, nil
}

// fallsBack says whether the intake created a message to fall back from at once.
func (res *Result) fallsBack() bool {
	return slices.ContainsFunc(res.Messages, func(m models.Message) bool { return m.FallbackDue })
}

// fallbackRuns coalesces the requests to move chains on: one pass at a time in a
// process, and one more after it when asked meanwhile (a thousand messages stopping at
// once cost two passes, not a thousand).
type fallbackRuns struct {
	mu             sync.Mutex
	running, again bool
}

// FallBackSoon moves due chains on in the background and returns at once; workers call
// it after a message with a chain stops. The recovery pass does it for anything missed.
func (d *Dispatcher) FallBackSoon() {
	d.fallbacks.mu.Lock()
	defer d.fallbacks.mu.Unlock()
	if d.fallbacks.running {
		d.fallbacks.again = true
		return
	}
	d.fallbacks.running = true
	go d.fallBackRuns()
}

func (d *Dispatcher) fallBackRuns() {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, err := d.FallBack(ctx); err != nil {
			d.log.Warn("dispatch: fallback", "error", err)
		}
		cancel()
		d.fallbacks.mu.Lock()
		if !d.fallbacks.again {
			d.fallbacks.running = false
			d.fallbacks.mu.Unlock()
			return
		}
		d.fallbacks.again = false
		d.fallbacks.mu.Unlock()
	}
}
