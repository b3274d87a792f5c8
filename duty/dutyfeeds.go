package duty

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"gorm.io/gorm"

	"herald/directory"
	"herald/kernel"
)

// DutyFeed is a head-office person's secret calendar feed of their duty days. Only the
// hash of the token in its address is stored.
type DutyFeed struct {
	RecipientID int64 `gorm:"primaryKey;autoIncrement:false"`
	TokenHash   string
	CreatedBy   string
	CreatedAt   time.Time
}

// TableName is the feeds' table.
func (DutyFeed) TableName() string { return "duty_feeds" }

// dutyFeedPrefix starts every feed token, so one found in a log is recognisable.
const dutyFeedPrefix = "hf_"

// RotateDutyFeed gives a head-office person a new feed token, replacing (and so
// disabling) their previous one, and returns the token: it is not kept.
func (s *Schedule) RotateDutyFeed(ctx context.Context, recipientID int64, by string) (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("duty: feed token: %w", err)
	}
	token := dutyFeedPrefix + hex.EncodeToString(b)
	err := s.k.Tx(ctx, func(tx *gorm.DB) error {
		var p directory.Recipient
		if err := tx.Where("id = ?", recipientID).Take(&p).Error; err != nil {
			if err == gorm.ErrRecordNotFound {
				return fmt.Errorf("duty: recipient %d: %w", recipientID, kernel.ErrNotFound)
			}
			return fmt.Errorf("duty: recipient %d: %w", recipientID, err)
		}
		if p.OrgType != directory.HeadOffice {
			return kernel.Invalid("recipient", "duty.branch_staff", "ID", p.ExternalID)
		}
		if err := tx.Where("recipient_id = ?", recipientID).Delete(&DutyFeed{}).Error; err != nil {
			return fmt.Errorf("duty: replace feed: %w", err)
		}
		return tx.Create(&DutyFeed{RecipientID: recipientID, TokenHash: kernel.HashToken(token), CreatedBy: by}).Error
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// DeleteDutyFeed disables a person's feed.
func (s *Schedule) DeleteDutyFeed(ctx context.Context, recipientID int64) error {
	res := s.k.Writer(ctx).Where("recipient_id = ?", recipientID).Delete(&DutyFeed{})
	if res.Error != nil {
		return fmt.Errorf("duty: delete feed: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("duty: feed of %d: %w", recipientID, kernel.ErrNotFound)
	}
	return nil
}

// DutyFeeds lists every feed by recipient id.
func (s *Schedule) DutyFeeds(ctx context.Context) (map[int64]DutyFeed, error) {
	var list []DutyFeed
	if err := s.k.Reader(ctx).Find(&list).Error; err != nil {
		return nil, fmt.Errorf("duty: feeds: %w", err)
	}
	out := make(map[int64]DutyFeed, len(list))
	for _, f := range list {
		out[f.RecipientID] = f
	}
	return out, nil
}

// DutyFeedOwner returns the active head-office person whose feed token this is, or
// ErrNotFound.
func (s *Schedule) DutyFeedOwner(ctx context.Context, token string) (*directory.Recipient, error) {
	var f []DutyFeed
	if err := s.k.Reader(ctx).Where("token_hash = ?", kernel.HashToken(token)).Limit(1).Find(&f).Error; err != nil {
		return nil, fmt.Errorf("duty: feed: %w", err)
	}
	if len(f) == 0 {
		return nil, fmt.Errorf("duty: feed: %w", kernel.ErrNotFound)
	}
	people, err := s.Directory().RecipientsByIDs(ctx, []int64{f[0].RecipientID})
	if err != nil {
		return nil, err
	}
	if len(people) == 0 || !people[0].Active || people[0].OrgType != directory.HeadOffice {
		return nil, fmt.Errorf("duty: feed owner: %w", kernel.ErrNotFound)
	}
	return &people[0], nil
}
