package models_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"herald/audit"
	"herald/directory"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
	"herald/sending"
)

// BenchmarkCreateBatch writes one intake of 1,000 messages (a fan-out) a time, on MySQL
// when HERALD_TEST_MYSQL_DSN is set, else on SQLite; -benchmem shows what the INSERT
// costs the process in allocations.
func BenchmarkCreateBatch(b *testing.B) {
	s := testenv.Store(b)
	acct, people := benchDirectory(b, s, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		benchIntake(b, s, acct, people, "逾期：台账 42")
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(people)), "µs/message")
}

// benchDirectory creates a Tianyuan account and n branch people who have its address.
func benchDirectory(b *testing.B, s *models.Store, n int) (*sending.Account, []*directory.Recipient) {
	b.Helper()
	ctx := context.Background()
	acct := &sending.Account{Name: "ty-bench", Platform: "tianyuan", Enabled: true, Healthy: true,
		Config: map[string]string{"base_url": "http://127.0.0.1:9900/tianyuan", "token": "tok"}}
	if err := s.Sending().CreateAccount(ctx, acct); err != nil {
		b.Fatal(err)
	}
	var people []*directory.Recipient
	for i := range n {
		r := &directory.Recipient{ExternalID: fmt.Sprintf("B%04d", i), Name: fmt.Sprintf("员工 %d", i), OrgType: directory.Branch,
			TianyuanID: fmt.Sprintf("ty_B%04d", i), Active: true}
		if err := s.Directory().CreateRecipient(ctx, r); err != nil {
			b.Fatal(err)
		}
		people = append(people, r)
	}
	return acct, people
}

// benchIntake writes one intake of a message to each of people through acct, due now,
// and returns the messages' ids.
func benchIntake(b *testing.B, s *models.Store, acct *sending.Account, people []*directory.Recipient, content string) []string {
	b.Helper()
	batch := benchBatch(acct)
	now := kernel.Now()
	msgs := make([]models.Message, len(people))
	ids := make([]string, len(people))
	for i, r := range people {
		msgs[i] = benchMessage(acct, batch, r, content, now)
		ids[i] = msgs[i].ID
	}
	if err := s.CreateBatch(context.Background(), batch, msgs, nil); err != nil {
		b.Fatal(err)
	}
	return ids
}

// BenchmarkCreateBatchesSingle writes single-recipient intakes, each with its audit
// entry, a group of them in one shared transaction a time, as concurrent API requests
// are written (two at a time is what 1,000 requests a second make); -benchmem shows
// what their rows cost the process.
func BenchmarkCreateBatchesSingle(b *testing.B) {
	s := testenv.Store(b)
	acct, people := benchDirectory(b, s, 16)
	now := kernel.Now()
	for _, group := range []int{1, 2, 16} {
		b.Run(fmt.Sprintf("group=%d", group), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				items := make([]models.NewBatch, group)
				for i := range items {
					batch := benchBatch(acct)
					batch.Requested, batch.Accepted = 1, 1
					msg := benchMessage(acct, batch, people[i], "逾期：台账 42", now)
					entry := audit.Entry{Actor: "bench", ActorType: "api_key", Action: "batch.create", TargetType: "batch",
						TargetID: batch.ID, IP: "127.0.0.1"}.WithParams(audit.Params{"accepted": "1", "skipped": "0", "rejected": "0"})
					items[i] = models.NewBatch{Batch: batch, Messages: []models.Message{msg}, Extras: &models.BatchExtras{Audit: &entry}}
				}
				for _, err := range s.CreateBatches(context.Background(), items) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*group), "µs/intake")
		})
	}
}

// benchBatch is a new API batch through acct.
func benchBatch(acct *sending.Account) *models.Batch {
	return &models.Batch{ID: models.NewID(), Source: "api", Platform: acct.Platform, AccountID: acct.ID, Priority: "normal"}
}

// benchMessage is a new pending message of batch to r through acct, due at now.
func benchMessage(acct *sending.Account, batch *models.Batch, r *directory.Recipient, content string, now time.Time) models.Message {
	return models.Message{ID: models.NewID(), BatchID: batch.ID, RecipientID: r.ID, AccountID: acct.ID,
		Platform: acct.Platform, Address: r.Address(acct.Platform), MsgType: "text", Content: content,
		Priority: "normal", Status: models.StatusPending, MaxAttempts: sending.DefaultMaxAttempts, SendAt: now, NextAttemptAt: &now}
}
