package dispatch

import (
	"context"
	"errors"
	"time"

	"herald/channels"
	"herald/i18n"
	"herald/kernel"
	"herald/models"
	"herald/tasks"
	"herald/templates"
)

// Digests fold a burst of notices to one person into one message. A request (or its
// template, by default) sets a digest; each notice is still stored as a message, but
// waits in the digest group of its recipient, account and key instead of going out
// (models/digests.go). The group is folded into one message, rendered here, when its
// window closes (RunDigestPoll, in every worker) or as soon as max notices have gathered
// (right after the intake that brings them). Notices that must not wait never join a
// group: a high priority one, an alert's, and those of a batch held for approval (once
// approved they go out one by one, as they would have without a digest).

// digestOf is the digest a planned request uses: its own, else its template's.
func digestOf(req Request, tmpl *templates.Compiled) (*templates.DigestSpec, error) {
	dr := req.Digest
	if dr == nil && tmpl != nil {
		dr = templates.TemplateDigest(tmpl.Template())
	}
	if dr == nil {
		return nil, nil
	}
	return templates.CheckDigest(*dr)
}

// waitInDigests puts the notices of a planned batch that may wait into their digest
// groups: pending, with no due time and no task. It reports whether any does.
func (res *Result) waitInDigests() bool {
	if res.digest == nil || res.Alert != nil || res.Batch.Approval == models.ApprovalAwaiting {
		return false
	}
	waits := false
	for i := range res.Messages {
		m := &res.Messages[i]
		if m.Priority == models.PriorityHigh || m.AlertID != nil || m.Status != models.StatusPending {
			continue
		}
		due := m.SendAt.Add(res.digest.Window)
		m.DigestSlot = models.DigestSlotOf(m.RecipientID, m.AccountID, res.digest.Key)
		m.DigestDueAt, m.DigestMax, m.NextAttemptAt = &due, res.digest.Max, nil
		waits = true
	}
	return waits
}

// assignOutsideDigests is assignTasks for the messages that do not wait in a digest;
// it also returns the id of the message that joined a group (group.go), if one did.
func (d *Dispatcher) assignOutsideDigests(res *Result) ([]tasks.Job, *group, string) {
	if !res.waitInDigests() {
		jobs, gr := d.assignTasks(res.Batch, res.Messages)
		return jobs, gr, firstID(res.Messages)
	}
	var at []int
	var now []models.Message
	for i := range res.Messages {
		if res.Messages[i].DigestSlot == "" {
			at, now = append(at, i), append(now, res.Messages[i])
		}
	}
	jobs, gr := d.assignTasks(res.Batch, now)
	for k, i := range at {
		res.Messages[i].TaskID = now[k].TaskID
	}
	return jobs, gr, firstID(now)
}

func firstID(msgs []models.Message) string {
	if len(msgs) == 0 {
		return ""
	}
	return msgs[0].ID
}

// foldFullDigests folds at once the groups an intake's notices filled to their max.
func (d *Dispatcher) foldFullDigests(ctx context.Context, res *Result) {
	var slots []string
	seen := map[string]bool{}
	for _, m := range res.Messages {
		if m.DigestSlot != "" && !seen[m.DigestSlot] {
			seen[m.DigestSlot] = true
			slots = append(slots, m.DigestSlot)
		}
	}
	for len(slots) > 0 {
		n := min(len(slots), digestPage)
		if _, err := d.FoldDueDigests(ctx, slots[:n]); err != nil {
			d.log.Warn("dispatch: fold full digests; the digest poll will fold them", "error", err)
			return
		}
		slots = slots[n:]
	}
}

// digestPage is how many groups one query of the digest pass reads.
const digestPage = 200

// maxDigestPages bounds one pass: what is left waits for the next.
const maxDigestPages = 50

// FoldDueDigests folds the digest groups due now (only those in slots, when any are
// named) into their messages and enqueues them. A group another process folds first is
// left to it. A group holding more than one digest's worth is read again, so a pass
// leaves nothing due behind it. It returns how many digests it made.
func (d *Dispatcher) FoldDueDigests(ctx context.Context, slots []string) (int, error) {
	made := 0
	for range maxDigestPages {
		again := false
		now := d.now()
		groups, err := d.store.Intake().DueDigestGroups(ctx, now, slots, digestPage)
		if err != nil || len(groups) == 0 {
			return made, err
		}
		var jobs []tasks.Job
		keys := map[int64]bool{}
		for _, g := range groups {
			m, notices, err := d.store.Intake().FoldDigest(ctx, g.Slot, now, d.buildDigest(now))
			switch {
			case errors.Is(err, kernel.ErrStateChanged):
				continue
			case err != nil:
				d.enqueue(ctx, jobs)
				return made, err
			case m == nil:
				continue
			}
			made++
			again = again || len(notices) < g.Count
			d.stats.Count(m.AccountID, "created", 1)
			jobs = append(jobs, tasks.Single(m.ID, m.Priority, m.SendAt, ""))
			for _, n := range notices {
				if n.CallbackKeyID != nil {
					keys[*n.CallbackKeyID] = true
				}
			}
		}
		d.enqueue(ctx, jobs)
		for k := range keys {
			d.callbacks.Kick(k)
		}
		if len(groups) < digestPage && !again {
			return made, nil
		}
	}
	return made, nil
}

// RunDigestPoll folds the digest groups whose window closed, every interval until ctx
// ends. Every worker runs it; the compare-and-set in FoldDigest makes two folding one
// group harmless.
func (d *Dispatcher) RunDigestPoll(ctx context.Context, every time.Duration) {
	kernel.Every(ctx, every, func() {
		if _, err := d.FoldDueDigests(ctx, nil); err != nil && ctx.Err() == nil {
			d.log.Warn("dispatch: digest poll", "error", err)
		}
	})
}

// buildDigest makes the digest of a group's notices: one message to their recipient on
// their account, due now, at the highest priority among them, carrying the first one's
// fallback chain, in a batch of its own.
func (d *Dispatcher) buildDigest(now time.Time) models.DigestBuilder {
	return func(notices []models.Message) (*models.Batch, *models.Message, error) {
		first := notices[0]
		priority := first.Priority
		for _, n := range notices {
			if n.Priority.Rank() < priority.Rank() {
				priority = n.Priority
			}
		}
		subject, body := renderDigest(first.Platform, notices)
		b := &models.Batch{ID: models.NewID(), Source: models.SourceDigest, Actor: "herald", Platform: first.Platform,
			AccountID: first.AccountID, Priority: priority, Requested: 1, Accepted: 1}
		id := models.NewID()
		m := &models.Message{ID: id, BatchID: b.ID, RecipientID: first.RecipientID, AccountID: first.AccountID,
			Platform: first.Platform, Address: first.Address, MsgType: "text", Subject: subject, Content: body,
			Priority: priority, Status: models.StatusPending, MaxAttempts: first.MaxAttempts, SendAt: now,
			NextAttemptAt: &now, Fallback: first.Fallback, TaskID: tasks.SendTaskID(id, "")}
		return b, m, nil
	}
}

// renderDigest is a digest's content, in the console's first language: how many notices
// (the subject), and one line for each (its subject, or its first line), as many as the
// platform's content limit takes, the rest counted as "及另外 N 条".
func renderDigest(platform string, notices []models.Message) (subject, body string) {
	subject = i18n.In(i18n.Chinese, "digests.subject", "Count", len(notices))
	lines := make([]string, len(notices))
	for i, n := range notices {
		lines[i] = "• " + n.DigestLine()
	}
	limit := channels.Cap(platform)
	fits := func(text string) bool {
		return limit.Len(channels.CountedContent(platform, channels.Message{MsgType: "text", Title: subject, Content: text})) <= limit.Max
	}
	more := func(n int) string { return i18n.In(i18n.Chinese, "digests.more", "Count", n) }
	// Lines are added while the digest, with the count of those left out, still fits.
	shown := ""
	for i, line := range lines {
		next := line
		if i > 0 {
			next = shown + "\n" + line
		}
		candidate := next
		if rest := len(lines) - i - 1; rest > 0 {
			candidate += "\n" + more(rest)
		}
		if !fits(candidate) {
			if i == 0 {
				return subject, more(len(lines))
			}
			return subject, shown + "\n" + more(len(lines)-i)
		}
		shown = next
	}
	return subject, shown
}
