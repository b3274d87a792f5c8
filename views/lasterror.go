package views

import (
	"context"
	"regexp"
	"strings"

	"herald/i18n"
	"herald/models"
)

// Herald stores a message's last error as text, in English, and the API returns it as
// stored: calling systems and operators' scripts read it. The console shows a catalog
// sentence instead, with the stored text beside it as a detail. The waits and holds
// Herald writes itself (tasks' sender, the lease sweep) each have a sentence of their
// own, recognised by their stored form below; any other text (a platform's answer)
// gets the sentence of its error class.

// ownErrors are the stored forms of the errors Herald writes itself, each with the
// catalog key of its sentence (messages.error.<key>) and the names its groups fill in.
var ownErrors = []struct {
	form  *regexp.Regexp
	key   string
	names []string
}{
	// tasks' admit: "waiting for per_minute capacity" (a window of delivery.LimitWindows,
	// or one of the limiter's own refusals, matched first).
	{regexp.MustCompile(`^waiting for priority capacity$`), "capacity_priority", nil},
	{regexp.MustCompile(`^waiting for (?:late_admission|unreplicated_admission) capacity$`), "capacity_again", nil},
	{regexp.MustCompile(`^waiting for (\S+) capacity$`), "capacity", []string{"Window"}},
	{regexp.MustCompile(`^rate limiter unavailable: `), "limiter_unavailable", nil},
	// tasks' quietHours: "quiet hours of account ty-main until 2026-01-02 08:00".
	{regexp.MustCompile(`^quiet hours of account (.+) until (\d{4}-\d{2}-\d{2} \d{2}:\d{2})$`), "quiet_hours", []string{"Account", "Until"}},
	// tasks' deliver.
	{regexp.MustCompile(`^account (.+) is disabled$`), "account_disabled", []string{"Account"}},
	{regexp.MustCompile(`^worker stopping$`), "worker_stopping", nil},
	// models' lease sweep.
	{regexp.MustCompile(`^the worker stopped answering during the attempt`), "lease_expired", nil},
}

// errorSentence is a stored error as a person reads it, in the language of ctx: the
// sentence of Herald's own wait or hold it records, else the sentence of its class.
// It returns "" when it has nothing to say beyond the stored text (no class, or a class
// without a sentence): the page then shows the text as it is.
func errorSentence(ctx context.Context, class, stored string) string {
	if stored == "" && class == "" {
		return ""
	}
	for _, e := range ownErrors {
		m := e.form.FindStringSubmatch(stored)
		if m == nil {
			continue
		}
		args := make([]any, 0, 2*len(e.names))
		for i, name := range e.names {
			value := m[i+1]
			if name == "Window" {
				value = i18n.Name(ctx, "dashboard.window", value)
			}
			args = append(args, name, value)
		}
		return i18n.T(ctx, "messages.error."+e.key, args...)
	}
	if class == "" {
		return ""
	}
	id := "messages.error.class." + class
	if !i18n.Has(i18n.Lang(ctx), id) {
		return ""
	}
	return i18n.T(ctx, id)
}

// storedError is a stored error (a message's last, an attempt's, a recent failure) as a
// sentence in the reader's language, and the stored text behind it ("" when the sentence
// is the text itself).
func storedError(ctx context.Context, class, stored string) (sentence, detail string) {
	stored = strings.TrimSpace(stored)
	if class == models.ErrorNoAddress {
		return i18n.T(ctx, "messages.error.class.no_address"), ""
	}
	s := errorSentence(ctx, class, stored)
	if s == "" {
		return stored, ""
	}
	return s, stored
}
