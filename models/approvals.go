package models

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"herald/access"
	"herald/audit"
	"herald/internal/states"
	"herald/kernel"
	"herald/templates"
)

// Approval states of a batch (Batch.Approval). A batch that needed no approval has "",
// which the API calls BatchOpen.
const (
	ApprovalAwaiting = "awaiting_approval"
	ApprovalApproved = "approved"
	ApprovalRejected = "rejected"
	BatchOpen        = "open"
	// ApprovalExpired is the note of a batch nobody decided on in time.
	ApprovalExpired = "approval_expired"
	// ApprovalWithdrawn is the note of a batch its maker withdrew while it awaited
	// approval: recorded as a rejection by the maker.
	ApprovalWithdrawn = "withdrawn"
	// ApprovalWait is how long a batch may wait for a decision.
	ApprovalWait = 24 * time.Hour
)

// RecallExpired is the state of a recall request that lapsed awaiting approval; only
// recall requests record it.
const RecallExpired = "expired"

// approvalStates are the states of an approval, in lifecycle order: the approval of a
// batch, of a recall request or of a silence (whose "" for none needed is no approval).
var approvalStates = []string{ApprovalAwaiting, ApprovalApproved, ApprovalRejected, RecallExpired}

// approvalMoves are the moves an approval may make, by the state it leaves: one
// lifecycle for batches, recall requests and silences. Every move is a compare-and-set
// conditioned on the states that may make it.
var approvalMoves = map[string][]string{
	// Approved or rejected by a second person, or expired when nobody decided in time.
	// Only a recall request records RecallExpired: a batch records its expiry as a
	// rejection with the note ApprovalExpired, and a silence still waiting at its end
	// is ended like any other, its approval left awaiting.
	ApprovalAwaiting: {ApprovalApproved, ApprovalRejected, RecallExpired},
}

// approvalTable is the approval lifecycle.
var approvalTable = states.New(approvalStates, approvalMoves)

// The compare-and-set lists of approval moves, named for the question.
var (
	// ApprovalDecidable are the states a second person may approve or reject in.
	ApprovalDecidable = approvalTable.From(ApprovalApproved)
	// ApprovalExpirable are the states a recall request may expire in.
	ApprovalExpirable = approvalTable.From(RecallExpired)
)

// Status is the batch's approval status as the API shows it.
func (b *Batch) Status() string {
	if b.Approval == "" {
		return BatchOpen
	}
	return b.Approval
}

// ChunkAssignment names the task that will carry some messages once a batch is approved.
type ChunkAssignment struct {
	TaskID     string
	MessageIDs []string
}

// AwaitingMessageIDs returns the ids of a batch's messages held for its approval, in id
// order.
func (s *Intake) AwaitingMessageIDs(ctx context.Context, batchID string) ([]string, error) {
	var ids []string
	err := s.k.Reader(ctx).Model(&Message{}).Where("batch_id = ? AND status = ? AND next_attempt_at IS NULL", batchID, StatusPending).
		Order("id").Pluck("id", &ids).Error
	if err != nil {
		return nil, fmt.Errorf("models: messages awaiting batch %s: %w", batchID, err)
	}
	return ids, nil
}

// ApproveBatch records the approval of a batch that awaits one and makes its held
// messages due at dueAt, each carried by the task its chunk names, in one transaction
// (the caller's, when the store is bound to one: its audit entry goes in there too).
// ErrStateChanged means the batch was no longer awaiting approval.
func (s *Intake) ApproveBatch(ctx context.Context, batchID, by string, now, dueAt time.Time, chunks []ChunkAssignment) error {
	return s.k.Tx(ctx, func(tx *gorm.DB) error {
		if err := decide(tx, batchID, ApprovalApproved, by, "", now); err != nil {
			return err
		}
		for _, c := range chunks {
			res := tx.Model(&Message{}).Where("id IN ? AND batch_id = ? AND status = ? AND next_attempt_at IS NULL", c.MessageIDs, batchID, StatusPending).
				Updates(map[string]any{"next_attempt_at": dueAt, "task_id": c.TaskID, "updated_at": now})
			if res.Error != nil {
				return fmt.Errorf("models: release messages of batch %s: %w", batchID, res.Error)
			}
		}
		return nil
	})
}

// RejectBatch records the rejection of a batch that awaits approval and cancels its
// held messages with the note, in one transaction (the caller's, when the store is
// bound to one). It returns how many it cancelled;
// ErrStateChanged means the batch was no longer awaiting approval.
func (s *Intake) RejectBatch(ctx context.Context, batchID, by, note string, now time.Time) (int, error) {
	var n int
	now = now.UTC().Truncate(time.Microsecond) // as stored: RecordCancelled finds the rows by it
	err := s.k.Tx(ctx, func(tx *gorm.DB) error {
		if err := decide(tx, batchID, ApprovalRejected, by, note, now); err != nil {
			return err
		}
		res := tx.Model(&Message{}).Where("batch_id = ? AND status = ? AND next_attempt_at IS NULL", batchID, StatusPending).
			Updates(map[string]any{"status": StatusCancelled, "last_error": kernel.Truncate("rejected: "+note, 1000), "updated_at": now})
		if res.Error != nil {
			return fmt.Errorf("models: cancel messages of batch %s: %w", batchID, res.Error)
		}
		n = int(res.RowsAffected)
		if err := endChains(tx, batchID, now); err != nil {
			return err
		}
		return RecordCancelled(tx, "batch_id = ?", batchID, now)
	})
	return n, err
}

// decide moves a batch from awaiting approval to the decision (a compare-and-set).
func decide(tx *gorm.DB, batchID, decision, by, note string, now time.Time) error {
	res := tx.Model(&Batch{}).Where("id = ? AND approval IN ?", batchID, ApprovalDecidable).
		Updates(map[string]any{"approval": decision, "decided_by": kernel.Truncate(by, 128), "decided_at": now, "decision_note": kernel.Truncate(note, 255)})
	if res.Error != nil {
		return fmt.Errorf("models: decide batch %s: %w", batchID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("models: decide batch %s: %w", batchID, kernel.ErrStateChanged)
	}
	return nil
}

// BatchesAwaitingApproval returns the batches waiting for a decision, oldest first, at
// most limit of them.
func (s *Intake) BatchesAwaitingApproval(ctx context.Context, limit int) ([]Batch, error) {
	var out []Batch
	err := s.k.Reader(ctx).Where("approval = ?", ApprovalAwaiting).Order("created_at, id").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: batches awaiting approval: %w", err)
	}
	return out, nil
}

// BatchEnded ends, in the transaction of a batch's expiry (tx), what the batch opened
// (its alert), audited as done by expiry, the batch's own entry; nil ends nothing.
type BatchEnded func(ctx context.Context, tx *Store, batchID string, expiry audit.Entry, now time.Time) error

// ExpireApprovals rejects, with the note ApprovalExpired, every batch that has waited
// for a decision since before cutoff, and with each, what ended says it opened (its
// alert); it returns their ids.
func (s *Intake) ExpireApprovals(ctx context.Context, cutoff, now time.Time, ended BatchEnded) ([]string, error) {
	var ids []string
	err := s.k.Reader(ctx).Model(&Batch{}).Where("approval IN ? AND created_at < ?", ApprovalDecidable, cutoff).Order("created_at").Limit(100).Pluck("id", &ids).Error
	if err != nil {
		return nil, fmt.Errorf("models: expired approvals: %w", err)
	}
	var expired []string
	for _, id := range ids {
		entry := audit.Entry{Actor: "herald", ActorType: "system", Action: "batch.expire", TargetType: "batch", TargetID: id}.WithParams(audit.Params{"hours": strconv.Itoa(int(ApprovalWait.Hours()))})
		err := (*Store)(s).InTx(ctx, func(tx *Store) error {
			if _, err := tx.Intake().RejectBatch(ctx, id, "", ApprovalExpired, now); err != nil {
				return err
			}
			// What the batch opened ends with it: its alert (the alerts' EndExpiredBatch).
			if ended != nil {
				if err := ended(ctx, tx, id, entry, now); err != nil {
					return err
				}
			}
			return tx.AuditLog().Write(ctx, entry)
		})
		if err != nil {
			if errors.Is(err, kernel.ErrStateChanged) {
				continue // decided meanwhile
			}
			return expired, err
		}
		expired = append(expired, id)
	}
	return expired, nil
}

// Setting names.
const SettingApprovalThreshold = "approval_threshold"

// MaxApprovalThreshold bounds approval_threshold: a threshold above the largest request
// would switch approvals off without saying so.
const MaxApprovalThreshold = 1000000

// ApprovalThreshold returns the number of accepted recipients above which a batch waits
// for approval; 0 means approvals are off.
func (s *Intake) ApprovalThreshold(ctx context.Context) (int, error) {
	var list []kernel.Setting
	if err := s.k.Reader(ctx).Where("name = ?", SettingApprovalThreshold).Limit(1).Find(&list).Error; err != nil {
		return 0, fmt.Errorf("models: setting %s: %w", SettingApprovalThreshold, err)
	}
	if len(list) == 0 {
		return 0, nil
	}
	n, err := strconv.Atoi(list[0].Value)
	if err != nil {
		return 0, fmt.Errorf("models: setting %s is %q: %w", SettingApprovalThreshold, list[0].Value, err)
	}
	return n, nil
}

// SetApprovalThreshold changes approval_threshold, recording by (who changed it) on
// the setting. It runs in the caller's transaction when the store is bound to one.
func (s *Intake) SetApprovalThreshold(ctx context.Context, n int, by string) error {
	if n < 0 || n > MaxApprovalThreshold {
		return kernel.Invalid(SettingApprovalThreshold, "approvals.error.threshold", "Max", MaxApprovalThreshold)
	}
	row := kernel.Setting{Name: SettingApprovalThreshold, Value: strconv.Itoa(n), UpdatedBy: by, UpdatedAt: kernel.Now()}
	err := s.k.Writer(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "name"}}, DoUpdates: clause.AssignmentColumns([]string{"value", "updated_by", "updated_at"})}).
		Create(&row).Error
	if err != nil {
		return fmt.Errorf("models: set %s: %w", SettingApprovalThreshold, err)
	}
	return nil
}

// TemplateContent is a template's content as a batch was created (and approved) with:
// the batch's fallback messages render from it, whatever the template has become since.
type TemplateContent struct {
	Name      string               `json:"name"`
	MsgType   string               `json:"msg_type"`
	Subject   string               `json:"subject"`
	Body      string               `json:"body"`
	HTML      string               `json:"html,omitempty"`
	Variables templates.StringList `json:"variables"`
	Fallback  string               `json:"fallback,omitempty"`
	// Version is the template's version the content is (0: kept before versions).
	Version int `json:"version,omitempty"`
}

// ContentOf is the content of t to keep with a batch.
func ContentOf(t *templates.Template) *TemplateContent {
	return &TemplateContent{Name: t.Name, MsgType: t.MsgType, Subject: t.Subject, Body: t.Body, HTML: t.HTML,
		Variables: slices.Clone(t.Variables), Fallback: t.Fallback, Version: t.Version}
}

// Template is the kept content as a template to compile (it has no id).
func (c *TemplateContent) Template() *templates.Template {
	return &templates.Template{Name: c.Name, MsgType: c.MsgType, Subject: c.Subject, Body: c.Body, HTML: c.HTML,
		Variables: slices.Clone(c.Variables), Fallback: c.Fallback, Version: c.Version}
}

// Value implements driver.Valuer.
func (c TemplateContent) Value() (driver.Value, error) {
	b, err := json.Marshal(c)
	return string(b), err
}

// Scan implements sql.Scanner.
func (c *TemplateContent) Scan(src any) error { return kernel.ScanJSON(src, c) }

// LastChange is the latest audit entry of one of the actions, on the target named
// targetID ("" for any), or nil when there is none: who last changed a setting or a
// template.
func (s *Intake) LastChange(ctx context.Context, actions []string, targetID string) (*audit.Entry, error) {
	var list []audit.Entry
	q := s.k.Reader(ctx).Where("action IN ?", actions)
	if targetID != "" {
		q = q.Where("target_id = ?", targetID)
	}
	if err := q.Order("id DESC").Limit(1).Find(&list).Error; err != nil {
		return nil, fmt.Errorf("models: last %v of %s: %w", actions, targetID, err)
	}
	if len(list) == 0 {
		return nil, nil
	}
	return &list[0], nil
}

// PeopleOf names the console users behind an audit entry's actor: the user, or the
// creators of the API keys of that name (a name freed by a revoked key may have been
// given again: each of them counts). None for Herald's own jobs.
func (s *Intake) PeopleOf(ctx context.Context, e *audit.Entry) ([]string, error) {
	switch e.ActorType {
	case "user":
		return []string{e.Actor}, nil
	case "api_key":
		var people []string
		err := s.k.Reader(ctx).Model(&access.APIKey{}).Where("name = ? AND created_by <> ''", strings.TrimPrefix(e.Actor, "apikey:")).
			Distinct().Order("created_by").Pluck("created_by", &people).Error
		if err != nil {
			return nil, fmt.Errorf("models: people behind %s: %w", e.Actor, err)
		}
		return people, nil
	}
	return nil, nil
}
