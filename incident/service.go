package incident

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/kernel"
	"herald/models"
)

// Coordinator makes the incidents' changes, each validated, then written with its audit
// entries in one transaction (audit.Run), and decides for the intake how an alert an
// integration posts opens: on its own, joining an incident, or quietly while its key
// is flapping.
type Coordinator struct {
	store *models.Store
	// alerts acknowledges and resolves an incident's alerts and writes its notices.
	alerts *alert.Service
	// clock is the clock; nil means kernel.Now.
	clock func() time.Time
}

// NewService builds the incidents' service on store, acting on alerts through the
// alerts' service; clock is the clock (nil: kernel.Now).
func NewService(store *models.Store, alerts *alert.Service, clock func() time.Time) *Coordinator {
	return &Coordinator{store: store, alerts: alerts, clock: clock}
}

// change runs fn with a store bound to one transaction and writes the audit entries fn
// recorded in it (audit.Run).
func (d *Coordinator) change(ctx context.Context, by audit.Actor, fn func(tx *models.Store, ch *audit.Change) error) error {
	return audit.RunOn(ctx, d.store.DB(), by, d.store.On, fn)
}

// now is the service's clock, in UTC, to the microsecond the database keeps.
func (d *Coordinator) now() time.Time { return kernel.Clock(d.clock).Now().Truncate(time.Microsecond) }

// errMoved rolls back a change that found the incident already past it.
var errMoved = errors.New("incident: incident already moved")

// maxAlerts is how many of an incident's alerts a page or an answer shows, and how many
// an acknowledgment or resolution acts on.
const maxAlerts = 1000

// Get returns an incident and its alerts, the first first. kernel.ErrNotFound: no such
// incident.
func (d *Coordinator) Get(ctx context.Context, id int64) (*Incident, []alert.Alert, error) {
	in, err := Of(d.store).ByID(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	alerts, err := Of(d.store).Alerts(ctx, maxAlerts, id)
	return in, alerts, err
}

// List lists the incidents f selects, the newest first; an unknown state is a field
// error.
func (d *Coordinator) List(ctx context.Context, f Filter, limit int) ([]Incident, error) {
	if f.State != "" && !slices.Contains(States, f.State) {
		return nil, kernel.Invalid("state", "incidents.invalid.state", "States", strings.Join(States, ", "))
	}
	return Of(d.store).List(ctx, f, limit)
}

// Result is an incident after an acknowledgment or resolution; Already says it had
// moved so before, and this call changed nothing.
type Result struct {
	Incident *Incident
	Already  bool
}

// Acknowledge acknowledges an incident and, each with its own compare-and-set and audit
// entry, its alerts not yet acknowledged: their escalation (the incident's) stops.
// externalID names the person (an external id; "" for a console user, who is by.Name);
// via is how (alert.AckViaConsole, alert.AckViaAPI).
func (d *Coordinator) Acknowledge(ctx context.Context, by audit.Actor, id int64, externalID, via, note string) (Result, error) {
	return d.move(ctx, by, id, externalID, via, note, StateAcknowledged)
}

// Resolve resolves an incident and its alerts not yet resolved.
func (d *Coordinator) Resolve(ctx context.Context, by audit.Actor, id int64, externalID, via, note string) (Result, error) {
	return d.move(ctx, by, id, externalID, via, note, StateResolved)
}

// move acknowledges or resolves incident id, then its alerts.
func (d *Coordinator) move(ctx context.Context, by audit.Actor, id int64, externalID, via, note, to string) (Result, error) {
	externalID = strings.TrimSpace(externalID)
	if via != alert.AckViaConsole && externalID == "" {
		return Result{}, kernel.Invalid("by", "alerts.invalid.by_required")
	}
	if len(note) > 1000 {
		return Result{}, kernel.Invalid("note", "compose.check.max_bytes", "Max", 1000)
	}
	if err := kernel.CheckText("note", note, true); err != nil {
		return Result{}, err
	}
	in, err := Of(d.store).ByID(ctx, id)
	if err != nil {
		return Result{}, err
	}
	if !in.CanMoveTo(to) {
		return Result{Incident: in, Already: true}, nil
	}
	who := externalID
	if who == "" {
		who = by.Name
	}
	now := d.now()
	err = d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		return d.moveIn(ctx, tx, ch, in, to, who, via, note, now)
	})
	if errors.Is(err, errMoved) {
		in, err = Of(d.store).ByID(ctx, id)
		return Result{Incident: in, Already: true}, err
	}
	if err != nil {
		return Result{}, err
	}
	alerts, err := Of(d.store).Alerts(ctx, maxAlerts, id)
	if err != nil {
		return Result{}, err
	}
	for _, a := range alerts {
		moveAlert := d.alerts.ResolveAlert
		if to == StateAcknowledged {
			if !a.CanMoveTo(alert.AlertAcknowledged) {
				continue
			}
			moveAlert = d.alerts.AcknowledgeAlert
		} else if !a.CanMoveTo(alert.AlertResolved) {
			continue
		}
		if _, err := moveAlert(ctx, by, a.ID, externalID, via, note); err != nil && !errors.Is(err, alert.ErrAlertEnded) {
			return Result{}, err
		}
	}
	in, err = Of(d.store).ByID(ctx, id)
	return Result{Incident: in}, err
}

// moveIn moves in to state to, in tx: the compare-and-set, its audit entry and its
// status event. errMoved: it had moved meanwhile.
func (d *Coordinator) moveIn(ctx context.Context, tx *models.Store, ch *audit.Change, in *Incident, to, who, via, note string, now time.Time) error {
	set := map[string]any{"state": to}
	from, action, event := Acknowledgeable, "incident.acknowledge", EventAcknowledged
	if to == StateAcknowledged {
		set["acknowledged_by"], set["acknowledged_at"] = kernel.Truncate(who, 128), now
	} else {
		from, action, event = Resolvable, "incident.resolve", EventResolved
		set["resolved_by"], set["resolved_at"], set["open_key"] = kernel.Truncate(who, 128), now, nil
	}
	moved, err := Of(tx).Move(ctx, in.ID, from, set)
	if err != nil {
		return err
	}
	if !moved {
		return errMoved
	}
	if err := d.event(ctx, tx, in, event, to, who, now); err != nil {
		return err
	}
	id := strconv.FormatInt(in.ID, 10)
	if action == "incident.acknowledge" {
		ch.Audit("incident.acknowledge", "incident", id, audit.Params{"id": id, "by": who, "via": via, "note": note})
	} else {
		ch.Audit("incident.resolve", "incident", id, audit.Params{"id": id, "by": who, "via": via, "note": note})
	}
	return nil
}

// Recovered resolves the incident of alert alertID, which has just ended, once none of
// its alerts is left open: by the integration, via alert.AckViaSource.
func (d *Coordinator) Recovered(ctx context.Context, by audit.Actor, alertID int64) error {
	a, err := alert.Of(d.store).AlertByID(ctx, alertID)
	if err != nil || a.IncidentID == nil || a.EndedAt == nil {
		return err
	}
	left, err := Of(d.store).CountUnended(ctx, *a.IncidentID)
	if err != nil || left > 0 {
		return err
	}
	in, err := Of(d.store).ByID(ctx, *a.IncidentID)
	if err != nil || !in.CanMoveTo(StateResolved) {
		return err
	}
	err = d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		return d.moveIn(ctx, tx, ch, in, StateResolved, a.Source, alert.AckViaSource, "", d.now())
	})
	if errors.Is(err, errMoved) {
		return nil
	}
	return err
}

// event records an incident's status event for the API key that opened its first
// alert, as that alert's events are; an incident whose first alert no key opened (an
// integration's) has none.
func (d *Coordinator) event(ctx context.Context, tx *models.Store, in *Incident, typ, state, by string, now time.Time) error {
	if in.AlertID == nil {
		return nil
	}
	lead, err := alert.Of(tx).AlertByID(ctx, *in.AlertID)
	if err != nil || lead.CallbackKeyID == nil {
		return err
	}
	e := alert.AlertEvent{AlertID: lead.ID, BatchID: lead.BatchID, State: state, Step: lead.Step, Round: lead.Round, By: by}
	return alert.Of(tx).RecordAlertEvent(ctx, *lead.CallbackKeyID, typ, e, now)
}
