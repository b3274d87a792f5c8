package models_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"herald/directory"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
)

func TestCreateBatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	now := kernel.Now()
	b := f.batch()
	b.Requested, b.Accepted, b.SkippedCount = 1201, 1200, 1
	b.Skipped = models.Reasons{{Recipient: "E9001", Reason: "off_duty"}}
	// More than two insert chunks of 500 rows.
	msgs := make([]models.Message, 1200)
	for i := range msgs {
		msgs[i] = f.message(b.ID, models.StatusPending, now)
	}
	if err := f.store.CreateBatch(ctx, b, msgs, nil); err != nil {
		t.Fatal(err)
	}

	got, err := f.store.BatchByID(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(b.Skipped, got.Skipped); diff != "" {
		t.Errorf("batch skipped reasons after a round trip (-want +got):\n%s", diff)
	}
	if diff := gocmp.Diff([]int{1201, 1200, 1}, []int{got.Requested, got.Accepted, got.SkippedCount}); diff != "" {
		t.Errorf("batch [requested accepted skipped] (-want +got):\n%s", diff)
	}
	if n := testenv.Count(t, f.store, "SELECT COUNT(*) FROM messages WHERE batch_id = ?", b.ID); n != len(msgs) {
		t.Errorf("batch has %d message rows, want %d", n, len(msgs))
	}
	last, err := f.store.MessageByID(ctx, msgs[len(msgs)-1].ID)
	if err != nil {
		t.Fatalf("last message of the batch: %v", err)
	}
	if last.BatchID != b.ID || last.Status != models.StatusPending {
		t.Errorf("last message has batch %s status %s, want batch %s status pending", last.BatchID, last.Status, b.ID)
	}

	if err := f.store.CreateBatch(ctx, &models.Batch{ID: b.ID, Source: "api", Platform: "tianyuan", AccountID: f.account.ID, Priority: "low"}, nil, nil); !errors.Is(err, kernel.ErrDuplicate) {
		t.Errorf("CreateBatch with an existing id: %v, want ErrDuplicate", err)
	}
}

func TestCreateBatchIsAtomic(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	now := kernel.Now()
	b := f.batch()
	msgs := make([]models.Message, 1200)
	for i := range msgs {
		msgs[i] = f.message(b.ID, models.StatusPending, now)
	}
	// The duplicate sits in the third insert chunk, after two chunks have gone in.
	msgs[1100].ID = msgs[3].ID

	if err := f.store.CreateBatch(ctx, b, msgs, nil); err == nil {
		t.Fatal("CreateBatch with a duplicate message id succeeded, want an error")
	}
	if _, err := f.store.BatchByID(ctx, b.ID); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("BatchByID after the failed CreateBatch: %v, want ErrNotFound", err)
	}
	for _, table := range []string{"batches", "messages"} {
		if n := testenv.Count(t, f.store, "SELECT COUNT(*) FROM "+table); n != 0 {
			t.Errorf("%s holds %d rows after the failed CreateBatch, want 0", table, n)
		}
	}
}

func TestClaimForSendingConcurrently(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	m := f.message("", models.StatusPending, kernel.Now())
	f.createMessages(t, m)

	const claimers = 20
	lease := kernel.Now().Add(30 * time.Second)
	start := make(chan struct{})
	errs := make([]error, claimers)
	var wg sync.WaitGroup
	for i := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = f.store.ClaimForSending(ctx, m.ID, lease)
		}()
	}
	close(start)
	wg.Wait()

	var won, lost int
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, kernel.ErrStateChanged):
			lost++
		default:
			t.Errorf("ClaimForSending: unexpected error %v", err)
		}
	}
	if diff := gocmp.Diff([]int{1, claimers - 1}, []int{won, lost}); diff != "" {
		t.Errorf("[claimed stateChanged] among %d concurrent claims (-want +got):\n%s", claimers, diff)
	}

	got, err := f.store.MessageByID(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != models.StatusSending || got.LeaseUntil == nil || !got.LeaseUntil.Equal(lease) {
		t.Errorf("claimed message has status %s lease %v, want sending with lease %v", got.Status, got.LeaseUntil, lease)
	}
}

func TestClaimForSending(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	now := kernel.Now()
	tests := []struct {
		name          string
		status        models.Status
		nextAttemptAt time.Time
		claimable     bool
	}{
		{"due pending", models.StatusPending, now.Add(-time.Minute), true},
		{"due failed", models.StatusFailed, now, true},
		{"pending due in ten minutes", models.StatusPending, now.Add(10 * time.Minute), false},
		{"failed due in ten minutes", models.StatusFailed, now.Add(10 * time.Minute), false},
		{"cancelled", models.StatusCancelled, now.Add(-time.Minute), false},
		{"sent", models.StatusSent, now.Add(-time.Minute), false},
		{"stopped", models.StatusStopped, now.Add(-time.Minute), false},
		{"already sending", models.StatusSending, now.Add(-time.Minute), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := f.message("", tt.status, tt.nextAttemptAt)
			f.createMessages(t, m)
			got, err := f.store.ClaimForSending(ctx, m.ID, kernel.Now().Add(30*time.Second))
			wantStatus := tt.status
			if tt.claimable {
				wantStatus = models.StatusSending
				if err != nil {
					t.Fatalf("ClaimForSending: %v, want success", err)
				}
			} else if !errors.Is(err, kernel.ErrStateChanged) {
				t.Fatalf("ClaimForSending: %v, want ErrStateChanged", err)
			}
			if got == nil || got.Status != wantStatus {
				t.Errorf("ClaimForSending returned %+v, want the message with status %s", got, wantStatus)
			}
			stored, err := f.store.MessageByID(ctx, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Status != wantStatus {
				t.Errorf("stored status %s, want %s", stored.Status, wantStatus)
			}
		})
	}

	t.Run("unknown message", func(t *testing.T) {
		if _, err := f.store.ClaimForSending(ctx, models.NewID(), kernel.Now().Add(time.Minute)); !errors.Is(err, kernel.ErrNotFound) {
			t.Errorf("ClaimForSending of an unknown id: %v, want ErrNotFound", err)
		}
	})
}

func TestFinishAttempt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	retryAt := kernel.Now().Add(time.Minute)
	tests := []struct {
		name          string
		priorAttempts int
		outcome       models.Outcome
		wantAttempts  int
		wantOutcome   string // "" when no attempt row is expected
	}{
		{
			name:          "sent",
			priorAttempts: 1,
			outcome: models.Outcome{Status: models.StatusSent, ProviderMessageID: "pm-1", ProviderCode: "0",
				CountsAttempt: true, Called: true, Duration: 42 * time.Millisecond},
			wantAttempts: 2,
			wantOutcome:  "sent",
		},
		{
			name: "transient failure",
			outcome: models.Outcome{Status: models.StatusFailed, ErrorClass: "transient", Error: "HTTP 503",
				ProviderCode: "503", NextAttemptAt: &retryAt, CountsAttempt: true, Called: true, Duration: 7 * time.Millisecond},
			wantAttempts: 1,
			wantOutcome:  "failed",
		},
		{
			name:          "throttled by the limiter",
			priorAttempts: 1,
			outcome: models.Outcome{Status: models.StatusPending, ErrorClass: "throttled", Error: "per_second limit",
				NextAttemptAt: &retryAt, CountsAttempt: false},
			wantAttempts: 1,
		},
		{
			name:          "rate limited by the provider",
			priorAttempts: 2,
			outcome: models.Outcome{Status: models.StatusFailed, ErrorClass: "rate_limited", Error: "HTTP 429", ProviderCode: "429",
				NextAttemptAt: &retryAt, CountsAttempt: false, ClassRetries: 1, Called: true, Duration: time.Millisecond},
			wantAttempts: 2,
			wantOutcome:  "failed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := f.message("", models.StatusPending, kernel.Now())
			m.Attempts = tt.priorAttempts
			f.createMessages(t, m)
			claimed, err := f.store.ClaimForSending(ctx, m.ID, kernel.Now().Add(30*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			o := tt.outcome
			o.StartedAt = kernel.Now()
			before := kernel.Now()
			if err := f.store.FinishAttempt(ctx, claimed, o); err != nil {
				t.Fatalf("FinishAttempt: %v", err)
			}
			after := kernel.Now()

			got, err := f.store.MessageByID(ctx, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			type state struct {
				Status            models.Status
				Attempts          int
				ClassRetries      int
				ErrorClass        string
				LastError         string
				ProviderMessageID string
				NextAttemptAt     *time.Time
				LeaseUntil        *time.Time
				SentAtSet         bool
			}
			want := state{Status: o.Status, Attempts: tt.wantAttempts, ClassRetries: o.ClassRetries, ErrorClass: o.ErrorClass,
				LastError: o.Error, ProviderMessageID: o.ProviderMessageID, NextAttemptAt: o.NextAttemptAt,
				SentAtSet: o.Status == models.StatusSent}
			gotState := state{Status: got.Status, Attempts: got.Attempts, ClassRetries: got.ClassRetries, ErrorClass: got.ErrorClass,
				LastError: got.LastError, ProviderMessageID: got.ProviderMessageID, NextAttemptAt: got.NextAttemptAt,
				LeaseUntil: got.LeaseUntil, SentAtSet: got.SentAt != nil}
			if diff := gocmp.Diff(want, gotState); diff != "" {
				t.Errorf("message after FinishAttempt (-want +got):\n%s", diff)
			}
			if got.SentAt != nil && (got.SentAt.Before(before) || got.SentAt.After(after)) {
				t.Errorf("sent_at = %v, want between %v and %v", got.SentAt, before, after)
			}

			attempts, err := f.store.AttemptsOf(ctx, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			var wantRows []models.Attempt
			if tt.wantOutcome != "" {
				wantRows = []models.Attempt{{MessageID: m.ID, N: tt.wantAttempts, StartedAt: o.StartedAt,
					DurationMs: int(o.Duration.Milliseconds()), Outcome: tt.wantOutcome, ErrorClass: o.ErrorClass,
					ProviderCode: o.ProviderCode, Error: o.Error}}
			}
			if diff := gocmp.Diff(wantRows, attempts, cmpopts.IgnoreFields(models.Attempt{}, "ID"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("attempt rows (-want +got):\n%s", diff)
			}

			// The message has left sending: finishing it again must change nothing.
			err = f.store.FinishAttempt(ctx, claimed, o)
			if !errors.Is(err, kernel.ErrStateChanged) {
				t.Errorf("second FinishAttempt: %v, want an error wrapping ErrStateChanged", err)
			}
			if again, _ := f.store.AttemptsOf(ctx, m.ID); len(again) != len(wantRows) {
				t.Errorf("second FinishAttempt left %d attempt rows, want %d", len(again), len(wantRows))
			}
		})
	}

	t.Run("message not in sending", func(t *testing.T) {
		m := f.message("", models.StatusPending, kernel.Now())
		f.createMessages(t, m)
		err := f.store.FinishAttempt(ctx, &m, models.Outcome{Status: models.StatusSent, ProviderMessageID: "pm-x",
			CountsAttempt: true, Called: true, StartedAt: kernel.Now()})
		if !errors.Is(err, kernel.ErrStateChanged) {
			t.Errorf("FinishAttempt on a pending message: %v, want an error wrapping ErrStateChanged", err)
		}
		if n := testenv.Count(t, f.store, "SELECT COUNT(*) FROM attempts WHERE message_id = ?", m.ID); n != 0 {
			t.Errorf("%d attempt rows written, want 0", n)
		}
		got, err := f.store.MessageByID(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != models.StatusPending || got.Attempts != 0 || got.SentAt != nil {
			t.Errorf("message became status %s attempts %d sent_at %v, want it untouched", got.Status, got.Attempts, got.SentAt)
		}
	})
}

func TestDueMessagesPaging(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	now := kernel.Now()
	dueAt := now.Add(-time.Minute)

	// 2,500 due messages sharing one next_attempt_at, so paging must break ties by id.
	var msgs []models.Message
	var want []string
	for i := range 2500 {
		status := models.StatusPending
		if i%10 == 0 {
			status = models.StatusFailed
		}
		m := f.message("", status, dueAt)
		msgs = append(msgs, m)
		want = append(want, m.ID)
	}
	for range 20 {
		msgs = append(msgs, f.message("", models.StatusPending, now.Add(time.Hour)))
		msgs = append(msgs, f.message("", models.StatusFailed, now.Add(time.Hour)))
		for _, st := range []models.Status{models.StatusSent, models.StatusSending, models.StatusStopped, models.StatusCancelled} {
			msgs = append(msgs, f.message("", st, dueAt))
		}
	}
	f.createMessages(t, msgs...)

	var got []string
	var pages []int
	var after models.DueCursor
	for len(pages) < 10 {
		page, err := f.store.DueMessages(ctx, now, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		pages = append(pages, len(page))
		for _, m := range page {
			got = append(got, m.ID)
		}
		last := page[len(page)-1]
		after = models.DueCursor{At: last.NextAttemptAt, ID: last.ID}
	}

	if diff := gocmp.Diff([]int{1000, 1000, 500}, pages); diff != "" {
		t.Errorf("page sizes (-want +got):\n%s", diff)
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("ids returned by paging through DueMessages (-want +got):\n%s", diff)
	}
}

func TestDueMessagesOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	now := kernel.Now()
	late := f.message("", models.StatusPending, now.Add(-time.Second))
	early := f.message("", models.StatusFailed, now.Add(-time.Hour))
	middle := f.message("", models.StatusPending, now.Add(-time.Minute))
	f.createMessages(t, late, early, middle)

	page, err := f.store.DueMessages(ctx, now, models.DueCursor{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []models.DueMessage{
		{ID: early.ID, Priority: "normal", NextAttemptAt: *early.NextAttemptAt},
		{ID: middle.ID, Priority: "normal", NextAttemptAt: *middle.NextAttemptAt},
		{ID: late.ID, Priority: "normal", NextAttemptAt: *late.NextAttemptAt},
	}
	if diff := gocmp.Diff(want, page); diff != "" {
		t.Errorf("DueMessages (-want +got):\n%s", diff)
	}
}

func TestReleaseExpiredLeases(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	expired := f.message("", models.StatusPending, kernel.Now())
	live := f.message("", models.StatusPending, kernel.Now())
	untouched := f.message("", models.StatusPending, kernel.Now())
	f.createMessages(t, expired, live, untouched)
	liveLease := kernel.Now().Add(time.Minute)
	if _, err := f.store.ClaimForSending(ctx, expired.ID, kernel.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.ClaimForSending(ctx, live.ID, liveLease); err != nil {
		t.Fatal(err)
	}

	claimed, err := f.store.MessageByID(ctx, expired.ID)
	if err != nil {
		t.Fatal(err)
	}
	before := kernel.Now()
	released, err := f.store.ReleaseExpiredLeases(ctx)
	after := kernel.Now()
	if err != nil {
		t.Fatal(err)
	}
	want := []models.Released{{ID: expired.ID, Priority: expired.Priority, ExpiredToken: claimed.ClaimToken}}
	if diff := gocmp.Diff(want, released); diff != "" {
		t.Errorf("ReleaseExpiredLeases (-want +got):\n%s", diff)
	}
	attempts, err := f.store.AttemptsOf(ctx, expired.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 1 || attempts[0].Outcome != models.AttemptUnknown || attempts[0].N != 1 {
		t.Errorf("attempts of the released message: %+v, want one with outcome unknown", attempts)
	}

	got, err := f.store.MessageByID(ctx, expired.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != models.StatusFailed || got.LeaseUntil != nil || got.Attempts != 1 {
		t.Errorf("expired lease: status %s lease %v attempts %d, want failed with no lease, one attempt used",
			got.Status, got.LeaseUntil, got.Attempts)
	}
	if got.NextAttemptAt == nil || got.NextAttemptAt.Before(before) || got.NextAttemptAt.After(after) {
		t.Errorf("expired lease: next_attempt_at %v, want between %v and %v", got.NextAttemptAt, before, after)
	}
	if _, err := f.store.ClaimForSending(ctx, expired.ID, kernel.Now().Add(time.Minute)); err != nil {
		t.Errorf("released message cannot be claimed again: %v", err)
	}

	got, err = f.store.MessageByID(ctx, live.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != models.StatusSending || got.LeaseUntil == nil || !got.LeaseUntil.Equal(liveLease) {
		t.Errorf("live lease: status %s lease %v, want sending with lease %v", got.Status, got.LeaseUntil, liveLease)
	}
	got, err = f.store.MessageByID(ctx, untouched.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != models.StatusPending {
		t.Errorf("pending message became %s", got.Status)
	}
}

func TestRenewLeasesKeepsLiveClaims(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	held := f.message("", models.StatusPending, kernel.Now())
	takenOver := f.message("", models.StatusPending, kernel.Now())
	f.createMessages(t, held, takenOver)
	past := kernel.Now().Add(-time.Second)
	found, token, err := f.store.ClaimMany(ctx, []string{held.ID, takenOver.ID}, past)
	if err != nil || !found[held.ID].Claimed(token) || !found[takenOver.ID].Claimed(token) {
		t.Fatalf("claim: %v", err)
	}
	// Another worker takes over the second claim after its lease ran out.
	if _, err := f.store.ClaimForSending(ctx, takenOver.ID, kernel.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	claimedAt, err := f.store.MessageByID(ctx, held.ID)
	if err != nil {
		t.Fatal(err)
	}
	until := kernel.Now().Add(10 * time.Second)
	n, err := f.store.RenewLeases(ctx, []string{held.ID, takenOver.ID}, []string{token}, until)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("RenewLeases renewed %d leases, want 1 (the claim taken over is not ours)", n)
	}
	released, err := f.store.ReleaseExpiredLeases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(released) != 0 {
		t.Errorf("a renewed claim was released: %+v", released)
	}
	got, err := f.store.MessageByID(ctx, held.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.LeaseUntil == nil || !got.LeaseUntil.Equal(until.UTC()) {
		t.Errorf("renewed lease %v, want %v", got.LeaseUntil, until)
	}
	if !got.UpdatedAt.Equal(claimedAt.UpdatedAt) {
		t.Errorf("renewal moved updated_at from %v to %v; it dates the claim", claimedAt.UpdatedAt, got.UpdatedAt)
	}
}

func TestBatchStatusCountsAndMessages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	ann := &directory.Recipient{ExternalID: "E1002", Name: "Ann Zhou", OrgType: directory.HeadOffice, TianyuanID: "ty_E1002", Active: true}
	if err := f.store.Directory().CreateRecipient(ctx, ann); err != nil {
		t.Fatal(err)
	}
	now := kernel.Now()
	msgs := []models.Message{
		f.message("", models.StatusPending, now),
		f.messageTo(ann, "", models.StatusPending, now),
		f.message("", models.StatusPending, now),
		f.messageTo(ann, "", models.StatusSent, now),
		f.message("", models.StatusSent, now),
		f.messageTo(ann, "", models.StatusCancelled, now),
	}
	batchID := f.createMessages(t, msgs...)
	otherBatch := f.createMessages(t, f.message("", models.StatusFailed, now), f.message("", models.StatusPending, now))

	counts, err := f.store.BatchStatusCounts(ctx, batchID)
	if err != nil {
		t.Fatal(err)
	}
	wantCounts := map[models.Status]int{models.StatusPending: 3, models.StatusSent: 2, models.StatusCancelled: 1}
	if diff := gocmp.Diff(wantCounts, counts.ByStatus); diff != "" {
		t.Errorf("BatchStatusCounts (-want +got):\n%s", diff)
	}
	if counts.Reached != 2 || counts.Falling != 0 {
		t.Errorf("reached %d, falling %d; want the two people with a sent message, none falling", counts.Reached, counts.Falling)
	}
	if counts, err := f.store.BatchStatusCounts(ctx, otherBatch); err != nil {
		t.Fatal(err)
	} else if diff := gocmp.Diff(map[models.Status]int{models.StatusFailed: 1, models.StatusPending: 1}, counts.ByStatus); diff != "" {
		t.Errorf("BatchStatusCounts of the other batch (-want +got):\n%s", diff)
	}

	type row struct {
		ID, RecipientName, RecipientExternalID, Address string
		Status                                          models.Status
	}
	names := map[int64][2]string{f.recipient.ID: {f.recipient.Name, f.recipient.ExternalID}, ann.ID: {ann.Name, ann.ExternalID}}
	var want []row
	for _, m := range msgs {
		n := names[m.RecipientID]
		want = append(want, row{ID: m.ID, RecipientName: n[0], RecipientExternalID: n[1], Address: m.Address, Status: m.Status})
	}
	// Ordered by recipient name, then message id.
	slices.SortFunc(want, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.RecipientName, b.RecipientName), cmp.Compare(a.ID, b.ID))
	})

	list := func(limit int) []row {
		t.Helper()
		got, err := f.store.MessagesOfBatch(ctx, batchID, limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []row
		for _, m := range got {
			out = append(out, row{ID: m.ID, RecipientName: m.RecipientName, RecipientExternalID: m.RecipientExternalID,
				Address: m.Address, Status: m.Status})
		}
		return out
	}
	if diff := gocmp.Diff(want, list(100)); diff != "" {
		t.Errorf("MessagesOfBatch (-want +got):\n%s", diff)
	}
	if diff := gocmp.Diff(want[:4], list(4)); diff != "" {
		t.Errorf("MessagesOfBatch with limit 4 (-want +got):\n%s", diff)
	}
}
