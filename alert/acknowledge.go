package alert

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"herald/audit"
	"herald/directory"
	"herald/i18n"
	"herald/kernel"
	"herald/models"
)

// An alert is a batch someone must acknowledge: its notices carry a link to do it, and
// until someone does, the policy copied onto it when it opened calls more people, step by
// step (escalation.go). Acknowledging stops the escalation; resolving closes the alert.

// Ways of acknowledging or resolving an alert, as the audit log and the alert record them.
const (
	AckViaLink    = "link"
	AckViaAPI     = directory.ViaAPI
	AckViaConsole = "console"
	AckViaWeCom   = "wecom"
	// AckViaGroupLink is the link of an alert's post to a chat group, tapped by one of
	// the people there, who named themselves on its page.
	AckViaGroupLink = "group_link"
	// AckViaRejection resolves the alert of a batch rejected while it awaited
	// approval; nobody acknowledges that way.
	AckViaRejection = AlertViaRejection
)

// AckVias lists the ways of acknowledging.
var AckVias = []string{AckViaLink, AckViaAPI, AckViaConsole, AckViaWeCom, AckViaVoice, AckViaGroupLink}

// ErrAlertEnded refuses acknowledging or resolving an alert that is exhausted: nobody
// answered in time, and it is over.
var ErrAlertEnded = kernel.Declare(kernel.DomainError{Kind: kernel.KindConflict, Code: "alert_ended", Key: "alerts.api.ended",
	Text: "alert: the alert has ended"})

// errAlreadyMoved rolls back an acknowledgment or resolution that found the alert
// already past it.
var errAlreadyMoved = errors.New("alert: alert already moved")

// AckResult is an alert after an acknowledgment or resolution. Already says the alert
// was acknowledged (or resolved) before this call, which changed nothing; the alert's
// AcknowledgedBy and AcknowledgedAt then say who did it first and when.
type AckResult struct {
	Alert   *Alert
	Already bool
}

// State is the alert's state after the call.
func (r AckResult) State() string { return r.Alert.State }

// NewAckPlaceholder draws the placeholder that stands for the acknowledgment links of one
// intake's (or one step's) notices while their content is rendered, before the
// messages, and so the links, exist. It is drawn afresh each time, 128 random bits, so
// no caller can know it: a caller's text or variables that spelt the placeholder would
// otherwise carry a recipient's signed link inside the caller's own URL.
func NewAckPlaceholder() string { return "HERALDACK" + rand.Text() }

// AckVariable is the template variable that places the acknowledgment link.
const AckVariable = "ack_url"

// AcknowledgeAlert records that someone has taken the alert: the escalation stops (its
// pending steps cancelled), and with the policy's notify_on_ack everyone notified so far
// hears who took it. externalID names the person (an external id; "" for a console
// user, who is by.Name); via is how (AckViaLink, AckViaAPI, AckViaConsole, AckViaWeCom).
// Acknowledging twice is harmless: the result says who did first. ErrAlertEnded: the
// alert is exhausted. kernel.ErrNotFound: no such alert, or one by may not see (see
// Alert).
func (d *Service) AcknowledgeAlert(ctx context.Context, by audit.Actor, alertID int64, externalID, via, note string) (AckResult, error) {
	return d.moveAlert(ctx, by, alertID, nil, externalID, via, note, ackMove)
}

// ResolveAlert closes an alert, open or acknowledged: the escalation stops. Resolving
// twice is harmless. ErrAlertEnded: the alert is exhausted. kernel.ErrNotFound: no such
// alert, or one by may not see.
func (d *Service) ResolveAlert(ctx context.Context, by audit.Actor, alertID int64, externalID, via, note string) (AckResult, error) {
	return d.moveAlert(ctx, by, alertID, nil, externalID, via, note, resolveMove)
}

// alertMove is an acknowledgment or a resolution: the states it leaves, the state it
// makes, its audit action and its status event.
type alertMove struct {
	from   []string
	to     string
	action string
	event  string
	// tellRecovered: a resolution tells the people called so far that the alert
	// recovered.
	tellRecovered bool
}

var (
	ackMove     = alertMove{AlertAcknowledgeable, AlertAcknowledged, "alert.acknowledge", EventAlertAcknowledged, false}
	resolveMove = alertMove{AlertResolvable, AlertResolved, "alert.resolve", EventAlertResolved, false}
)

// moveAlert runs an acknowledgment or a resolution of the alert alertID; known is the
// alert when the caller has read it already (nil: it is read here). The alert is read
// once: the change is a compare-and-set on the state, step and round read, and the
// alert returned is the one read with the change applied. Only when another change came
// between the read and the write is it read again.
func (d *Service) moveAlert(ctx context.Context, by audit.Actor, alertID int64, known *Alert, externalID, via, note string, mv alertMove) (AckResult, error) {
	a := known
	if by.OwnKey() != 0 && a == nil {
		// Another key's alert is not found, before anything of the request is checked.
		var err error
		if a, err = d.ownAlert(ctx, by, alertID); err != nil {
			return AckResult{}, err
		}
	}
	who, err := d.acker(ctx, by, externalID, via, note)
	if err != nil {
		return AckResult{}, err
	}
	return d.move(ctx, by, alertID, a, who, via, note, mv)
}

// move runs a checked acknowledgment or resolution by who of the alert alertID (a: as
// read already, or nil).
func (d *Service) move(ctx context.Context, by audit.Actor, alertID int64, a *Alert, who ackPerson, via, note string, mv alertMove) (AckResult, error) {
	var err error
	for reads := 1; ; reads++ {
		if a == nil {
			if a, err = Of(d.store).AlertByID(ctx, alertID); err != nil {
				return AckResult{}, err
			}
		}
		if !slices.Contains(mv.from, a.State) {
			return alreadyMoved(a)
		}
		err = d.changeAlert(ctx, by, a, who, via, note, mv)
		if !errors.Is(err, errAlreadyMoved) || reads == maxAlertReads {
			break
		}
		a = nil
	}
	if err != nil {
		return AckResult{}, err
	}
	return AckResult{Alert: a}, nil
}

// maxAlertReads bounds how often an acknowledgment reads its alert again when other
// changes keep coming between its read and its write (steps firing, say).
const maxAlertReads = 5

// changeAlert writes an acknowledgment or a resolution of a, as it was read, and applies
// it to a once it commits. errAlreadyMoved: a changed meanwhile.
func (d *Service) changeAlert(ctx context.Context, by audit.Actor, a *Alert, who ackPerson, via, note string, mv alertMove) error {
	now := d.now().Truncate(time.Microsecond)
	moved := *a
	moved.State = mv.to
	set := map[string]any{"state": mv.to}
	if mv.to == AlertAcknowledged {
		set["acknowledged_by"], set["acknowledged_via"], set["acknowledged_at"] = who.id, via, now
		moved.AcknowledgedBy, moved.AcknowledgedVia, moved.AcknowledgedAt = who.id, via, &now
	} else {
		set["resolved_by"], set["resolved_via"], set["resolved_at"], set["ended_at"] = who.id, via, now, now
		moved.ResolvedBy, moved.ResolvedVia, moved.ResolvedAt, moved.EndedAt = who.id, via, &now, &now
	}
	err := d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		ok, err := Of(tx).MoveAlertAsRead(ctx, a, set)
		if err != nil {
			return err
		}
		if !ok {
			return errAlreadyMoved
		}
		if err := Of(tx).CancelAlertSteps(ctx, a.ID, now); err != nil {
			return err
		}
		reason := CallCancelledResolved
		if mv.to == AlertAcknowledged {
			reason = CallCancelledAcknowledged
		}
		if err := cancelCalls(ctx, d.calls, tx, a, reason, now); err != nil {
			return err
		}
		if mv.to == AlertAcknowledged && a.PolicyCopy.NotifyOnAck {
			if err := d.noticeOfAck(ctx, tx, ch, a, who); err != nil {
				return err
			}
		}
		if mv.to == AlertResolved && mv.tellRecovered {
			if err := d.noticeOfRecovery(ctx, tx, ch, a); err != nil {
				return err
			}
		}
		if err := d.alertEvent(ctx, tx, ch, a, mv.event, AlertEvent{State: mv.to, Step: a.Step, Round: a.Round, By: who.id}, now); err != nil {
			return err
		}
		id := strconv.FormatInt(a.ID, 10)
		ch.Audit(mv.action, "alert", id, audit.Params{"id": id, "by": who.name, "by_id": who.id, "via": via, "note": note})
		if a.State == AlertOpen && d.ackObserver != nil {
			opened := a.OpenedAt
			ch.After(func() { d.ackObserver(now.Sub(opened)) })
		}
		return nil
	})
	if err == nil {
		*a = moved
	}
	return err
}

// alreadyMoved answers an acknowledgment or resolution of a, which had moved past it:
// harmless (Already), but for an exhausted alert (ErrAlertEnded).
func alreadyMoved(a *Alert) (AckResult, error) {
	if a.State == AlertExhausted {
		return AckResult{Alert: a}, ErrAlertEnded
	}
	return AckResult{Alert: a, Already: true}, nil
}

// ackPerson is who acknowledges or resolves: the id recorded (an external id, or the
// console user's name) and the name people read.
type ackPerson struct {
	id, name    string
	recipientID int64
}

// acker checks the input of an acknowledgment and finds the person.
func (d *Service) acker(ctx context.Context, by audit.Actor, externalID, via, note string) (ackPerson, error) {
	if !slices.Contains(AckVias, via) {
		return ackPerson{}, kernel.Invalid("via", "alerts.invalid.via")
	}
	if len(note) > maxNoteLen {
		return ackPerson{}, kernel.Invalid("note", "compose.check.max_bytes", "Max", maxNoteLen)
	}
	if err := kernel.CheckText("note", note, true); err != nil {
		return ackPerson{}, err
	}
	externalID = strings.TrimSpace(externalID)
	if externalID == "" {
		if via != AckViaConsole {
			return ackPerson{}, kernel.Invalid("by", "alerts.invalid.by_required")
		}
		return ackPerson{id: by.Name, name: by.Name}, nil
	}
	people, err := d.store.Directory().CachedRecipientsByExternalIDs(ctx, []string{externalID})
	if err != nil {
		return ackPerson{}, err
	}
	if len(people) == 0 {
		return ackPerson{}, kernel.Invalid("by", "alerts.invalid.unknown_person", "Name", externalID)
	}
	p := people[0]
	name := p.Name
	if name == "" {
		name = p.ExternalID
	}
	return ackPerson{id: p.ExternalID, name: name, recipientID: p.ID}, nil
}

const maxNoteLen = 1000

// noticeOfAck tells everyone the alert notified so far, but the person who took it,
// that it is taken.
func (d *Service) noticeOfAck(ctx context.Context, tx *models.Store, ch *audit.Change, a *Alert, who ackPerson) error {
	ids, err := Of(tx).AlertRecipients(ctx, a.ID)
	if err != nil {
		return err
	}
	ids = slices.DeleteFunc(ids, func(id int64) bool { return id == who.recipientID })
	text := i18n.In(i18n.Chinese, "alerts.notice.acknowledged", "Name", who.name, "Subject", alertTitle(a))
	return d.WriteNotice(ctx, tx, ch, a, ids, text)
}

// noticeOfRecovery tells everyone the alert notified so far that it recovered.
func (d *Service) noticeOfRecovery(ctx context.Context, tx *models.Store, ch *audit.Change, a *Alert) error {
	ids, err := Of(tx).AlertRecipients(ctx, a.ID)
	if err != nil {
		return err
	}
	text := i18n.In(i18n.Chinese, "alerts.notice.recovered", "Subject", alertTitle(a))
	return d.WriteNotice(ctx, tx, ch, a, ids, text)
}

// AckViaSource is how an alert is resolved by the monitoring tool that posted it: its
// recovery event.
const AckViaSource = "source"

// ResolveFromSource resolves an alert because the monitoring tool that posted it
// reported it recovered: by source (the integration's name), via AckViaSource; its
// pending steps are cancelled, and with tell the people called so far hear that it
// recovered (nobody not yet called). Resolving an alert that has ended already is
// harmless (Already); ErrAlertEnded for an exhausted one.
func (d *Service) ResolveFromSource(ctx context.Context, by audit.Actor, alertID int64, source string, tell bool) (AckResult, error) {
	mv := resolveMove
	mv.tellRecovered = tell
	return d.move(ctx, by, alertID, nil, ackPerson{id: source, name: source}, AckViaSource, "", mv)
}

// alertTitle is how Herald's own notices name an alert: its subject, else the start of
// its text, else its number.
func alertTitle(a *Alert) string {
	switch {
	case a.Subject != "":
		return a.Subject
	case a.Text != "":
		return kernel.TruncateRunes(strings.SplitN(a.Text, "\n", 2)[0], 60)
	}
	return "#" + strconv.FormatInt(a.ID, 10)
}

// WriteNotice writes one of Herald's own notices of an alert (taken, nobody answered, a
// storm, flapping) to people, in tx, enqueued once it commits.
func (d *Service) WriteNotice(ctx context.Context, tx *models.Store, ch *audit.Change, a *Alert, people []int64, text string) error {
	if len(people) == 0 {
		return nil
	}
	if d.notices == nil {
		return nil
	}
	// Never by voice: a call to say the alert is taken would wake people for nothing.
	account, err := d.noticeAccount(ctx, a)
	if err != nil || account == 0 {
		return err
	}
	p, err := d.notices.PlanNotices(ctx, Notice{AccountID: account, RecipientIDs: people, Text: text, CallbackKeyID: a.CallbackKeyID})
	if err != nil {
		return err
	}
	return d.writeAlertBatch(ctx, tx, ch, a.ID, p)
}

// writeAlertBatch writes a batch of an alert's notices in tx and enqueues its messages
// once tx commits.
func (d *Service) writeAlertBatch(ctx context.Context, tx *models.Store, ch *audit.Change, alertID int64, p *NoticePlan) error {
	if len(p.Messages) == 0 {
		return nil
	}
	for i := range p.Messages {
		p.Messages[i].AlertID = &alertID
	}
	return d.notices.WriteNotices(ctx, tx, ch, p)
}

// alertEvent writes an alert's status event (e says what of it; its AlertID and
// BatchID are a's) for the API key that opened it, if any, and wakes its delivery once
// the change commits.
func (d *Service) alertEvent(ctx context.Context, tx *models.Store, ch *audit.Change, a *Alert, typ string, e AlertEvent, now time.Time) error {
	if a.CallbackKeyID == nil {
		return nil
	}
	e.AlertID, e.BatchID = a.ID, a.BatchID
	if err := Of(tx).RecordAlertEvent(ctx, *a.CallbackKeyID, typ, e, now); err != nil {
		return err
	}
	d.kick(ch, *a.CallbackKeyID)
	return nil
}

// Alert returns an alert and its steps (those of the policy; not the closing check
// after the last), as by may see it. kernel.ErrNotFound: no such alert, or, to a send
// or read key, an alert of a batch another key created (as Message answers).
func (d *Service) Alert(ctx context.Context, by audit.Actor, id int64) (*Alert, []AlertStep, error) {
	a, err := d.ownAlert(ctx, by, id)
	if err != nil {
		return nil, nil, err
	}
	steps, err := Of(d.store).AlertSteps(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return a, PolicySteps(a, steps), nil
}

// PolicySteps leaves out an alert's closing check (the row after its last step that
// exhausts it), which is no step of the policy.
func PolicySteps(a *Alert, steps []AlertStep) []AlertStep {
	return slices.DeleteFunc(steps, func(s AlertStep) bool { return s.N > len(a.PolicyCopy.Steps) })
}

// ownAlert reads an alert that by may see and act on: to a send or read key, an alert
// of a batch another key created is kernel.ErrNotFound.
func (d *Service) ownAlert(ctx context.Context, by audit.Actor, id int64) (*Alert, error) {
	a, err := Of(d.store).AlertByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := d.store.CheckOwn(ctx, by.OwnKey(), a.BatchID); err != nil {
		return nil, err
	}
	return a, nil
}

// Alerts lists the alerts f selects that by may see, open ones first. An unknown state
// or a label filter that is not "name=value" is a field error.
func (d *Service) Alerts(ctx context.Context, by audit.Actor, f AlertFilter, limit int) ([]Alert, error) {
	if f.State != "" && !slices.Contains(AlertStates, f.State) {
		return nil, kernel.Invalid("state", "alerts.invalid.state", "States", strings.Join(AlertStates, ", "))
	}
	if name, _, ok := strings.Cut(f.Label, "="); f.Label != "" && (!ok || !labelPattern.MatchString(name)) {
		return nil, kernel.Invalid("label", "alerts.invalid.label")
	}
	f.OwnKey = by.OwnKey()
	return Of(d.store).Alerts(ctx, f, limit)
}
