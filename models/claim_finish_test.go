package models_test

import (
	"context"
	"errors"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"herald/kernel"
	"herald/models"
	"herald/silence"
)

// TestClaimReadsEveryField: a claim returns the message as GORM reads it, with every
// field set, so the claim's own row scanning converts each type (times, pointers,
// booleans) the way the model does, on either database.
func TestClaimReadsEveryField(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	at := kernel.Now().Add(-time.Minute)
	keyID, alertID, version := int64(7), int64(9), 3
	of, next, digest := models.NewID(), models.NewID(), models.NewID()
	m := f.message("", models.StatusFailed, at)
	m.Subject, m.ContentHTML, m.Attempts, m.ClassRetries = "Ledger", "<p>Overdue</p>", 1, 1
	m.ErrorClass, m.LastError, m.ProviderMessageID, m.TaskID = "transient", "HTTP 503", "pm-1", "task-1"
	m.CallbackKeyID, m.Fallback, m.FallbackDue, m.FallbackOf, m.FallbackNext = &keyID, "email", true, &of, &next
	m.TemplateVersion, m.SentAt, m.RecalledAt, m.RecalledBy, m.AlertID = &version, &at, &at, "admin", &alertID
	m.DigestSlot, m.DigestDueAt, m.DigestMax, m.DigestMessageID = "1/2/disk", &at, 5, &digest
	f.createMessages(t, m)

	claimed, err := f.store.ClaimForSending(ctx, m.ID, kernel.Now().Add(time.Minute))
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

// TestFinishSentFencesEachMessage: a batch of deliveries is recorded in one statement,
// yet each message is finished only under its own claim: not one taken over by another
// claim meanwhile, and not under the token of another message of the batch.
func TestFinishSentFencesEachMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	var msgs []models.Message
	for range 4 {
		msgs = append(msgs, f.message("", models.StatusPending, kernel.Now()))
	}
	f.createMessages(t, msgs...)
	held, takenOver, x, y := msgs[0].ID, msgs[1].ID, msgs[2].ID, msgs[3].ID
	found, token, err := f.store.ClaimMany(ctx, []string{held, takenOver}, kernel.Now().Add(-time.Second))
	if err != nil || !found[held].Claimed(token) || !found[takenOver].Claimed(token) {
		t.Fatalf("claim: %v", err)
	}
	// Another worker takes over the second claim after its lease ran out.
	if _, err := f.store.ClaimForSending(ctx, takenOver, kernel.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	claimX, err := f.store.ClaimForSending(ctx, x, kernel.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	claimY, err := f.store.ClaimForSending(ctx, y, kernel.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// x and y as a worker would hold them with their claims swapped: each token is in
	// the batch, but not beside its message.
	swappedX, swappedY := *claimX, *claimY
	swappedX.ClaimToken, swappedY.ClaimToken = claimY.ClaimToken, claimX.ClaimToken

	sent := func(m *models.Message) models.Finish {
		return models.Finish{Message: m, Outcome: models.Outcome{Status: models.StatusSent, ProviderMessageID: "pm-" + m.ID,
			CountsAttempt: true, Called: true, StartedAt: kernel.Now()}}
	}
	errs := f.store.FinishAttempts(ctx, []models.Finish{sent(found[held]), sent(found[takenOver]), sent(&swappedX), sent(&swappedY)})
	type result struct {
		Finished bool
		Status   models.Status
	}
	want := map[string]result{held: {true, models.StatusSent}, takenOver: {false, models.StatusSending},
		x: {false, models.StatusSending}, y: {false, models.StatusSending}}
	got := map[string]result{}
	for i, id := range []string{held, takenOver, x, y} {
		if errs[i] != nil && !errors.Is(errs[i], kernel.ErrStateChanged) {
			t.Fatalf("finish of %s: %v", id, errs[i])
		}
		m, err := f.store.MessageByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got[id] = result{errs[i] == nil, m.Status}
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("finished messages (-want +got):\n%s", diff)
	}
}

// TestClaimKeepsTheRowsLength: however a message comes to wait (written by an intake,
// made as the next message of a fallback chain, released by a silence), its claim
// columns already have the length a claim gives them (a token as long as a claim's, a
// lease that has ended), so that InnoDB updates the claimed row in place. The lease it
// carries does not make it look held: it is claimable at once (and a message written
// sending with no lease still is not, TestClaimForSending).
func TestClaimKeepsTheRowsLength(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	due := kernel.Now().Add(-time.Minute)
	for _, tt := range []struct {
		name    string
		waiting func(t *testing.T) string // returns the id of a message now waiting
	}{
		{"intake", func(t *testing.T) string {
			m := f.message("", models.StatusPending, due)
			f.createMessages(t, m)
			return m.ID
		}},
		{"fallback", func(t *testing.T) string {
			prev := f.message("", models.StatusStopped, due)
			prev.Fallback, prev.FallbackDue = "email", true
			f.createMessages(t, prev)
			next := f.message(prev.BatchID, models.StatusPending, due)
			if err := f.store.Intake().LinkFallback(ctx, &prev, &next); err != nil {
				t.Fatal(err)
			}
			return next.ID
		}},
		{"silence release", func(t *testing.T) string {
			m := f.message("", models.StatusPending, due)
			f.createMessages(t, m)
			sil := &silence.Silence{Matchers: silence.Matchers{}, StartsAt: due, EndsAt: due.Add(time.Hour), OnEnd: "release", CreatedBy: "admin"}
			if err := silence.Of(f.store).CreateSilence(ctx, sil); err != nil {
				t.Fatal(err)
			}
			if held, _, err := silence.Of(f.store).HoldMessages(ctx, map[string][]int64{m.ID: {sil.ID}}, nil, kernel.Now()); err != nil || len(held) != 1 {
				t.Fatalf("hold: %v %v", held, err)
			}
			if moved, _, err := silence.Of(f.store).ReleaseHeld(ctx, []silence.Release{{TaskID: m.ID + ":released", IDs: []string{m.ID}, DueAt: due}}, nil, kernel.Now()); err != nil || len(moved[0]) != 1 {
				t.Fatalf("release: %v %v", moved, err)
			}
			return m.ID
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := tt.waiting(t)
			written, err := f.store.MessageByID(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			claimed, err := f.store.ClaimForSending(ctx, id, kernel.Now().Add(time.Minute))
			if err != nil {
				t.Fatalf("a waiting message is not claimable: %v", err)
			}
			if written.LeaseUntil == nil || written.LeaseUntil.After(kernel.Now()) || len(written.ClaimToken) != len(claimed.ClaimToken) ||
				written.ClaimToken == claimed.ClaimToken {
				t.Errorf("waiting with lease %v and token %q; its claim has token %q: want a lease that ended and a token of the same length",
					written.LeaseUntil, written.ClaimToken, claimed.ClaimToken)
			}
		})
	}
}
