package inbound

import (
	"cmp"
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/i18n"
	"herald/incident"
	"herald/kernel"
	"herald/models"
)

// Gateway makes the integrations' changes, each validated, then written with its audit
// entry in one transaction (audit.Run), and checks the tokens the tools present.
type Gateway struct {
	store *models.Store
	// platforms are the platforms a route may name.
	platforms []string
	// opener opens an event's alert through the intake; alerts resolves it.
	opener Opener
	alerts *alert.Service
	// incidents groups, quiets and bounds the alerts routes open; nil: each opens
	// on its own.
	incidents *incident.Coordinator
	// inhibitor says whether an open alert inhibits an event's alert (nil: none does).
	inhibitor Inhibitor
	clock     func() time.Time
	observe   Observer
	// loc is HERALD_TIMEZONE: the days a heartbeat of working days expects pings on.
	loc *time.Location
	log *slog.Logger
}

// Observer hears of each event an integration received and what became of it
// (herald_inbound_events_total), and of each post refused for its token
// (OutcomeUnauthorized, under the integration's name when it exists, else "").
type Observer func(integration, outcome string)

// OutcomeUnauthorized counts a post refused for its token: it is not recorded with the
// integration's events.
const OutcomeUnauthorized = "unauthorized"

// Config is what a Gateway is built from. Inbox is required; zero values of the rest take
// the defaults their comments give.
type Config struct {
	Store *models.Store
	// Platforms are the platforms a route may send on (channels.Platforms).
	Platforms []string
	// Opener opens alerts through the intake and Alerts resolves them; nil where nothing
	// is received (the command line).
	Opener Opener
	Alerts *alert.Service
	// Incidents groups the alerts of routes that say so into incidents, quiets flapping
	// keys and bounds notices; nil: each alert opens on its own.
	Incidents *incident.Coordinator
	// Inhibitor decides inhibition (package inhibit); nil: no alert is inhibited.
	Inhibitor Inhibitor
	// Now is the clock; nil means kernel.Now.
	Now func() time.Time
	// Observe hears of every event received; nil: nobody.
	Observe Observer
	// Location is HERALD_TIMEZONE; nil means UTC.
	Location *time.Location
	// Log defaults to slog.Default().
	Log *slog.Logger
}

// NewService builds the integrations' service from cfg.
func NewService(cfg Config) *Gateway {
	d := &Gateway{store: cfg.Store, platforms: cfg.Platforms, opener: cfg.Opener, alerts: cfg.Alerts, incidents: cfg.Incidents, inhibitor: cfg.Inhibitor, clock: cfg.Now,
		observe: cfg.Observe, loc: cfg.Location, log: cfg.Log}
	if d.observe == nil {
		d.observe = func(string, string) {}
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	return d
}

// now is the service's clock, in UTC, to the microsecond the database keeps.
func (d *Gateway) now() time.Time { return kernel.Clock(d.clock).Now().Truncate(time.Microsecond) }

// change runs fn with a store bound to one transaction and writes the audit entries fn
// recorded in it (audit.Run).
func (d *Gateway) change(ctx context.Context, by audit.Actor, fn func(tx *models.Store, ch *audit.Change) error) error {
	return audit.RunOn(ctx, d.store.DB(), by, d.store.On, fn)
}

// ErrToken refuses an event whose integration or token is unknown: the two are not told
// apart, so a wrong guess learns nothing.
var ErrToken = kernel.Declare(kernel.DomainError{Kind: kernel.KindUnauthorized, Code: "unauthorized", Key: "integrations.error.token",
	Text: "inbound: unknown integration or token"})

// IntegrationInput is an integration as the console's form and the API give it.
type IntegrationInput struct {
	Name            string
	Format          string
	Routes          []Route
	DefaultRoute    *Route
	NotifyOnResolve bool
	// Language is the built-in notice's language; "" means i18n.Chinese.
	Language string
	// Mapping and ValueMap are a custom format's field mapping and value map.
	Mapping  map[string]string
	ValueMap map[string]map[string]string
}

// check validates an input into the integration it saves; errors name their field.
func (d *Gateway) check(ctx context.Context, in IntegrationInput) (*Integration, error) {
	it := &Integration{Name: strings.TrimSpace(in.Name), Format: strings.TrimSpace(in.Format),
		Routes: in.Routes, DefaultRoute: in.DefaultRoute, NotifyOnResolve: in.NotifyOnResolve,
		Language: cmp.Or(strings.TrimSpace(in.Language), i18n.Chinese)}
	if !slices.Contains(i18n.Languages, it.Language) {
		return nil, kernel.Invalid("language", "integrations.invalid.language", "Languages", strings.Join(i18n.Languages, ", "))
	}
	if err := checkName(it.Name); err != nil {
		return nil, err
	}
	if err := checkFormat(it.Format); err != nil {
		return nil, err
	}
	switch {
	case it.Format == FormatCustom:
		m := Mapping{Fields: in.Mapping, Values: in.ValueMap}
		if err := m.Check(); err != nil {
			return nil, err
		}
		it.MappingFields, it.ValueMap = in.Mapping, in.ValueMap
	case len(in.Mapping) > 0 || len(in.ValueMap) > 0:
		return nil, kernel.Invalid("mapping", "integrations.invalid.mapping_not_custom")
	}
	if len(it.Routes) > MaxRoutes {
		return nil, kernel.Invalid("routes", "integrations.invalid.too_many_routes", "Max", MaxRoutes)
	}
	if it.Routes == nil {
		it.Routes = Routes{}
	}
	for i := range it.Routes {
		if err := d.checkRoute(ctx, "routes["+strconv.Itoa(i)+"]", &it.Routes[i]); err != nil {
			return nil, err
		}
	}
	if it.DefaultRoute != nil {
		if len(it.DefaultRoute.Matchers) > 0 {
			return nil, kernel.Invalid("default_route.matchers", "integrations.invalid.default_matchers")
		}
		if err := d.checkRoute(ctx, "default_route", it.DefaultRoute); err != nil {
			return nil, err
		}
	}
	return it, nil
}

// checkRoute checks a route's fields and that what it names exists.
func (d *Gateway) checkRoute(ctx context.Context, prefix string, r *Route) error {
	if err := r.checkShape(prefix, d.platforms); err != nil {
		return err
	}
	if _, err := alert.Of(d.store).PolicyByName(ctx, r.Policy); errors.Is(err, kernel.ErrNotFound) {
		return kernel.Invalid(prefix+".policy", "alerts.invalid.unknown_policy", "Name", r.Policy)
	} else if err != nil {
		return err
	}
	if r.Template != "" {
		if _, err := d.store.Templates().TemplateByName(ctx, r.Template); errors.Is(err, kernel.ErrNotFound) {
			return kernel.Invalid(prefix+".template", "integrations.invalid.unknown_template", "Name", r.Template)
		} else if err != nil {
			return err
		}
	}
	if r.Account != "" {
		if _, err := d.store.Sending().AccountByName(ctx, r.Account); errors.Is(err, kernel.ErrNotFound) {
			return kernel.Invalid(prefix+".account", "integrations.invalid.unknown_account", "Name", r.Account)
		} else if err != nil {
			return err
		}
	}
	if len(r.Recipients) > 0 {
		people, err := d.store.Directory().CachedRecipientsByExternalIDs(ctx, r.Recipients)
		if err != nil {
			return err
		}
		known := make(map[string]bool, len(people))
		for _, p := range people {
			known[p.ExternalID] = true
		}
		for i, ext := range r.Recipients {
			if !known[ext] {
				return kernel.Invalid(prefix+".recipients["+strconv.Itoa(i)+"]", "alerts.invalid.unknown_person", "Name", ext)
			}
		}
	}
	return nil
}

// integrationParams name an integration for its audit sentence; never its token.
func integrationParams(it *Integration) audit.Params {
	return audit.Params{"name": it.Name, "format": it.Format, "routes": strconv.Itoa(len(it.Routes))}
}

// CreateIntegration saves a new integration and returns it with its token, which is
// shown this once: Herald keeps only its hash. Audited as integration.create, without
// the token.
func (d *Gateway) CreateIntegration(ctx context.Context, by audit.Actor, in IntegrationInput) (*Integration, string, error) {
	it, err := d.check(ctx, in)
	if err != nil {
		return nil, "", err
	}
	token := kernel.NewToken()
	it.TokenHash, it.CreatedBy = kernel.HashToken(token), by.Name
	err = d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := NewStore(tx.DB()).CreateIntegration(ctx, it); err != nil {
			return err
		}
		ch.Audit("integration.create", "integration", it.Name, integrationParams(it))
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return it, token, nil
}

// UpdateIntegration replaces the routes, the default route, notify_on_resolve and a
// custom format's mapping of the integration called name; its name, format and token
// stay (in.Name and in.Format are not read). kernel.ErrNotFound: no such integration.
func (d *Gateway) UpdateIntegration(ctx context.Context, by audit.Actor, name string, in IntegrationInput) (*Integration, error) {
	old, err := NewStore(d.store.DB()).IntegrationByName(ctx, name)
	if err != nil {
		return nil, err
	}
	in.Name, in.Format = old.Name, old.Format
	it, err := d.check(ctx, in)
	if err != nil {
		return nil, err
	}
	it.ID, it.TokenHash, it.CreatedBy, it.CreatedAt = old.ID, old.TokenHash, old.CreatedBy, old.CreatedAt
	err = d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := NewStore(tx.DB()).UpdateIntegration(ctx, it); err != nil {
			return err
		}
		ch.Audit("integration.update", "integration", it.Name, integrationParams(it))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return it, nil
}

// RotateToken gives the integration called name a new token, returned this once; the
// old one stops working at once. Audited as integration.token.
func (d *Gateway) RotateToken(ctx context.Context, by audit.Actor, name string) (string, error) {
	token := kernel.NewToken()
	err := d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		st := NewStore(tx.DB())
		it, err := st.IntegrationByName(ctx, name)
		if err != nil {
			return err
		}
		if err := st.SetToken(ctx, it.ID, kernel.HashToken(token)); err != nil {
			return err
		}
		ch.Audit("integration.token", "integration", it.Name, audit.Params{"name": it.Name})
		return nil
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// DeleteIntegration removes the integration called name and what came in through it;
// the alerts it opened stay. Audited as integration.delete. kernel.ErrNotFound: no such
// integration.
func (d *Gateway) DeleteIntegration(ctx context.Context, by audit.Actor, name string) error {
	return d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		st := NewStore(tx.DB())
		it, err := st.IntegrationByName(ctx, name)
		if err != nil {
			return err
		}
		if err := st.DeleteIntegration(ctx, it.ID); err != nil {
			return err
		}
		ch.Audit("integration.delete", "integration", it.Name, integrationParams(it))
		return nil
	})
}

// Integrations lists the integrations by name, each with when it last received an
// event.
func (d *Gateway) Integrations(ctx context.Context) ([]Integration, error) {
	st := NewStore(d.store.DB())
	list, err := st.Integrations(ctx)
	if err != nil {
		return nil, err
	}
	for i := range list {
		if list[i].LastEventAt, err = st.LastEvent(ctx, list[i].ID); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// Integration reads the integration called name, with when it last received an event;
// kernel.ErrNotFound when there is none.
func (d *Gateway) Integration(ctx context.Context, name string) (*Integration, error) {
	st := NewStore(d.store.DB())
	it, err := st.IntegrationByName(ctx, name)
	if err != nil {
		return nil, err
	}
	if it.LastEventAt, err = st.LastEvent(ctx, it.ID); err != nil {
		return nil, err
	}
	return it, nil
}

// Events lists the newest events the integration called name received (at most
// KeptEvents), with what became of each.
func (d *Gateway) Events(ctx context.Context, name string) ([]Received, error) {
	st := NewStore(d.store.DB())
	it, err := st.IntegrationByName(ctx, name)
	if err != nil {
		return nil, err
	}
	return st.Events(ctx, it.ID, KeptEvents)
}

// Authenticate finds the integration called name if token is its token; ErrToken
// otherwise, whether the name or the token was wrong.
func (d *Gateway) Authenticate(ctx context.Context, name, token string) (*Integration, error) {
	it, err := NewStore(d.store.DB()).IntegrationByName(ctx, name)
	if errors.Is(err, kernel.ErrNotFound) {
		// Not the name asked for: a caller must not fill the counter's labels.
		d.observe("", OutcomeUnauthorized)
		return nil, ErrToken
	}
	if err != nil {
		return nil, err
	}
	if token == "" || subtle.ConstantTimeCompare([]byte(kernel.HashToken(token)), []byte(it.TokenHash)) != 1 {
		d.observe(it.Name, OutcomeUnauthorized)
		return nil, ErrToken
	}
	return it, nil
}
