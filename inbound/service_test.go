package inbound_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"herald/alert"
	"herald/audit"
	"herald/channels"
	"herald/delivery"
	"herald/directory"
	"herald/inbound"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"

	"github.com/google/go-cmp/cmp"
)

var admin = audit.Actor{Name: "admin", Type: audit.ActorUser}

// integrationFixture is a store with the policy and the person a route names.
func integrationFixture(t *testing.T, s *models.Store) *inbound.Gateway {
	t.Helper()
	ctx := context.Background()
	err := alert.Of(s).CreatePolicy(ctx, &alert.EscalationPolicy{Name: "night", Steps: []alert.PolicyStep{{Targets: []string{"on_duty"}, Wait: "10m"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Directory().CreateRecipient(ctx, &directory.Recipient{ExternalID: "E1001", Name: "李伟", OrgType: directory.HeadOffice, Active: true}); err != nil {
		t.Fatal(err)
	}
	return inbound.NewService(inbound.Config{Store: s, Platforms: channels.Platforms})
}

func nightRoute() inbound.Route {
	return inbound.Route{Matchers: []delivery.Matcher{{Name: "label:severity", Value: "critical"}}, Policy: "night",
		Platform: "sandbox", Priority: "high", Recipients: []string{"E1001"}}
}

// An integration is saved with its token's hash only: the token is returned once, opens
// it, and another token or another name does not; a new token replaces the old at once.
func TestIntegrationTokens(t *testing.T) {
	testenv.OnBothDialects(t, func(t *testing.T, s *models.Store) {
		ctx := context.Background()
		svc := integrationFixture(t, s)
		it, token, err := svc.CreateIntegration(ctx, admin, inbound.IntegrationInput{Name: "prom", Format: inbound.FormatAlertmanager,
			Routes: []inbound.Route{nightRoute()}, NotifyOnResolve: true})
		if err != nil {
			t.Fatal(err)
		}
		if token == "" || it.TokenHash != kernel.HashToken(token) || strings.Contains(it.TokenHash, token) {
			t.Fatalf("token %q kept as %q", token, it.TokenHash)
		}
		if stored := testenv.QueryStrings(t, s.SQL(), "SELECT token_hash FROM integrations WHERE name = 'prom'"); len(stored) != 1 || stored[0] != kernel.HashToken(token) {
			t.Fatalf("stored %q", stored)
		}
		if got, err := svc.Authenticate(ctx, "prom", token); err != nil || got.ID != it.ID || !got.NotifyOnResolve || len(got.Routes) != 1 {
			t.Fatalf("the right token: %+v, %v", got, err)
		}
		for _, bad := range []struct{ name, token string }{{"prom", token + "x"}, {"prom", ""}, {"grafana", token}} {
			if _, err := svc.Authenticate(ctx, bad.name, bad.token); !errors.Is(err, inbound.ErrToken) {
				t.Errorf("%s with %q: %v, want ErrToken", bad.name, bad.token, err)
			}
		}
		fresh, err := svc.RotateToken(ctx, admin, "prom")
		if err != nil || fresh == token {
			t.Fatalf("rotate: %q, %v", fresh, err)
		}
		if _, err := svc.Authenticate(ctx, "prom", token); !errors.Is(err, inbound.ErrToken) {
			t.Errorf("the old token still opens it: %v", err)
		}
		if _, err := svc.Authenticate(ctx, "prom", fresh); err != nil {
			t.Errorf("the new token: %v", err)
		}
		entries, err := s.AuditLog().List(ctx, audit.Filter{Target: "prom"}, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Params != nil && (strings.Contains(*e.Params, token) || strings.Contains(*e.Params, fresh)) {
				t.Errorf("audit entry %s carries the token: %s", e.Action, *e.Params)
			}
		}
		if len(entries) != 2 {
			t.Errorf("%d audit entries, want create and token", len(entries))
		}
	})
}

// Bad input names its field, and nothing is written.
func TestIntegrationInputErrors(t *testing.T) {
	testenv.OnBothDialects(t, func(t *testing.T, s *models.Store) {
		ctx := context.Background()
		svc := integrationFixture(t, s)
		route := func(edit func(r *inbound.Route)) []inbound.Route {
			r := nightRoute()
			edit(&r)
			return []inbound.Route{r}
		}
		for _, tc := range []struct {
			name  string
			in    inbound.IntegrationInput
			field string
		}{
			{"no name", inbound.IntegrationInput{Format: inbound.FormatEvents}, "name"},
			{"a name that is no path segment", inbound.IntegrationInput{Name: "Prom/1", Format: inbound.FormatEvents}, "name"},
			{"an unknown format", inbound.IntegrationInput{Name: "p", Format: "nagios"}, "format"},
			{"an unknown language", inbound.IntegrationInput{Name: "p", Format: inbound.FormatEvents, Language: "fr"}, "language"},
			{"an unknown policy", inbound.IntegrationInput{Name: "p", Format: inbound.FormatEvents, Routes: route(func(r *inbound.Route) { r.Policy = "day" })}, "routes[0].policy"},
			{"no policy", inbound.IntegrationInput{Name: "p", Format: inbound.FormatEvents, Routes: route(func(r *inbound.Route) { r.Policy = "" })}, "routes[0].policy"},
			{"a matcher on no field", inbound.IntegrationInput{Name: "p", Format: inbound.FormatEvents,
				Routes: route(func(r *inbound.Route) { r.Matchers[0].Name = "host" })}, "routes[0].matchers[0].name"},
			{"a bad regex", inbound.IntegrationInput{Name: "p", Format: inbound.FormatEvents,
				Routes: route(func(r *inbound.Route) { r.Matchers[0].Regex, r.Matchers[0].Value = true, "(" })}, "routes[0].matchers[0].value"},
			{"an unknown person", inbound.IntegrationInput{Name: "p", Format: inbound.FormatEvents,
				Routes: route(func(r *inbound.Route) { r.Recipients = []string{"E1001", "E9999"} })}, "routes[0].recipients[1]"},
			{"an account and a platform", inbound.IntegrationInput{Name: "p", Format: inbound.FormatEvents,
				Routes: route(func(r *inbound.Route) { r.Account, r.Platform = "ops", "wecom" })}, "routes[0].platform"},
			{"neither an account nor a platform", inbound.IntegrationInput{Name: "p", Format: inbound.FormatEvents,
				Routes: route(func(r *inbound.Route) { r.Platform = "" })}, "routes[0].platform"},
			{"an unknown priority", inbound.IntegrationInput{Name: "p", Format: inbound.FormatEvents,
				Routes: route(func(r *inbound.Route) { r.Priority = "urgent" })}, "routes[0].priority"},
			{"an unknown template", inbound.IntegrationInput{Name: "p", Format: inbound.FormatEvents,
				Routes: route(func(r *inbound.Route) { r.Template = "nope" })}, "routes[0].template"},
			{"a default route with matchers", inbound.IntegrationInput{Name: "p", Format: inbound.FormatEvents, DefaultRoute: func() *inbound.Route { r := nightRoute(); return &r }()}, "default_route.matchers"},
			{"a mapping on a format that takes none", inbound.IntegrationInput{Name: "p", Format: inbound.FormatEvents, Mapping: map[string]string{"title": "{{.x}}"}}, "mapping"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, _, err := svc.CreateIntegration(ctx, admin, tc.in)
				fe, ok := errors.AsType[*kernel.FieldError](err)
				if !ok || fe.Field != tc.field {
					t.Fatalf("error %v, want a field error on %s", err, tc.field)
				}
			})
		}
		if _, _, err := svc.CreateIntegration(ctx, admin, inbound.IntegrationInput{Name: "p", Format: inbound.FormatEvents}); err != nil {
			t.Fatal(err)
		}
		_, _, err := svc.CreateIntegration(ctx, admin, inbound.IntegrationInput{Name: "p", Format: inbound.FormatZabbix})
		if fe, ok := errors.AsType[*kernel.FieldError](err); !ok || fe.Field != "name" {
			t.Errorf("a name in use: %v", err)
		}
		if n := testenv.Count(t, s, "SELECT COUNT(*) FROM integrations"); n != 1 {
			t.Errorf("%d integrations written, want the one valid", n)
		}
	})
}

// An edit replaces the routes and keeps the name, format and token; a deletion removes
// the integration with what came in through it, and the list of what came in keeps the
// newest events only.
func TestIntegrationEditDeleteAndEvents(t *testing.T) {
	testenv.OnBothDialects(t, func(t *testing.T, s *models.Store) {
		ctx := context.Background()
		svc := integrationFixture(t, s)
		it, token, err := svc.CreateIntegration(ctx, admin, inbound.IntegrationInput{Name: "zbx", Format: inbound.FormatZabbix})
		if err != nil {
			t.Fatal(err)
		}
		edited, err := svc.UpdateIntegration(ctx, admin, "zbx", inbound.IntegrationInput{Name: "other", Format: inbound.FormatEvents,
			Routes: []inbound.Route{nightRoute()}, DefaultRoute: &inbound.Route{Policy: "night", Platform: "sandbox"}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := svc.Authenticate(ctx, "zbx", token)
		if err != nil || got.Format != inbound.FormatZabbix || len(got.Routes) != 1 || got.DefaultRoute == nil || edited.ID != it.ID {
			t.Fatalf("after the edit: %+v, %v", got, err)
		}
		st := inbound.NewStore(s.DB())
		for i := range inbound.KeptEvents + 5 {
			ev := inbound.Received{Outcome: inbound.OutcomeIgnored, DedupKey: "k" + strings.Repeat("x", i%3), Body: strings.Repeat("b", inbound.MaxKeptBody+10)}
			if err := st.Record(ctx, it.ID, []inbound.Received{ev}); err != nil {
				t.Fatal(err)
			}
		}
		events, err := svc.Events(ctx, "zbx")
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != inbound.KeptEvents || len(events[0].Body) != inbound.MaxKeptBody || events[0].ID < events[1].ID {
			t.Fatalf("%d events kept (first body %d bytes), want the newest %d, cut to %d", len(events), len(events[0].Body), inbound.KeptEvents, inbound.MaxKeptBody)
		}
		if err := svc.DeleteIntegration(ctx, admin, "zbx"); err != nil {
			t.Fatal(err)
		}
		if n := testenv.Count(t, s, "SELECT COUNT(*) FROM inbound_events"); n != 0 {
			t.Errorf("%d events left after the deletion", n)
		}
		if err := svc.DeleteIntegration(ctx, admin, "zbx"); !errors.Is(err, kernel.ErrNotFound) {
			t.Errorf("deleting it again: %v", err)
		}
	})
}

// Taking a dedup key is the compare-and-set that makes concurrent duplicates one alert:
// one taker wins, the others see the alert it recorded; released, the key opens anew.
func TestDedupKeys(t *testing.T) {
	testenv.OnBothDialects(t, func(t *testing.T, s *models.Store) {
		ctx := context.Background()
		st := inbound.NewStore(s.DB())
		results := make(chan bool, 16)
		for range 16 {
			go func() {
				took, _, err := st.TakeKey(ctx, 7, "node1::HighCPU")
				if err != nil {
					t.Error(err)
				}
				results <- took
			}()
		}
		won := 0
		for range 16 {
			if <-results {
				won++
			}
		}
		if won != 1 {
			t.Fatalf("%d of 16 concurrent takers took the key, want 1", won)
		}
		if err := st.SetKeyAlert(ctx, 7, "node1::HighCPU", 42); err != nil {
			t.Fatal(err)
		}
		if took, alertID, err := st.TakeKey(ctx, 7, "node1::HighCPU"); err != nil || took || alertID == nil || *alertID != 42 {
			t.Fatalf("a later taker: took %v, alert %v, %v", took, alertID, err)
		}
		if took, _, err := st.TakeKey(ctx, 8, "node1::HighCPU"); err != nil || !took {
			t.Errorf("another integration's same key: took %v, %v", took, err)
		}
		if err := st.ReleaseKey(ctx, 7, "node1::HighCPU"); err != nil {
			t.Fatal(err)
		}
		if took, _, err := st.TakeKey(ctx, 7, "node1::HighCPU"); err != nil || !took {
			t.Errorf("after the release: took %v, %v", took, err)
		}
	})
}

// The observer (herald_inbound_events_total) hears of each event by what became of it,
// and of each post refused for its token: under the integration's name only when the
// integration exists, so a caller cannot fill the counter's labels.
func TestInboundObserver(t *testing.T) {
	testenv.OnBothDialects(t, func(t *testing.T, s *models.Store) {
		ctx := context.Background()
		integrationFixture(t, s)
		var heard []string
		svc := inbound.NewService(inbound.Config{Store: s, Platforms: channels.Platforms,
			Observe: func(integration, outcome string) { heard = append(heard, integration+"/"+outcome) }})
		it, token, err := svc.CreateIntegration(ctx, admin, inbound.IntegrationInput{Name: "prom", Format: inbound.FormatEvents})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = svc.Authenticate(ctx, "prom", "wrong")
		_, _ = svc.Authenticate(ctx, "made-up-name", token)
		if _, err := svc.Receive(ctx, it, []byte(`{"event_action":"resolve","dedup_key":"k1"}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Receive(ctx, it, []byte(`{"event_action":"trigger"}`)); err == nil {
			t.Fatal("a body without its dedup key was taken")
		}
		want := []string{"prom/unauthorized", "/unauthorized", "prom/ignored", "prom/refused"}
		if diff := cmp.Diff(want, heard); diff != "" {
			t.Errorf("heard (-want +got):\n%s", diff)
		}
	})
}

// The body kept in the list of what came in leaves out what may be a secret: the values
// of fields named for one, and the credentials and queries of URLs.
func TestKeptBodyLeavesOutSecrets(t *testing.T) {
	testenv.OnBothDialects(t, func(t *testing.T, s *models.Store) {
		ctx := context.Background()
		integrationFixture(t, s)
		svc := inbound.NewService(inbound.Config{Store: s, Platforms: channels.Platforms})
		it, _, err := svc.CreateIntegration(ctx, admin, inbound.IntegrationInput{Name: "prom", Format: inbound.FormatEvents})
		if err != nil {
			t.Fatal(err)
		}
		body := `{"event_action":"resolve","dedup_key":"k1","labels":{"api_key":"s3cr3t-key","Password":"hunter2"},` +
			`"links":[{"name":"log","url":"https://ops:pw@logs.example/run?sig=abc123"}],"title":"disk full"}`
		if _, err := svc.Receive(ctx, it, []byte(body)); err != nil {
			t.Fatal(err)
		}
		events, err := svc.Events(ctx, "prom")
		if err != nil || len(events) != 1 {
			t.Fatalf("events %v, %v", events, err)
		}
		kept := events[0].Body
		for _, secret := range []string{"s3cr3t-key", "hunter2", "ops:pw", "abc123"} {
			if strings.Contains(kept, secret) {
				t.Errorf("the kept body holds %q: %s", secret, kept)
			}
		}
		if !strings.Contains(kept, `"title":"disk full"`) || !strings.Contains(kept, "logs.example/run") {
			t.Errorf("the kept body lost what is no secret: %s", kept)
		}
	})
}
