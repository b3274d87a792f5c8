package incident

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/i18n"
	"herald/kernel"
	"herald/models"
)

// How an alert an integration posts opens. Its dedup key flapping (it opened and
// recovered flap_count times within flap_window, or opened while the last alert of the
// key was flapping): the alert opens quietly, marked flapping, and the first of them
// tells the people the key's alerts called, once ("抖动"); the key is quiet until a
// whole window passes without it opening. Else, under a route that groups: the first
// alert of a group key opens an incident and escalates as any alert does (the
// incident's escalation is its own); later alerts of the key within the window join the
// incident quietly (no notice, no escalation; a line in the incident), and the one that
// brings the incident to storm_threshold alerts sends the incident's one storm notice.
// Otherwise the alert opens on its own.

// Arrival is an alert an integration is about to open: where it came from, its route's
// rules, its key and labels, and what it says.
type Arrival struct {
	// Source is the integration.
	Source   string
	Rules    Rules
	DedupKey string
	Labels   map[string]string
	Severity string
	// Subject and Text are what the alert says (its title the subject).
	Subject, Text string
}

// Opener opens an alert on its own: with its notices and escalation, through the intake.
type Opener func(ctx context.Context) (alertID int64, err error)

// maxOpenTries bounds how often an alert looks again for its incident when another
// alert opened or closed it meanwhile.
const maxOpenTries = 5

// Open opens the alert arr describes (open opens it on its own) and returns its id.
func (d *Coordinator) Open(ctx context.Context, arr Arrival, open Opener) (int64, error) {
	now := d.now()
	if arr.DedupKey != "" {
		id, quiet, err := d.openFlapping(ctx, arr, now)
		if err != nil || quiet {
			return id, err
		}
	}
	if len(arr.Rules.GroupBy) == 0 {
		return open(ctx)
	}
	openKey := kernel.Truncate(arr.Source+"|"+arr.Rules.groupKey(arr.Labels), 600)
	for range maxOpenTries {
		in, err := Of(d.store).Joinable(ctx, openKey)
		if err != nil {
			return 0, err
		}
		if in != nil && now.Before(in.WindowEndsAt) && in.CanMoveTo(StateResolved) {
			return d.join(ctx, in, arr, now)
		}
		created, err := d.openIncident(ctx, arr, openKey, in, now)
		if errors.Is(err, kernel.ErrDuplicate) {
			continue // another alert of the key opened it first: join that one
		}
		if err != nil {
			return 0, err
		}
		return d.lead(ctx, created, open)
	}
	return open(ctx)
}

// openIncident opens the incident of openKey, letting stale (its window over) go.
// kernel.ErrDuplicate: another alert opened one first.
func (d *Coordinator) openIncident(ctx context.Context, arr Arrival, openKey string, stale *Incident, now time.Time) (*Incident, error) {
	key := openKey
	in := &Incident{Source: arr.Source, GroupKey: arr.Rules.groupKey(arr.Labels), OpenKey: &key,
		Title: kernel.TruncateRunes(arr.Subject, 120), State: StateOpen, StormThreshold: arr.Rules.StormThreshold,
		WindowEndsAt: now.Add(arr.Rules.groupWindow()), OpenedAt: now}
	err := d.change(ctx, audit.System("integration:"+arr.Source), func(tx *models.Store, ch *audit.Change) error {
		if stale != nil {
			if err := Of(tx).Close(ctx, stale.ID, openKey); err != nil {
				return err
			}
		}
		if err := Of(tx).Create(ctx, in); err != nil {
			return err
		}
		id := strconv.FormatInt(in.ID, 10)
		ch.Audit("incident.open", "incident", id, audit.Params{"id": id, "source": in.Source, "key": in.GroupKey})
		return nil
	})
	return in, err
}

// lead opens the first alert of a new incident on its own and makes it the incident's.
func (d *Coordinator) lead(ctx context.Context, in *Incident, open Opener) (int64, error) {
	alertID, err := open(ctx)
	by := audit.System("integration:" + in.Source)
	if err != nil {
		// Nothing opened: the incident goes, so the next alert of the key opens anew.
		if derr := d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
			id := strconv.FormatInt(in.ID, 10)
			ch.Audit("incident.abandon", "incident", id, audit.Params{"id": id})
			return Of(tx).Delete(ctx, in.ID)
		}); derr != nil {
			return 0, derr
		}
		return 0, err
	}
	in.AlertID = &alertID
	return alertID, d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := Of(tx).SetLead(ctx, in.ID, alertID); err != nil {
			return err
		}
		if _, err := Of(tx).Join(ctx, in.ID, alertID); err != nil {
			return err
		}
		id := strconv.FormatInt(in.ID, 10)
		ch.Audit("incident.join", "incident", id, audit.Params{"id": id, "alert": strconv.FormatInt(alertID, 10)})
		return d.event(ctx, tx, in, EventOpened, StateOpen, "", d.now())
	})
}

// join opens arr's alert quietly in incident in; the alert that brings it to its storm
// threshold sends the storm notice.
func (d *Coordinator) join(ctx context.Context, in *Incident, arr Arrival, now time.Time) (int64, error) {
	var model *alert.Alert
	if in.AlertID != nil {
		lead, err := alert.Of(d.store).AlertByID(ctx, *in.AlertID)
		if err != nil {
			return 0, err
		}
		model = lead
	}
	var alertID int64
	err := d.change(ctx, audit.System("integration:"+arr.Source), func(tx *models.Store, ch *audit.Change) error {
		a, err := openQuiet(ctx, tx, model, arr, now)
		if err != nil {
			return err
		}
		alertID = a.ID
		n, err := Of(tx).Join(ctx, in.ID, a.ID)
		if err != nil {
			return err
		}
		id := strconv.FormatInt(in.ID, 10)
		ch.Audit("incident.join", "incident", id, audit.Params{"id": id, "alert": strconv.FormatInt(a.ID, 10)})
		if in.StormThreshold == 0 || n < in.StormThreshold || model == nil {
			return nil
		}
		first, err := Of(tx).MarkStorm(ctx, in.ID, now)
		if err != nil || !first {
			return err
		}
		ch.Audit("incident.storm", "incident", id, audit.Params{"id": id, "count": strconv.Itoa(n)})
		text := i18n.In(i18n.Chinese, "incidents.notice.storm", "Count", n, "Title", in.Title)
		lines, err := digest(ctx, tx, in.ID)
		if err != nil {
			return err
		}
		return d.tellCalled(ctx, tx, ch, model, model, text+"\n"+lines, now)
	})
	return alertID, err
}

// tellCalled tells the people from has called so far text, as a notice of a (within
// a's notice cap).
func (d *Coordinator) tellCalled(ctx context.Context, tx *models.Store, ch *audit.Change, a, from *alert.Alert, text string, now time.Time) error {
	people, err := alert.Of(tx).AlertRecipients(ctx, from.ID)
	if err != nil || len(people) == 0 {
		return err
	}
	if a.NoticeCap > 0 {
		within, err := alert.Of(tx).TakeNotices(ctx, a.ID, len(people), now)
		if err != nil || !within {
			return err
		}
	}
	return d.alerts.WriteNotice(ctx, tx, ch, a, people, text)
}

// openQuiet writes an alert that sends nothing and does not escalate: it is recorded,
// shown and acknowledged as any other. model is the alert it takes its policy and
// account from (nil: none).
func openQuiet(ctx context.Context, tx *models.Store, model *alert.Alert, arr Arrival, now time.Time) (*alert.Alert, error) {
	a := &alert.Alert{BatchID: models.NewID(), State: alert.AlertOpen, Subject: arr.Subject, Text: arr.Text, OpenedAt: now,
		Source: arr.Source, DedupKey: arr.DedupKey, Labels: arr.Labels, Severity: arr.Severity, EventCount: 1, LastEventAt: &now,
		NoticeCap: arr.Rules.MaxNoticesPerHour}
	if model != nil {
		a.Policy, a.PolicyCopy, a.AccountID, a.CallbackKeyID = model.Policy, model.PolicyCopy, model.AccountID, model.CallbackKeyID
	}
	if err := alert.Of(tx).CreateAlert(ctx, a, nil); err != nil {
		return nil, err
	}
	return a, nil
}

// openFlapping opens arr's alert quietly, marked flapping, when its key is flapping
// (quiet: true); the first alert of a flapping spell tells the people the key's alerts
// called.
func (d *Coordinator) openFlapping(ctx context.Context, arr Arrival, now time.Time) (int64, bool, error) {
	count := arr.Rules.flapCount()
	history, err := alert.Of(d.store).KeyHistory(ctx, arr.Source, arr.DedupKey, now.Add(-arr.Rules.flapWindow()), count)
	if err != nil || len(history) == 0 {
		return 0, false, err
	}
	spell := history[0].Flapping
	if !spell && len(history)+1 < count {
		return 0, false, nil
	}
	var alertID int64
	err = d.change(ctx, audit.System("integration:"+arr.Source), func(tx *models.Store, ch *audit.Change) error {
		a, err := openQuiet(ctx, tx, &history[0], arr, now)
		if err != nil {
			return err
		}
		alertID = a.ID
		if err := Of(tx).MarkFlapping(ctx, a.ID); err != nil {
			return err
		}
		id := strconv.FormatInt(a.ID, 10)
		ch.Audit("alert.flapping", "alert", id, audit.Params{"id": id, "key": arr.DedupKey, "told": strconv.FormatBool(!spell)})
		if spell {
			return nil
		}
		text := i18n.In(i18n.Chinese, "incidents.notice.flapping", "Title", kernel.TruncateRunes(arr.Subject, 120),
			"Count", len(history)+1, "Window", cmp.Or(strings.TrimSpace(arr.Rules.FlapWindow), "30m"))
		for _, h := range history {
			if h.Flapping {
				continue
			}
			// The people its latest alert that called anyone called.
			called, err := alert.Of(tx).AlertRecipients(ctx, h.ID)
			if err != nil {
				return err
			}
			if len(called) > 0 {
				return d.tellCalled(ctx, tx, ch, a, &h, text, now)
			}
		}
		return nil
	})
	return alertID, true, err
}

// Digest lists the alerts of incident id for its notices: how many, the first
// ListedAlerts, then how many more ("及另外 N 条").
func (d *Coordinator) Digest(ctx context.Context, id int64) (string, error) {
	return digest(ctx, d.store, id)
}

// digest is Digest on store (or its transaction).
func digest(ctx context.Context, store *models.Store, id int64) (string, error) {
	alerts, err := Of(store).Alerts(ctx, ListedAlerts+1, id)
	if err != nil || len(alerts) <= 1 {
		return "", err
	}
	in, err := Of(store).ByID(ctx, id)
	if err != nil {
		return "", err
	}
	lines := []string{i18n.In(i18n.Chinese, "incidents.notice.count", "ID", id, "Count", in.AlertCount)}
	for i, a := range alerts {
		if i == ListedAlerts {
			break
		}
		lines = append(lines, "· "+alertLine(&a))
	}
	if more := in.AlertCount - min(len(alerts), ListedAlerts); more > 0 {
		lines = append(lines, i18n.In(i18n.Chinese, "incidents.notice.more", "N", more))
	}
	return strings.Join(lines, "\n"), nil
}

// alertLine is how an incident's notice names one of its alerts: its subject, with its
// instance label when the subject does not say it (alerts of one key often share
// their subject), else its number.
func alertLine(a *alert.Alert) string {
	line := kernel.TruncateRunes(a.Subject, 80)
	if v := a.Labels["instance"]; v != "" && !strings.Contains(a.Subject, v) {
		line = strings.TrimSpace(line + " " + v)
	}
	if line == "" {
		return "#" + strconv.FormatInt(a.ID, 10)
	}
	return line
}
