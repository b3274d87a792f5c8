package models

import (
	"context"
	"fmt"
	"net/mail"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
)

// OrgType says where a staff member works, which decides whether the duty rule applies.
type OrgType string

// The organisation types.
const (
	HeadOffice OrgType = "head_office"
	Branch     OrgType = "branch"
)

// Recipient is a staff member who can receive messages, with one address per platform.
type Recipient struct {
	ID          int64     `json:"-"`
	ExternalID  string    `json:"external_id"`
	Name        string    `json:"name"`
	OrgType     OrgType   `json:"org_type"`
	Branch      string    `json:"branch"`
	Department  string    `json:"department"`
	TianyuanID  string    `json:"tianyuan_id"`
	ZhaohuID    string    `json:"zhaohu_id"`
	WecomUserid string    `json:"wecom_userid" gorm:"column:wecom_userid"`
	Email       string    `json:"email"`
	Active      bool      `json:"active"`
	CreatedAt   time.Time `json:"-"`
	UpdatedAt   time.Time `json:"-"`
}

// Address returns the recipient's address on a platform, empty when there is none.
// The sandbox platform addresses people by their external id.
func (r *Recipient) Address(platform string) string {
	switch platform {
	case "tianyuan":
		return r.TianyuanID
	case "zhaohu":
		return r.ZhaohuID
	case "wecom":
		return r.WecomUserid
	case "email":
		return r.Email
	case "sandbox", "webhook":
		return r.ExternalID
	}
	return ""
}

// CreateRecipient stores a new recipient.
func (s *Store) CreateRecipient(ctx context.Context, r *Recipient) error {
	if err := s.db.WithContext(ctx).Create(r).Error; err != nil {
		if isDuplicate(err) {
			return duplicateField("external_id", "validation.external_id_taken")
		}
		return fmt.Errorf("models: create recipient %s: %w", r.ExternalID, err)
	}
	return nil
}

// ActiveRecipients lists active recipients by name, at most limit of them.
func (s *Store) ActiveRecipients(ctx context.Context, limit int) ([]Recipient, error) {
	var out []Recipient
	err := s.reader(ctx).Where("active = ?", true).Order("name, id").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: list recipients: %w", err)
	}
	return out, nil
}

// RecipientsByIDs returns the recipients with the given ids, in no particular order.
func (s *Store) RecipientsByIDs(ctx context.Context, ids []int64) ([]Recipient, error) {
	var out []Recipient
	if len(ids) == 0 {
		return out, nil
	}
	if err := s.reader(ctx).Where("id IN ?", ids).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("models: recipients by id: %w", err)
	}
	return out, nil
}

// RecipientsByExternalIDs returns the recipients with the given external ids.
func (s *Store) RecipientsByExternalIDs(ctx context.Context, ids []string) ([]Recipient, error) {
	var out []Recipient
	if len(ids) == 0 {
		return out, nil
	}
	if err := s.reader(ctx).Where("external_id IN ?", ids).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("models: recipients by external id: %w", err)
	}
	return out, nil
}

// CountRecipients reports how many recipients exist.
func (s *Store) CountRecipients(ctx context.Context) (int64, error) {
	var n int64
	if err := s.reader(ctx).Model(&Recipient{}).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("models: count recipients: %w", err)
	}
	return n, nil
}

var externalIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidateRecipient checks a recipient's fields; the console and the API share it.
func ValidateRecipient(r *Recipient) error {
	r.ExternalID = strings.TrimSpace(r.ExternalID)
	r.Name = strings.TrimSpace(r.Name)
	switch {
	case !externalIDRe.MatchString(r.ExternalID):
		return Invalid("external_id", "recipients.invalid.external_id", "Max", 64)
	case r.Name == "" || utf8.RuneCountInString(r.Name) > 100:
		return Invalid("name", "recipients.invalid.name", "Max", 100)
	case r.OrgType != HeadOffice && r.OrgType != Branch:
		return Invalid("org_type", "recipients.invalid.org_type")
	case utf8.RuneCountInString(r.Branch) > 100:
		return Invalid("branch", "recipients.invalid.too_long", "Max", 100)
	case utf8.RuneCountInString(r.Department) > 100:
		return Invalid("department", "recipients.invalid.too_long", "Max", 100)
	}
	for _, f := range []struct{ field, v string }{{"name", r.Name}, {"branch", r.Branch}, {"department", r.Department}} {
		if err := CheckText(f.field, f.v, false); err != nil {
			return err
		}
	}
	for field, v := range map[string]string{"tianyuan_id": r.TianyuanID, "zhaohu_id": r.ZhaohuID, "wecom_userid": r.WecomUserid} {
		if len(v) > 128 || strings.ContainsAny(v, " \t\r\n") {
			return Invalid(field, "recipients.invalid.address", "Max", 128)
		}
	}
	if r.Email != "" {
		a, err := mail.ParseAddress(r.Email)
		if err != nil || a.Address != r.Email || len(r.Email) > 254 {
			return Invalid("email", "recipients.invalid.email")
		}
	}
	return nil
}

// RecipientFilter selects recipients for a listing.
type RecipientFilter struct {
	Query   string // matches name, external id, branch or department
	OrgType OrgType
	Branch  string
	Active  *bool
	After   string // external id to continue after (keyset pagination)
	Limit   int
}

// ListRecipients lists recipients by external id, filtered, one page at a time.
func (s *Store) ListRecipients(ctx context.Context, f RecipientFilter) ([]Recipient, error) {
	q := s.reader(ctx).Model(&Recipient{})
	if f.Query != "" {
		q = whereLike(q, likeContains, f.Query, "name", "external_id", "branch", "department")
	}
	if f.OrgType != "" {
		q = q.Where("org_type = ?", f.OrgType)
	}
	if f.Branch != "" {
		q = q.Where("branch = ?", f.Branch)
	}
	if f.Active != nil {
		q = q.Where("active = ?", *f.Active)
	}
	if f.After != "" {
		q = q.Where("external_id > ?", f.After)
	}
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	var out []Recipient
	if err := q.Order("external_id").Limit(f.Limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("models: list recipients: %w", err)
	}
	return out, nil
}

// UpsertResult counts what a bulk upsert did, and lists each change for the audit log.
type UpsertResult struct {
	Created   int               `json:"created"`
	Updated   int               `json:"updated"`
	Unchanged int               `json:"unchanged"`
	Changes   []RecipientChange `json:"-"`
}

// RecipientChange is what a bulk upsert did to one recipient: created, updated,
// deactivated or reactivated, and which fields changed.
type RecipientChange struct {
	ExternalID string
	Action     string
	Fields     []string
}

// recipientChange compares a recipient before and after an update.
func recipientChange(old, r Recipient) RecipientChange {
	ch := RecipientChange{ExternalID: r.ExternalID, Action: "updated"}
	switch {
	case old.Active && !r.Active:
		ch.Action = "deactivated"
	case !old.Active && r.Active:
		ch.Action = "reactivated"
	}
	for _, f := range []struct {
		name     string
		was, now string
	}{
		{"name", old.Name, r.Name}, {"org_type", string(old.OrgType), string(r.OrgType)}, {"branch", old.Branch, r.Branch},
		{"department", old.Department, r.Department}, {"tianyuan_id", old.TianyuanID, r.TianyuanID},
		{"zhaohu_id", old.ZhaohuID, r.ZhaohuID}, {"wecom_userid", old.WecomUserid, r.WecomUserid}, {"email", old.Email, r.Email},
	} {
		if f.was != f.now {
			ch.Fields = append(ch.Fields, f.name)
		}
	}
	return ch
}

// UpsertRecipients creates or updates recipients by external id in one transaction.
// Callers validate first; a duplicate external id in the list is an error.
func (s *Store) UpsertRecipients(ctx context.Context, list []Recipient) (UpsertResult, error) {
	var res UpsertResult
	ids := make([]string, len(list))
	for i, r := range list {
		ids[i] = r.ExternalID
	}
	err := s.tx(ctx, func(tx *gorm.DB) error {
		var existing []Recipient
		for start := 0; start < len(ids); start += insertChunk {
			var part []Recipient
			if err := tx.Where("external_id IN ?", ids[start:min(start+insertChunk, len(ids))]).Find(&part).Error; err != nil {
				return fmt.Errorf("models: upsert recipients: %w", err)
			}
			existing = append(existing, part...)
		}
		byExt := make(map[string]Recipient, len(existing))
		for _, r := range existing {
			byExt[r.ExternalID] = r
		}
		var created []Recipient
		for _, r := range list {
			old, ok := byExt[r.ExternalID]
			if !ok {
				created = append(created, r)
				continue
			}
			r.ID, r.CreatedAt, r.UpdatedAt = old.ID, old.CreatedAt, old.UpdatedAt
			if r == old {
				res.Unchanged++
				continue
			}
			r.UpdatedAt = Now()
			if err := tx.Save(&r).Error; err != nil {
				return fmt.Errorf("models: update recipient %s: %w", r.ExternalID, err)
			}
			res.Updated++
			res.Changes = append(res.Changes, recipientChange(old, r))
		}
		if len(created) > 0 {
			if err := tx.CreateInBatches(created, insertChunk).Error; err != nil {
				if isDuplicate(err) {
					return duplicateField("external_id", "validation.appears_twice")
				}
				return fmt.Errorf("models: create recipients: %w", err)
			}
		}
		res.Created = len(created)
		for _, r := range created {
			res.Changes = append(res.Changes, RecipientChange{ExternalID: r.ExternalID, Action: "created"})
		}
		return nil
	})
	return res, err
}
