package dispatch_test

import (
	"context"
	"errors"
	"herald/directory"
	"herald/dispatch"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/sending"
	"herald/templates"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestIntakeRefusesPlantedTemplates: a template stored without Herald's checks (written
// to the database directly) is checked again at every intake, and its render is held to
// the account's platform cap.
func TestIntakeRefusesPlantedTemplates(t *testing.T) {
	t.Parallel()
	store := testenv.Store(t)
	ctx := context.Background()
	d, err := dispatch.NewDispatcher(dispatch.Config{Store: store, Enqueuer: testenv.Enqueuer(t), Location: time.UTC, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Directory().CreateRecipient(ctx, &directory.Recipient{ExternalID: "E1", Name: "Li Wei", OrgType: directory.Branch,
		WecomUserid: "liwei", Active: true}); err != nil {
		t.Fatal(err)
	}
	if err := store.Sending().CreateAccount(ctx, &sending.Account{Name: "wc", Platform: "wecom", Enabled: true, Healthy: true,
		Config: map[string]string{"corp_id": "c", "agent_id": "1", "secret": "s"}}); err != nil {
		t.Fatal(err)
	}
	for _, tm := range []templates.Template{
		{Name: "runaway", MsgType: "text", Body: `{{range 20}}{{printf "%999999d" 0}}{{end}}`},
		{Name: "echo", MsgType: "text", Body: "{{.t}}{{.t}}{{.t}}", Variables: templates.StringList{"t"}},
	} {
		if err := store.Templates().CreateTemplate(ctx, &tm); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		template string
		vars     map[string]string
		message  string
	}{
		{"runaway", nil, "template runaway is broken: body: line 1:8: range is not allowed"},
		{"echo", map[string]string{"t": strings.Repeat("x", 1000)}, "for Li Wei (E1): body: renders more than 2048 bytes; wecom accepts 2048"},
	}
	for _, tt := range tests {
		_, err := d.Plan(ctx, dispatch.Request{Source: "api", Account: "wc", Recipients: []string{"E1"}, Template: tt.template, Variables: tt.vars})
		var fe *kernel.FieldError
		if !errors.As(err, &fe) || fe.Field != "template" || !strings.HasPrefix(fe.Message, tt.message) {
			t.Errorf("intake with template %s: %v, want a FieldError on template starting %q", tt.template, err, tt.message)
		}
	}
}
