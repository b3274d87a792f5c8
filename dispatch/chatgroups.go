package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"herald/channels"
	"herald/chatgroups"
	"herald/directory"
	"herald/i18n"
	"herald/kernel"
	"herald/models"
	"herald/sending"
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
