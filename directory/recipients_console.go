package directory

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"herald/kernel"
)

// RecipientByExternalID returns one recipient by the id business systems use.
func (s *Staff) RecipientByExternalID(ctx context.Context, externalID string) (*Recipient, error) {
	var r Recipient
	if err := s.k.Reader(ctx).Where("external_id = ?", externalID).First(&r).Error; err != nil {
		return nil, fmt.Errorf("directory: recipient %s: %w", externalID, kernel.NotFound(err))
	}
	return &r, nil
}

// UpdateRecipient saves a changed recipient, found by its external id, which does not
// change: business systems know people by it. Callers validate first.
func (s *Staff) UpdateRecipient(ctx context.Context, r *Recipient) error {
	old, err := s.RecipientByExternalID(ctx, r.ExternalID)
	if err != nil {
		return err
	}
	r.ID, r.CreatedAt, r.UpdatedAt = old.ID, old.CreatedAt, kernel.Now()
	if err := s.changeRecipients(ctx, func(tx *gorm.DB) error { return tx.Save(r).Error }); err != nil {
		return fmt.Errorf("directory: update recipient %s: %w", r.ExternalID, err)
	}
	return nil
}

// SetRecipientActive activates or deactivates a recipient. An inactive recipient stays
// on record (old messages refer to it) but receives nothing.
func (s *Staff) SetRecipientActive(ctx context.Context, externalID string, active bool) error {
	return s.changeRecipients(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&Recipient{}).Where("external_id = ?", externalID).
			Updates(map[string]any{"active": active, "updated_at": kernel.Now()})
		if res.Error != nil {
			return fmt.Errorf("directory: set recipient %s active: %w", externalID, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("directory: recipient %s: %w", externalID, kernel.ErrNotFound)
		}
		return nil
	})
}

// Branches lists the distinct branch names recipients have, for filters.
func (s *Staff) Branches(ctx context.Context) ([]string, error) {
	var out []string
	err := s.k.Reader(ctx).Model(&Recipient{}).Where("branch <> ''").Distinct("branch").Order("branch").Pluck("branch", &out).Error
	if err != nil {
		return nil, fmt.Errorf("directory: list branches: %w", err)
	}
	return out, nil
}

// Departments lists the distinct departments of active recipients, for picking whole
// departments on the compose form.
func (s *Staff) Departments(ctx context.Context) ([]string, error) {
	var out []string
	err := s.k.Reader(ctx).Model(&Recipient{}).Where("active = ? AND department <> ''", true).
		Distinct("department").Order("department").Pluck("department", &out).Error
	if err != nil {
		return nil, fmt.Errorf("directory: list departments: %w", err)
	}
	return out, nil
}

// ActiveBranches lists the distinct branches of active recipients, for picking whole
// branches on the compose form.
func (s *Staff) ActiveBranches(ctx context.Context) ([]string, error) {
	var out []string
	err := s.k.Reader(ctx).Model(&Recipient{}).Where("active = ? AND branch <> ''", true).
		Distinct("branch").Order("branch").Pluck("branch", &out).Error
	if err != nil {
		return nil, fmt.Errorf("directory: list active branches: %w", err)
	}
	return out, nil
}

// ActiveRecipientsIn returns the active recipients of the given departments and
// branches (a whole department or branch: everyone in it), by id, at most limit.
func (s *Staff) ActiveRecipientsIn(ctx context.Context, departments, branches []string, limit int) ([]Recipient, error) {
	var out []Recipient
	if len(departments) == 0 && len(branches) == 0 {
		return out, nil
	}
	q := s.k.Reader(ctx).Where("active = ?", true)
	switch {
	case len(departments) > 0 && len(branches) > 0:
		q = q.Where("department IN ? OR branch IN ?", departments, branches)
	case len(departments) > 0:
		q = q.Where("department IN ?", departments)
	default:
		q = q.Where("branch IN ?", branches)
	}
	if err := q.Order("id").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("directory: recipients of departments and branches: %w", err)
	}
	return out, nil
}

// RecipientNames maps external ids to the names of the recipients that have them; an
// unknown id is left out.
func (s *Staff) RecipientNames(ctx context.Context, externalIDs []string) (map[string]string, error) {
	out := make(map[string]string, len(externalIDs))
	if len(externalIDs) == 0 {
		return out, nil
	}
	var rows []Recipient
	if err := s.k.Reader(ctx).Select("external_id, name").Where("external_id IN ?", externalIDs).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("directory: recipient names: %w", err)
	}
	for _, r := range rows {
		out[r.ExternalID] = r.Name
	}
	return out, nil
}

// HeadOfficeStaff lists active head-office recipients, at most limit of them, by name
// as every picker of people shows them (SortRecipientsByName): the people a duty roster
// can hold.
func (s *Staff) HeadOfficeStaff(ctx context.Context, limit int) ([]Recipient, error) {
	var out []Recipient
	err := s.k.Reader(ctx).Where("org_type = ? AND active = ?", HeadOffice, true).
		Order("name, id").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("directory: head-office staff: %w", err)
	}
	SortRecipientsByName(out)
	return out, nil
}

// RecipientIDsByName lists the ids of the people whose name a search finds (NameMatches:
// part of the name, or its pinyin), for the message list's name filter; an empty list
// when nobody's does.
func (s *Staff) RecipientIDsByName(ctx context.Context, query string) ([]int64, error) {
	rows, err := s.k.Reader(ctx).Model(&Recipient{}).Select("id", "name").Rows()
	if err != nil {
		return nil, fmt.Errorf("directory: people by name: %w", err)
	}
	defer rows.Close()
	out := []int64{}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, fmt.Errorf("directory: people by name: %w", err)
		}
		if NameMatches(name, query) {
			out = append(out, id)
		}
	}
	return out, rows.Err()
}
