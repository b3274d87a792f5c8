package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"gorm.io/gorm"

	"herald/kernel"
)

// DailyContent records a notice intake accepted for a platform that delivers one
// content to one person only once a calendar day (DingTalk): its primary key, account,
// day, content hash and address, lets the first such notice of the day in and keeps
// every later one out.
type DailyContent struct {
	AccountID   int64
	Address     string
	Day         string // YYYY-MM-DD in Herald's time zone
	ContentHash string // ContentHash of the message
	MessageID   string
	CreatedAt   time.Time
}

// TableName is the table DailyContent rows live in.
func (DailyContent) TableName() string { return "daily_contents" }

// ErrContentTaken means another intake recorded the same content for the same person on
// the same day between this intake's look and its write: planning it again skips them.
var ErrContentTaken = kernel.Declare(kernel.DomainError{Kind: kernel.KindConflict, Code: "duplicate_content_today", Key: "compose.reason_sentence.duplicate_content_today",
	Text: "same content already sent today"})

// ContentHash identifies a message's content as the platform compares it: its type,
// title and text.
func ContentHash(msgType, subject, content string) string {
	sum := sha256.Sum256([]byte(msgType + "\x00" + subject + "\x00" + content))
	return hex.EncodeToString(sum[:])
}

// DailyContentKey is what makes two notices the same on one day.
type DailyContentKey struct {
	Address, ContentHash string
}

// DailyContentsTaken returns which of keys an earlier intake recorded for the account
// on day. It reads the primary database, not a replica: a replica's lag would let a
// duplicate through to the insert, which would then fail the intake again and again.
func (s *Store) DailyContentsTaken(ctx context.Context, accountID int64, day string, keys []DailyContentKey) (map[DailyContentKey]bool, error) {
	taken := map[DailyContentKey]bool{}
	const chunk = 200
	for start := 0; start < len(keys); start += chunk {
		part := keys[start:min(start+chunk, len(keys))]
		hashes := map[string]bool{}
		var addrs []string
		for _, k := range part {
			hashes[k.ContentHash] = true
			addrs = append(addrs, k.Address)
		}
		list := make([]string, 0, len(hashes))
		for h := range hashes {
			list = append(list, h)
		}
		var rows []DailyContent
		err := s.k.Writer(ctx).Select("address", "content_hash").
			Where("account_id = ? AND day = ? AND content_hash IN ? AND address IN ?", accountID, day, list, addrs).
			Find(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("models: daily contents of account %d on %s: %w", accountID, day, err)
		}
		for _, r := range rows {
			taken[DailyContentKey{r.Address, r.ContentHash}] = true
		}
	}
	return taken, nil
}

// createDailyContents records an intake's notices in its transaction; one already
// recorded fails it with ErrContentTaken.
func createDailyContents(tx *gorm.DB, rows []DailyContent) error {
	if len(rows) == 0 {
		return nil
	}
	now := kernel.Now()
	for i := range rows {
		rows[i].CreatedAt = now
	}
	if err := kernel.CreateRows(tx, rows); err != nil {
		if kernel.IsDuplicate(err) {
			return fmt.Errorf("models: daily contents: %w", ErrContentTaken)
		}
		return fmt.Errorf("models: daily contents: %w", err)
	}
	return nil
}
