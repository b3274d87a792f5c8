package models_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"herald/audit"
	"herald/internal/testenv"
	"herald/models"
	"herald/templates"
)

// TestIntakeRowsAsGORMWritesThem: the batch and audit rows the intake writes with plain
// INSERTs read back exactly as the same rows written with GORM's Create, with every
// field set and with every pointer nil and the times left for the write to set.
func TestIntakeRowsAsGORMWritesThem(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	for _, full := range []bool{true, false} {
		t.Run(fmt.Sprintf("every field set %v", full), func(t *testing.T) {
			var viaGORM, plain models.Batch
			var gormAudit, plainAudit audit.Entry
			if full {
				models.FillFields(&viaGORM) // the JSON columns are set below
				models.FillFields(&gormAudit)
				viaGORM.Skipped = models.Reasons{{Recipient: "E1", Reason: "off_duty"}}
				viaGORM.Rejected = models.Reasons{{Recipient: "E2", Reason: "unknown_recipient"}}
				viaGORM.Variables = models.VarMap{"ticket": "42"}
				viaGORM.TemplateContent = &models.TemplateContent{Name: "overdue", MsgType: "text", Body: "逾期：{{.ticket}}"}
				viaGORM.Makers = templates.StringList{"alice", "bob"}
				gormAudit.ID = 0
			}
			viaGORM.ID = models.NewID()
			viaGORM.AccountID = 1
			viaGORM.Source, viaGORM.Platform, viaGORM.Priority = "api", "tianyuan", models.PriorityNormal
			gormAudit.Action, gormAudit.Actor, gormAudit.ActorType = "batch.create", "gorm-"+viaGORM.ID, "api_key"
			plain, plainAudit = viaGORM, gormAudit
			plain.ID, plainAudit.Actor = models.NewID(), "plain-"+viaGORM.ID
			if err := s.CreateBothWays(ctx, &viaGORM, &plain, &gormAudit, &plainAudit); err != nil {
				t.Fatal(err)
			}
			if plain.CreatedAt.IsZero() || plainAudit.At.IsZero() {
				t.Fatalf("the write left the times zero: batch %v, audit entry %v", plain.CreatedAt, plainAudit.At)
			}
			a, err := s.BatchByID(ctx, viaGORM.ID)
			if err != nil {
				t.Fatal(err)
			}
			b, err := s.BatchByID(ctx, plain.ID)
			if err != nil {
				t.Fatal(err)
			}
			sameTimes := cmpopts.EquateApproxTime(time.Second) // CreatedAt of a zero row: now, twice
			if diff := cmp.Diff(a, b, sameTimes, cmpopts.IgnoreFields(models.Batch{}, "ID")); diff != "" {
				t.Errorf("batch written plainly against GORM's (-gorm +plain):\n%s", diff)
			}
			var entries []audit.Entry
			for _, actor := range []string{gormAudit.Actor, plainAudit.Actor} {
				list, err := s.AuditLog().List(ctx, audit.Filter{Actor: actor}, 10)
				if err != nil || len(list) != 1 {
					t.Fatalf("audit entries of %s: %v, %v", actor, list, err)
				}
				entries = append(entries, list[0])
			}
			if diff := cmp.Diff(entries[0], entries[1], sameTimes, cmpopts.IgnoreFields(audit.Entry{}, "ID", "Actor")); diff != "" {
				t.Errorf("audit entry written plainly against GORM's (-gorm +plain):\n%s", diff)
			}
			if full && !a.CreatedAt.Equal(viaGORM.CreatedAt) {
				t.Errorf("created_at %v, want the batch's own %v", a.CreatedAt, viaGORM.CreatedAt)
			}
		})
	}
}
