package alert

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"herald/audit"
	"herald/channels"
	"herald/chatgroups"
	"herald/directory"
	"herald/kernel"
	"herald/models"
)

// Acknowledging from outside the console: the page an alert notice's link opens (no
// login: the signed link is the credential, AckLinks) and the buttons of a WeCom card
// (the click comes to Herald's callback, signed by WeCom). Both act as the one person
// the notice went to, on that notice's alert only.

// AckLinkLife is how long after its alert ends a link still opens: its page then says
// the alert is over; later the link has expired.
const AckLinkLife = 24 * time.Hour

// AckLinkIdleLife is how long after its last activity (the acknowledgment) the link of
// an acknowledged alert still opens: an alert someone took and nobody resolved does not
// keep its links working for ever.
const AckLinkIdleLife = 7 * 24 * time.Hour

// ErrAckLinkExpired means the link's alert ended more than AckLinkLife ago, or was
// acknowledged more than AckLinkIdleLife ago and not resolved since.
var ErrAckLinkExpired = kernel.Declare(kernel.DomainError{Kind: kernel.KindGone, Code: "ack_link_expired", Key: "ack.expired",
	Text: "alert: acknowledgment link has expired"})

// ErrAckNoticeWithdrawn means the link's notice was recalled or cancelled: its page
// shows none of what it said, and nothing can be done through it.
var ErrAckNoticeWithdrawn = kernel.Declare(kernel.DomainError{Kind: kernel.KindGone, Code: "notice_withdrawn", Key: "ack.withdrawn",
	Text: "alert: the notice was withdrawn"})

// ErrAckNotCalled refuses acting through a notice that has not gone out to its person
// yet (awaiting approval, scheduled for later, held by a silence) or never will
// (cancelled, stopped, recalled): only the people the alert has called so far act on it.
var ErrAckNotCalled = kernel.Declare(kernel.DomainError{Kind: kernel.KindConflict, Code: "notice_not_called", Key: "ack.not_called",
	Text: "alert: the notice has not reached its person"})

// Link and WeCom callback actors, as the audit log names them; the entry's own values
// name the person who acted (the notice's recipient) and how.
const (
	ActorAckLink   = "ack-link"
	ActorWeComCard = "wecom-callback"
)

// AckNotice is an alert notice as its link's page shows it.
type AckNotice struct {
	Message *models.Message
	Alert   *Alert
	// Recipient is the person the notice went to: whoever uses the link acts as them.
	// For a post to a chat group it is nil until the person who tapped names themselves
	// (ActOnGroupAckLink).
	Recipient *directory.Recipient
	// Group names the chat group of a post to one; Mentioned are the people it @-ed,
	// whom its page offers to act as.
	Group     string
	Mentioned []directory.Recipient
}

// OpenAckLink reads the notice a link's token names. ErrAckLinkInvalid: the token was
// not signed by Herald as it stands, or names no alert notice to that person;
// ErrAckNoticeWithdrawn: the notice was recalled or cancelled; ErrAckLinkExpired: its
// alert ended more than AckLinkLife ago.
func (d *Service) OpenAckLink(ctx context.Context, token string) (AckNotice, error) {
	if d.ackLinks == nil {
		return AckNotice{}, ErrAckLinkInvalid
	}
	link, err := d.ackLinks.Parse(token)
	if err != nil {
		return AckNotice{}, err
	}
	return d.alertNotice(ctx, link.MessageID, func(m *models.Message) bool { return m.RecipientID == link.RecipientID })
}

// ActOnAckLink acknowledges or resolves (action channels.AckAction or
// channels.ResolveAction) the alert of a link's notice, as the person the link belongs
// to, via "link". Besides OpenAckLink's errors: a *kernel.FieldError on action for
// another action, ErrAlertEnded for an exhausted alert. Acting twice is harmless (see
// AckResult). The notice comes back with the alert as it is after.
func (d *Service) ActOnAckLink(ctx context.Context, by audit.Actor, token, action string) (AckNotice, AckResult, error) {
	n, err := d.OpenAckLink(ctx, token)
	if err != nil {
		return n, AckResult{}, err
	}
	return d.actOnNotice(ctx, by, n, action, AckViaLink)
}

// ActOnWeComCard acknowledges or resolves the alert of a WeCom card a member clicked,
// via "wecom". The card's task id is its message's id; a click counts only on a card
// that account sent, from the member it went to. ErrAckLinkInvalid: the click names
// no such card; otherwise as ActOnAckLink.
func (d *Service) ActOnWeComCard(ctx context.Context, by audit.Actor, accountID int64, click channels.WeComCardEvent) (AckNotice, AckResult, error) {
	n, err := d.alertNotice(ctx, click.TaskID, func(m *models.Message) bool {
		return m.AccountID == accountID && m.Address == click.UserID
	})
	if err != nil {
		return n, AckResult{}, err
	}
	return d.actOnNotice(ctx, by, n, click.Key, AckViaWeCom)
}

// alertNotice reads an alert notice, if belongs accepts its message.
func (d *Service) alertNotice(ctx context.Context, messageID string, belongs func(*models.Message) bool) (AckNotice, error) {
	if messageID == "" {
		return AckNotice{}, ErrAckLinkInvalid
	}
	m, err := d.store.MessageByID(ctx, messageID)
	if errors.Is(err, kernel.ErrNotFound) {
		return AckNotice{}, ErrAckLinkInvalid
	}
	if err != nil {
		return AckNotice{}, err
	}
	if m.AlertID == nil || !belongs(m) {
		return AckNotice{}, ErrAckLinkInvalid
	}
	if m.Status == models.StatusRecalled || m.Status == models.StatusCancelled {
		return AckNotice{}, ErrAckNoticeWithdrawn
	}
	a, err := Of(d.store).AlertByID(ctx, *m.AlertID)
	if err != nil {
		return AckNotice{}, fmt.Errorf("alert: alert of message %s: %w", m.ID, err)
	}
	if ackLinkExpired(a, d.now()) {
		return AckNotice{}, ErrAckLinkExpired
	}
	if m.ChatGroupID != nil {
		return d.groupNotice(ctx, m, a)
	}
	people, err := d.store.Directory().CachedRecipientsByIDs(ctx, []int64{m.RecipientID})
	if err != nil {
		return AckNotice{}, err
	}
	if len(people) == 0 {
		return AckNotice{}, ErrAckLinkInvalid
	}
	return AckNotice{Message: m, Alert: a, Recipient: &people[0]}, nil
}

// groupNotice is an alert's post to a chat group as its link's page shows it: the
// group, and the people it @-ed, in the order it @-ed them.
func (d *Service) groupNotice(ctx context.Context, m *models.Message, a *Alert) (AckNotice, error) {
	n := AckNotice{Message: m, Alert: a}
	groups, err := chatgroups.NewStore(d.store.DB()).GroupsByIDs(ctx, []int64{*m.ChatGroupID})
	if err != nil {
		return n, err
	}
	n.Group = groups[*m.ChatGroupID].Name
	var ids []string
	for _, x := range models.MentionsOf(m.Mentions) {
		if x.ExternalID != "" {
			ids = append(ids, x.ExternalID)
		}
	}
	people, err := d.store.Directory().CachedRecipientsByExternalIDs(ctx, ids)
	if err != nil {
		return n, err
	}
	for _, id := range ids {
		for _, p := range people {
			if p.ExternalID == id && p.Active {
				n.Mentioned = append(n.Mentioned, p)
			}
		}
	}
	return n, nil
}

// ActOnGroupAckLink acknowledges or resolves the alert of a link posted to a chat
// group, as the person who tapped it and named themselves by staff id (as: one the post
// @-ed, or any active staff member), via "group_link". An unknown or inactive id is a
// *kernel.FieldError on as; otherwise as ActOnAckLink.
func (d *Service) ActOnGroupAckLink(ctx context.Context, by audit.Actor, token, action, as string) (AckNotice, AckResult, error) {
	n, err := d.OpenAckLink(ctx, token)
	if err != nil {
		return n, AckResult{}, err
	}
	if n.Message.ChatGroupID == nil {
		return n, AckResult{}, ErrAckLinkInvalid
	}
	as = strings.TrimSpace(as)
	if as == "" {
		return n, AckResult{}, kernel.Invalid("as", "ack.group.as_required")
	}
	people, err := d.store.Directory().CachedRecipientsByExternalIDs(ctx, []string{as})
	if err != nil {
		return n, AckResult{}, err
	}
	if len(people) == 0 || !people[0].Active {
		return n, AckResult{}, kernel.Invalid("as", "ack.group.as_unknown", "ID", as)
	}
	n.Recipient = &people[0]
	return d.actOnNotice(ctx, by, n, action, AckViaGroupLink)
}

// ackLinkExpired reports whether the links of alert a have expired at now: a day after
// it ended, or a week after it was acknowledged when it is still only acknowledged.
func ackLinkExpired(a *Alert, now time.Time) bool {
	switch {
	case a.EndedAt != nil:
		return now.After(a.EndedAt.Add(AckLinkLife))
	case a.State == AlertAcknowledged && a.AcknowledgedAt != nil:
		return now.After(a.AcknowledgedAt.Add(AckLinkIdleLife))
	}
	return false
}

// called reports whether message m has gone out to its person by now: handed to the
// platform (sent, being sent, or failed with a retry due), or pending and due.
func called(m *models.Message, now time.Time) bool {
	switch m.Status {
	case models.StatusSent, models.StatusSending, models.StatusFailed:
		return true
	case models.StatusPending:
		return m.NextAttemptAt != nil && !m.NextAttemptAt.After(now) && !m.SendAt.After(now)
	}
	return false
}

// actOnNotice acknowledges or resolves the notice's alert as its recipient, who must
// be one the alert has called so far (ErrAckNotCalled).
func (d *Service) actOnNotice(ctx context.Context, by audit.Actor, n AckNotice, action, via string) (AckNotice, AckResult, error) {
	var res AckResult
	var err error
	if n.Recipient == nil {
		// A post to a group: whoever taps must say who they are (ActOnGroupAckLink).
		return n, AckResult{}, kernel.Invalid("as", "ack.group.as_required")
	}
	if action == channels.AckAction || action == channels.ResolveAction {
		if !called(n.Message, d.now()) {
			return n, AckResult{}, ErrAckNotCalled
		}
	}
	// The alert is the one the notice was read with: an acknowledgment reads it once.
	switch a := *n.Alert; action {
	case channels.AckAction:
		res, err = d.moveAlert(ctx, by, a.ID, &a, n.Recipient.ExternalID, via, "", ackMove)
	case channels.ResolveAction:
		res, err = d.moveAlert(ctx, by, a.ID, &a, n.Recipient.ExternalID, via, "", resolveMove)
	default:
		return n, AckResult{}, kernel.Invalid("action", "ack.unknown_action")
	}
	if res.Alert != nil {
		n.Alert = res.Alert
	}
	return n, res, err
}
