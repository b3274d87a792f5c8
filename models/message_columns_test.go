package models_test

import (
	"context"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"herald/models"
)

// TestClaimReadsEveryField: a claim returns the message as GORM reads it, with every
// field set, so the claim's own row scanning converts each type (times, pointers,
// booleans) the way the model does, on either database.
func TestClaimReadsEveryField(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	at := models.Now().Add(-time.Minute)
	keyID, alertID, version := int64(7), int64(9), 3
	of, next, digest := models.NewID(), models.NewID(), models.NewID()
	m := f.message("", models.StatusFailed, at)
	m.Subject, m.ContentHTML, m.Attempts, m.ClassRetries = "Ledger", "<p>Overdue</p>", 1, 1
	m.ErrorClass, m.LastError, m.ProviderMessageID, m.TaskID = "transient", "HTTP 503", "pm-1", "task-1"
	m.CallbackKeyID, m.Fallback, m.FallbackDue, m.FallbackOf, m.FallbackNext = &keyID, "email", true, &of, &next
	m.TemplateVersion, m.SentAt, m.RecalledAt, m.RecalledBy, m.AlertID = &version, &at, &at, "admin", &alertID
	m.DigestSlot, m.DigestDueAt, m.DigestMax, m.DigestMessageID = "1/2/disk", &at, 5, &digest
	f.createMessages(t, m)

	claimed, err := f.store.ClaimForSending(ctx, m.ID, models.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := f.store.MessageByID(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(stored, claimed); diff != "" {
		t.Errorf("claimed message against the stored one (-stored +claimed):\n%s", diff)
	}
	if claimed.LeaseUntil == nil || claimed.ClaimToken == "" || claimed.FallbackOf == nil || *claimed.FallbackOf != of {
		t.Errorf("claimed message lacks its claim or its chain: %+v", claimed)
	}
}
