package dispatch

import (
	"context"
	"strconv"
	"time"

	"herald/delivery"
	"herald/models"
	"herald/silence"
	"herald/templates"
)

// Wait is what a planned batch will wait for once it is sent, as the compose preview
// tells the operator before sending.
type Wait struct {
	// Approval is set when the batch reaches more people than the approval threshold
	// (Threshold) and waits for another person's approval.
	Approval  bool
	Threshold int
	// QuietUntil is when the quiet hours of the batch's account (Account) end, when
	// they hold its messages at their due time; zero when they do not.
	QuietUntil time.Time
	Account    string
	// Silences are the live silences active at the batch's due time that hold some of
	// its messages (Silenced of them).
	Silences []silence.Silence
	Silenced int
	// Digest is the digest the batch's notices wait in (nil for none): Digested of them
	// wait for its window to close or its max to gather.
	Digest   *templates.DigestSpec
	Digested int
}

// Any reports whether the batch waits for anything.
func (w Wait) Any() bool {
	return w.Approval || !w.QuietUntil.IsZero() || len(w.Silences) > 0 || w.Digested > 0
}

// Waits says what a planned batch (Plan's result) will wait for once sent, by the
// rules the send applies: the approval threshold, as Submit holds a batch over it
// (overThreshold), the account's quiet hours at the batch's due time, as the sender
// holds a message inside them (sending.QuietHours.Holds), the silences active then, as
// the worker holds what they match (silence.Keeper.Holding), and the digest, as the
// intake puts a notice that may wait into its group (Result.waitInDigests).
func (d *Dispatcher) Waits(ctx context.Context, res *Result) (Wait, error) {
	var w Wait
	var err error
	if w.Threshold, w.Approval, err = d.overThreshold(ctx, res.Batch.Accepted); err != nil {
		return w, err
	}
	if res.account == nil || res.Batch.Accepted == 0 {
		return w, nil
	}
	due := res.Batch.CreatedAt
	if res.Batch.SendAt != nil {
		due = *res.Batch.SendAt
	}
	if due.IsZero() {
		due = d.now()
	}
	if hold, until := res.account.QuietHours.Holds(res.Batch.Priority, due, d.loc); hold {
		w.QuietUntil, w.Account = until, res.account.Name
	}
	if res.digest != nil && res.policy == "" && !w.Approval {
		w.Digest = res.digest
		for _, m := range res.Messages {
			if m.Priority != models.PriorityHigh {
				w.Digested++
			}
		}
	}
	subjects, err := plannedSubjects(ctx, d.store, res)
	if err != nil {
		return w, err
	}
	w.Silences, w.Silenced, err = d.Silences().Holding(ctx, subjects, due)
	return w, err
}

// plannedSubjects are the planned messages as a silence will see them once written
// (silence.Holds.SilenceSubjects reads the same facts from the tables).
func plannedSubjects(ctx context.Context, store *models.Store, res *Result) ([]delivery.Subject, error) {
	template := ""
	if res.Batch.TemplateID != nil {
		t, err := store.Templates().TemplateByID(ctx, *res.Batch.TemplateID)
		if err != nil {
			return nil, err
		}
		template = t.Name
	}
	ids := make([]int64, 0, len(res.Messages))
	for _, m := range res.Messages {
		if m.RecipientID != 0 {
			ids = append(ids, m.RecipientID)
		}
	}
	people, err := store.Directory().CachedRecipientsByIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	department := make(map[int64]string, len(people))
	for _, p := range people {
		department[p.ID] = p.Department
	}
	out := make([]delivery.Subject, len(res.Messages))
	for i, m := range res.Messages {
		out[i] = delivery.Subject{delivery.MatchPlatform: m.Platform, delivery.MatchPriority: string(m.Priority),
			delivery.MatchAccount: res.account.Name, delivery.MatchTemplate: template, delivery.MatchDepartment: department[m.RecipientID],
			delivery.MatchRecipient: res.Names[m.RecipientID], delivery.MatchAPIKey: "", delivery.MatchPolicy: res.policy,
			delivery.SubjectKeyID: ""}
		if res.Batch.APIKeyID != nil {
			out[i][delivery.SubjectKeyID] = strconv.FormatInt(*res.Batch.APIKeyID, 10)
		}
	}
	return out, nil
}
