package directory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"herald/audit"
	"herald/kernel"
)

// MaxUpsert bounds one bulk write of recipients: an API upsert or a CSV import.
const MaxUpsert = 10000

// Where a bulk write of recipients came from, as its audit entries say (their "via").
const (
	ViaAPI    = "api" // PUT /api/v1/recipients
	ViaImport = "csv" // the console's CSV import
)

// recipientActions are the audit log's recipient actions, by what a write did to one
// person (RecipientChange.Action): the same codes whether a console form, an
// import or the API made the change.
var recipientActions = map[string]string{"created": "recipient.create", "updated": "recipient.update",
	"deactivated": "recipient.deactivate", "reactivated": "recipient.activate"}

// bulkActions are the audit actions of a whole bulk write, by where it came from.
var bulkActions = map[string]string{ViaAPI: "recipients.upsert", ViaImport: "recipients.import"}

// CreateRecipient adds a person, audited as recipient.create. A validation failure (an
// external id in use included) is a *kernel.FieldError and writes nothing.
func (d *Clerk) CreateRecipient(ctx context.Context, by audit.Actor, r Recipient) (Recipient, error) {
	if err := ValidateRecipient(&r); err != nil {
		return r, err
	}
	err := d.change(ctx, by, func(tx *Staff, ch *audit.Change) error {
		if err := tx.CreateRecipient(ctx, &r); err != nil {
			return err
		}
		ch.Audit("recipient.create", "recipient", r.ExternalID, recipientParams(r))
		return nil
	})
	return r, err
}

// UpdateRecipient saves the changes to the person whose external id is externalID (which
// does not change: business systems know people by it), audited as recipient.update with
// each field's old and new value. kernel.ErrNotFound: no such person.
func (d *Clerk) UpdateRecipient(ctx context.Context, by audit.Actor, externalID string, r Recipient) (Recipient, error) {
	r.ExternalID = externalID
	if err := ValidateRecipient(&r); err != nil {
		return r, err
	}
	err := d.change(ctx, by, func(tx *Staff, ch *audit.Change) error {
		old, err := tx.RecipientByExternalID(ctx, externalID)
		if err != nil {
			return err
		}
		if err := tx.UpdateRecipient(ctx, &r); err != nil {
			return err
		}
		p := recipientParams(r)
		p["changes"] = strings.Join(CompareRecipients(*old, r).Diff, "; ")
		ch.Audit("recipient.update", "recipient", r.ExternalID, p)
		return nil
	})
	return r, err
}

// SetRecipientActive deactivates or reactivates a person, audited as
// recipient.deactivate or recipient.activate. An inactive person stays on record (old
// messages refer to them) but receives nothing. kernel.ErrNotFound: no such person.
func (d *Clerk) SetRecipientActive(ctx context.Context, by audit.Actor, externalID string, active bool) (Recipient, error) {
	var r Recipient
	err := d.change(ctx, by, func(tx *Staff, ch *audit.Change) error {
		if err := tx.SetRecipientActive(ctx, externalID, active); err != nil {
			return err
		}
		p, err := tx.RecipientByExternalID(ctx, externalID)
		if err != nil {
			return err
		}
		r = *p
		action := "recipient.deactivate"
		if active {
			action = "recipient.activate"
		}
		ch.Audit(action, "recipient", r.ExternalID, recipientParams(r))
		return nil
	})
	return r, err
}

// CheckRecipients validates a bulk write: between 1 and MaxUpsert people, each valid
// and none given twice. A problem is a *kernel.FieldError naming the person by position
// ("[3].email").
func CheckRecipients(list []Recipient) error {
	if len(list) == 0 || len(list) > MaxUpsert {
		return kernel.Invalid("", "recipients.api.count", "Max", MaxUpsert)
	}
	seen := make(map[string]int, len(list))
	for i := range list {
		if err := ValidateRecipient(&list[i]); err != nil {
			fe, ok := errors.AsType[*kernel.FieldError](err)
			if !ok {
				return err
			}
			out := *fe
			out.Field = fmt.Sprintf("[%d].%s", i, fe.Field)
			return &out
		}
		if j, dup := seen[list[i].ExternalID]; dup {
			return kernel.Invalid(fmt.Sprintf("[%d].external_id", i), "recipients.api.duplicate", "ID", list[i].ExternalID, "Index", j)
		}
		seen[list[i].ExternalID] = i
	}
	return nil
}

// UpsertRecipients creates or updates people by external id, all or none, in one
// transaction with its audit entries: one for the whole write (recipients.upsert from
// the API, recipients.import from a CSV import; via is ViaAPI or ViaImport) with its
// counts, and one per person it changed (recipient.create, .update, .deactivate or
// .activate) naming what changed, so the log answers who changed E1001, when and from
// where.
func (d *Clerk) UpsertRecipients(ctx context.Context, by audit.Actor, via string, list []Recipient) (UpsertResult, error) {
	action, ok := bulkActions[via]
	if !ok {
		return UpsertResult{}, fmt.Errorf("directory: upsert recipients via %q", via)
	}
	if err := CheckRecipients(list); err != nil {
		return UpsertResult{}, err
	}
	var res UpsertResult
	err := d.change(ctx, by, func(tx *Staff, ch *audit.Change) error {
		var err error
		if res, err = tx.UpsertRecipients(ctx, list); err != nil {
			return err
		}
		ch.Audit(action, "recipient", "", audit.Params{"via": via, "created": strconv.Itoa(res.Created),
			"updated": strconv.Itoa(res.Updated), "unchanged": strconv.Itoa(res.Unchanged)})
		for _, c := range res.Changes {
			ch.Audit(recipientActions[c.Action], "recipient", c.ExternalID, audit.Params{"via": via, "name": c.Name, "external_id": c.ExternalID,
				"fields": strings.Join(c.Fields, ", "), "changes": strings.Join(c.Diff, "; ")})
		}
		return nil
	})
	return res, err
}

// recipientParams name a person for their audit sentence.
func recipientParams(r Recipient) audit.Params {
	return audit.Params{"name": r.Name, "external_id": r.ExternalID, "org_type": string(r.OrgType),
		"branch": r.Branch, "department": r.Department}
}
