package duty

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"herald/kernel"
)

// DutySwap records "A swaps their duty on ADate with B's on BDate": on ADate A is off
// and B on duty, on BDate B is off and A on duty. Its four overrides carry its id.
type DutySwap struct {
	ID        int64
	AID       int64  `gorm:"column:a_id"`
	ADate     string `gorm:"column:a_date"`
	BID       int64  `gorm:"column:b_id"`
	BDate     string `gorm:"column:b_date"`
	Note      string
	CreatedBy string
	CreatedAt time.Time
}

// TableName is the swaps' table.
func (DutySwap) TableName() string { return "duty_swaps" }

// Overrides are the four overrides a swap makes.
func (sw *DutySwap) Overrides() []DutyOverride {
	id := sw.ID
	return []DutyOverride{
		{Date: sw.ADate, RecipientID: sw.AID, Action: OverrideRemove, Note: sw.Note, SwapID: &id},
		{Date: sw.ADate, RecipientID: sw.BID, Action: OverrideAdd, Note: sw.Note, SwapID: &id},
		{Date: sw.BDate, RecipientID: sw.BID, Action: OverrideRemove, Note: sw.Note, SwapID: &id},
		{Date: sw.BDate, RecipientID: sw.AID, Action: OverrideAdd, Note: sw.Note, SwapID: &id},
	}
}

// CheckSwap checks a swap's fields on their own; whether each was on duty on the date
// they give away is the duty rule's to say (dispatch).
func CheckSwap(sw *DutySwap) error {
	if err := ValidDate("a_date", sw.ADate); err != nil {
		return err
	}
	if err := ValidDate("b_date", sw.BDate); err != nil {
		return err
	}
	switch {
	case sw.AID == sw.BID:
		return kernel.Invalid("b", "swap.invalid.same_person")
	case sw.ADate == sw.BDate:
		return kernel.Invalid("b_date", "swap.invalid.same_date")
	case utf8.RuneCountInString(sw.Note) > 255:
		return kernel.Invalid("note", "duty.invalid.too_long", "Max", 255)
	}
	return kernel.CheckText("note", sw.Note, false)
}

// CreateSwap stores a swap and its four overrides in one transaction; each replaces an
// earlier override of the same person and date.
func (s *Schedule) CreateSwap(ctx context.Context, sw *DutySwap) error {
	if err := CheckSwap(sw); err != nil {
		return err
	}
	return s.k.Tx(ctx, func(tx *gorm.DB) error {
		sw.ID = 0
		if err := tx.Create(sw).Error; err != nil {
			return fmt.Errorf("duty: create swap: %w", err)
		}
		for _, o := range sw.Overrides() {
			if err := tx.Where("date = ? AND recipient_id = ?", o.Date, o.RecipientID).Delete(&DutyOverride{}).Error; err != nil {
				return fmt.Errorf("duty: replace override: %w", err)
			}
			if err := tx.Create(&o).Error; err != nil {
				return fmt.Errorf("duty: swap override: %w", err)
			}
		}
		return nil
	})
}

// DeleteSwap undoes a swap: its overrides still in place and the swap go together. It
// returns the swap as it was; ErrNotFound when there is none, or it was undone
// meanwhile.
func (s *Schedule) DeleteSwap(ctx context.Context, id int64) (*DutySwap, error) {
	var sw DutySwap
	err := s.k.Tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("id = ?", id).Take(&sw).Error; err != nil {
			return fmt.Errorf("duty: swap %d: %w", id, kernel.NotFound(err))
		}
		if err := tx.Where("swap_id = ?", id).Delete(&DutyOverride{}).Error; err != nil {
			return fmt.Errorf("duty: undo swap overrides: %w", err)
		}
		res := tx.Where("id = ?", id).Delete(&DutySwap{})
		if res.Error != nil {
			return fmt.Errorf("duty: delete swap: %w", res.Error)
		}
		if res.RowsAffected != 1 {
			// Undone meanwhile: there is no such swap any more.
			return fmt.Errorf("duty: swap %d: %w", id, kernel.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &sw, nil
}

// SwapsByID returns the swaps with the given ids.
func (s *Schedule) SwapsByID(ctx context.Context, ids []int64) (map[int64]DutySwap, error) {
	out := map[int64]DutySwap{}
	if len(ids) == 0 {
		return out, nil
	}
	var list []DutySwap
	if err := s.k.Reader(ctx).Where("id IN ?", ids).Find(&list).Error; err != nil {
		return nil, fmt.Errorf("duty: swaps: %w", err)
	}
	for _, sw := range list {
		out[sw.ID] = sw
	}
	return out, nil
}
