package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"herald/channels"
	"herald/chatgroups"
	"herald/directory"
	"herald/i18n"
	"herald/kernel"
	"herald/models"
	"herald/sending"
	"herald/tasks"
	"herald/templates"
)

// ChatGroups is the chat groups' service on the dispatcher's store, with the duty rule
// of its time zone deciding whom a post @s. It is a function, not a method, so the
// dispatcher's own surface stays as it is: the console and the API build it here too.
func ChatGroups(d *Dispatcher) *chatgroups.Moderator {
	return chatgroups.NewService(chatgroups.NewStore(d.store.DB()), d.store.Sending(), d.store.Directory(), d.Duty())
}

// groupPost is one post a send makes to a chat group, with the account it goes out on.
type groupPost struct {
	chatgroups.Post
	account *sending.Account
}

// planPosts works out a request's posts to chat groups (Request.Groups), whom each @s
// on the duty date and the account each goes out on. A request that names no account
// nor platform sends through the first group's account. Refusals name their field:
// groups[i] for an unknown group or one whose account is disabled, mention[i] for a
// mention no group can make.
func planPosts(ctx context.Context, d *Dispatcher, req *Request, dutyAt time.Time) ([]groupPost, error) {
	if len(req.Groups) == 0 {
		if len(req.Mention) > 0 {
			return nil, kernel.Invalid("mention", "compose.check.mention_without_groups")
		}
		return nil, nil
	}
	switch {
	case req.Digest != nil:
		return nil, kernel.Invalid("digest", "compose.check.groups_digest")
	case req.Ack != nil:
		return nil, kernel.Invalid("ack", "compose.check.groups_ack")
	}
	posts, err := ChatGroups(d).Posts(ctx, req.Groups, req.Mention, dutyAt)
	if err != nil {
		return nil, err
	}
	accounts := d.accounts
	if accounts == nil {
		accounts = d.store.Sending().NewAccountCache(0)
	}
	out := make([]groupPost, len(posts))
	for i, p := range posts {
		a, err := accounts.ByID(ctx, p.Group.AccountID)
		field := fmt.Sprintf("groups[%d]", indexOf(req.Groups, p.Group.Name))
		switch {
		case errors.Is(err, kernel.ErrNotFound), errors.Is(err, kernel.ErrUnreadable):
			return nil, kernel.Invalid(field, "compose.check.unknown_account")
		case err != nil:
			return nil, err
		case !a.Enabled:
			return nil, kernel.Invalid(field, "compose.check.account_disabled", "Name", a.Name)
		}
		out[i] = groupPost{Post: p, account: a}
	}
	if req.Platform == "" && req.Account == "" && req.AccountID == 0 {
		req.AccountID = out[0].account.ID
	}
	return out, nil
}

func indexOf(list []string, name string) int {
	for i, s := range list {
		if strings.TrimSpace(s) == name {
			return i
		}
	}
	return 0
}

// addPost adds the message of one post to a chat group: rendered with the template
// like a person's (the group standing for the person), followed by the post's warning
// lines, addressed to the group's chat, with the people it @s.
func (res *Result) addPost(ctx context.Context, req Request, tmpl *templates.Compiled, p groupPost, sendAt time.Time) error {
	g, acct := p.Group, p.account
	stand := &directory.Recipient{Name: g.Name, ExternalID: g.Name}
	msgType, subject, body, field := "text", req.Subject, req.Text, "content.text"
	if tmpl != nil {
		var err error
		if subject, body, err = tmpl.Render(ctx, acct.Platform, req.Variables, stand); err != nil {
			if fe, ok := errors.AsType[*kernel.FieldError](err); ok {
				return kernel.Invalid("template", "compose.check.for_recipient", "Recipient", g.Name, "Err", fe)
			}
			return err
		}
		msgType, field = tmpl.MsgType(), "template"
	}
	if lines := postLines(ctx, p.Post); lines != "" {
		body += "\n\n" + lines
	}
	subject = kernel.TruncateRunes(subject, maxSubjectLen)
	if err := templates.CheckSize(field, acct.Platform, g.Name, channels.Message{MsgType: msgType, Title: subject, Content: body}); err != nil {
		return err
	}
	var version *int
	if tmpl != nil && tmpl.Template().Version > 0 {
		version = &tmpl.Template().Version
	}
	id := g.ID
	res.Messages = append(res.Messages, models.Message{
		ID: models.NewID(), BatchID: res.Batch.ID, AccountID: acct.ID, Platform: acct.Platform,
		Address: g.Address(), MsgType: msgType, Subject: subject, Content: body,
		Priority: req.Priority, Status: models.StatusPending, MaxAttempts: acct.MaxAttempts,
		SendAt: sendAt, NextAttemptAt: &sendAt, CallbackKeyID: req.CallbackKeyID, TemplateVersion: version,
		ChatGroupID: &id, Mentions: models.MentionsText(p.Mentions),
	})
	if res.Groups == nil {
		res.Groups = map[int64]string{}
	}
	res.Groups[g.ID] = g.Name
	return nil
}

// postLines are the warning lines a post carries: the people on duty it cannot @, or
// that nobody is on duty, so that nobody is left out silently.
func postLines(ctx context.Context, p chatgroups.Post) string {
	var lines []string
	switch {
	case p.NobodyOnDuty && p.DayOff:
		lines = append(lines, i18n.T(ctx, "chatgroups.post.day_off", "Name", p.HolidayName))
	case p.NobodyOnDuty:
		lines = append(lines, i18n.T(ctx, "chatgroups.post.nobody_on_duty"))
	}
	if len(p.Unmentionable) > 0 {
		lines = append(lines, i18n.T(ctx, "chatgroups.post.unmentionable", "Names", strings.Join(p.Unmentionable, "、")))
	}
	return strings.Join(lines, "\n")
}

// FoldThrottled is the worker's hook for a post to a chat group given back to wait for
// its robot's limit (tasks.SenderConfig.FoldThrottled): when the group folds, every
// post of it then waiting is folded into one post, due when the first of them was, and
// that post is enqueued. Another worker folding the same posts first leaves them to it.
func FoldThrottled(d *Dispatcher) func(ctx context.Context, m *models.Message) {
	return func(ctx context.Context, m *models.Message) {
		if m.ChatGroupID == nil {
			return
		}
		groups, err := ChatGroups(d).Store().GroupsByIDs(ctx, []int64{*m.ChatGroupID})
		if g, ok := groups[*m.ChatGroupID]; err != nil || !ok || !g.Fold {
			return
		}
		carrier, waiting, err := d.store.Intake().FoldGroupPosts(ctx, *m.ChatGroupID, buildGroupFold)
		switch {
		case errors.Is(err, kernel.ErrStateChanged), err == nil && carrier == nil:
			return
		case err != nil:
			d.log.Warn("dispatch: fold posts to a chat group", "chat_group_id", *m.ChatGroupID, "error", err)
			return
		}
		d.stats.Count(carrier.AccountID, "created", 1)
		d.enqueue(ctx, []tasks.Job{tasks.Single(carrier.ID, carrier.Priority, *carrier.NextAttemptAt, "")})
		for _, w := range waiting {
			if w.CallbackKeyID != nil {
				d.callbacks.Kick(*w.CallbackKeyID)
			}
		}
	}
}

// buildGroupFold makes the post that carries a group's waiting posts: "N 条通知" and a
// line for each notice (as a digest's), the people any of them @s, the warnings any of
// them carried, at the highest priority among them, due when the earliest was, itself
// waiting for the limit (so that a later fold takes it in).
func buildGroupFold(lines, waiting []models.Message) (*models.Batch, *models.Message, error) {
	first := waiting[0]
	priority, due := first.Priority, first.NextAttemptAt
	var mentions []channels.Mention
	seen := map[channels.Mention]bool{}
	var warnings []string
	for _, w := range waiting {
		if w.Priority.Rank() < priority.Rank() {
			priority = w.Priority
		}
		if w.NextAttemptAt != nil && (due == nil || w.NextAttemptAt.Before(*due)) {
			due = w.NextAttemptAt
		}
	}
	for _, n := range append(slices.Clone(lines), waiting...) {
		for _, x := range models.MentionsOf(n.Mentions) {
			if !seen[x] {
				seen[x] = true
				mentions = append(mentions, x)
			}
		}
		for l := range strings.SplitSeq(n.Content, "\n") {
			if strings.HasPrefix(l, "⚠") && !slices.Contains(warnings, l) {
				warnings = append(warnings, l)
			}
		}
	}
	subject, body := renderDigest(first.Platform, lines)
	body = strings.TrimSpace(subject + "\n" + body)
	if len(warnings) > 0 {
		body += "\n\n" + strings.Join(warnings, "\n")
	}
	now := kernel.Now()
	if due == nil {
		due = &now
	}
	b := &models.Batch{ID: models.NewID(), Source: models.SourceDigest, Actor: "herald", Platform: first.Platform,
		AccountID: first.AccountID, Priority: priority, Requested: 1, Accepted: 1}
	id := models.NewID()
	m := &models.Message{ID: id, BatchID: b.ID, AccountID: first.AccountID, Platform: first.Platform, Address: first.Address,
		MsgType: "text", Content: body, Priority: priority, Status: models.StatusPending,
		MaxAttempts: first.MaxAttempts, SendAt: now, NextAttemptAt: due, ErrorClass: string(channels.Throttled),
		ChatGroupID: first.ChatGroupID, Mentions: models.MentionsText(mentions), TaskID: tasks.SendTaskID(id, "")}
	return b, m, nil
}
