package models

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"herald/channels"
	"herald/delivery"
	"herald/kernel"
)

// Digests. A notice sent with a digest is stored like any message, pending, but with no
// due time and no task: it waits in the digest group of its recipient, account and key
// (Message.DigestSlot). A group is due when the first of its notices' windows closes
// (DigestDueAt) or when as many notices have gathered as the smallest max among them
// (DigestMax). FoldDigest then writes one message carrying them and moves each notice to
// digested by compare-and-set, in one transaction: two workers folding the same group
// cannot both win, so no notice is carried twice, and a notice that arrives meanwhile
// simply waits for the next group. Nothing lives outside the rows, so a restart loses no
// open group.
//
// The queries find waiting notices by the columns themselves (status pending and a
// digest slot), not by digest_waiting, the virtual column migration 00039 indexes: on
// MariaDB, while other transactions fold and claim, reads through that index missed
// notices still waiting, and a notice no pass finds again never goes out.

// EventMessageDigested is the status event of a notice folded into a digest.
const EventMessageDigested = "message.digested"

// SourceDigest is the source of the batch a digest message belongs to.
const SourceDigest = "digest"

// DigestSlotOf names the digest group of a recipient on an account under a key.
func DigestSlotOf(recipientID, accountID int64, key string) string {
	return strconv.FormatInt(recipientID, 10) + "/" + strconv.FormatInt(accountID, 10) + "/" + key
}

// DigestKeyOf is the digest key in a digest slot.
func DigestKeyOf(slot string) string {
	parts := strings.SplitN(slot, "/", 3)
	return parts[len(parts)-1]
}

// digestLineLen bounds one notice's line in a digest, in characters.
const digestLineLen = 100

// DigestLine is how a notice appears in a digest: its subject, else its first line that
// is not blank, cut to digestLineLen characters.
func (m *Message) DigestLine() string {
	line := strings.TrimSpace(m.Subject)
	if line == "" {
		for l := range strings.SplitSeq(m.Content, "\n") {
			if line = strings.TrimSpace(l); line != "" {
				break
			}
		}
	}
	if utf8.RuneCountInString(line) > digestLineLen {
		line = string([]rune(line)[:digestLineLen-1]) + "…"
	}
	return line
}

// DigestGroup is a digest group with notices waiting: how many, the earliest close of
// their windows, and the smallest max among them.
type DigestGroup struct {
	Slot    string
	Count   int
	DueAt   time.Time
	MaxSize int
}

// DueDigestGroups returns the digest groups due at now, at most limit of them: every
// group when slots is empty, else only those named. Only notices whose send_at has come
// count: a scheduled notice joins its group when it is due.
func (s *Intake) DueDigestGroups(ctx context.Context, now time.Time, slots []string, limit int) ([]DigestGroup, error) {
	now = now.UTC()
	var rows []struct {
		Slot    string
		N       int
		DueAt   string
		MaxSize int
	}
	q := s.k.Writer(ctx).Model(&Message{}).
		Select("digest_slot AS slot, COUNT(*) AS n, MIN(digest_due_at) AS due_at, MIN(digest_max) AS max_size").
		Where("status = ? AND digest_slot <> '' AND send_at <= ?", StatusPending, now)
	if len(slots) > 0 {
		q = q.Where("digest_slot IN ?", slots)
	}
	err := q.Group("digest_slot").
		Having("MIN(digest_due_at) <= ? OR COUNT(*) >= MIN(digest_max)", now).
		Order("due_at").Limit(limit).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("models: due digest groups: %w", err)
	}
	out := make([]DigestGroup, len(rows))
	for i, r := range rows {
		// MIN of a time column comes back as text on SQLite: read it either way.
		due, err := parseDBTime(r.DueAt)
		if err != nil {
			return nil, fmt.Errorf("models: due digest group %s: %w", r.Slot, err)
		}
		out[i] = DigestGroup{Slot: r.Slot, Count: r.N, DueAt: due, MaxSize: r.MaxSize}
	}
	return out, nil
}

// parseDBTime reads a time an aggregate returned as text.
func parseDBTime(v string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02 15:04:05.999999999-07:00", "2006-01-02 15:04:05.999999999", time.RFC3339Nano} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("unreadable time %q", v)
}

// maxDigest bounds the notices one digest carries (the largest max a request may ask).
const maxDigest = 500

// DigestBuilder makes the digest of a group's notices (oldest first): its batch and
// its one message, pending and due now. It runs inside FoldDigest's transaction.
type DigestBuilder func(notices []Message) (*Batch, *Message, error)

// FoldDigest folds the notices waiting in a digest group into one message built by
// build, and returns it with the notices it carries. The group's smallest max bounds
// how many it takes, oldest first; those beyond wait for the next digest. Each notice
// moves pending → digested by compare-and-set; when another process folded any of them
// first, nothing is written and the error is ErrStateChanged. A group with nothing
// waiting returns nil and no error.
func (s *Intake) FoldDigest(ctx context.Context, slot string, now time.Time, build DigestBuilder) (*Message, []Message, error) {
	var digest *Message
	var notices []Message
	err := s.k.TxRetry(ctx, func(tx *gorm.DB) error {
		digest, notices = nil, nil
		err := tx.Where("status = ? AND digest_slot = ? AND send_at <= ?", StatusPending, slot, now.UTC()).
			Order("created_at, id").Limit(maxDigest).Find(&notices).Error
		if err != nil {
			return fmt.Errorf("models: notices of digest group %s: %w", slot, err)
		}
		if len(notices) == 0 {
			return nil
		}
		size := notices[0].DigestMax
		for _, n := range notices {
			size = min(size, n.DigestMax)
		}
		if size > 0 && len(notices) > size {
			notices = notices[:size]
		}
		b, m, err := build(notices)
		if err != nil {
			return err
		}
		if err := tx.Create(b).Error; err != nil {
			return fmt.Errorf("models: create digest batch: %w", err)
		}
		if err := insertMessage(tx, m); err != nil {
			return fmt.Errorf("models: create digest message: %w", err)
		}
		ids := make([]string, len(notices))
		for i := range notices {
			ids[i] = notices[i].ID
		}
		stamp := kernel.Now()
		res := tx.Model(&Message{}).Where("id IN ? AND status IN ?", ids, delivery.Digestible).
			Updates(map[string]any{"status": StatusDigested, "digest_message_id": m.ID, "next_attempt_at": nil, "updated_at": stamp})
		if res.Error != nil {
			return fmt.Errorf("models: fold digest group %s: %w", slot, res.Error)
		}
		if int(res.RowsAffected) != len(notices) {
			return fmt.Errorf("models: fold digest group %s: %w", slot, kernel.ErrStateChanged)
		}
		digest = m
		return digestedInto(tx, notices, m, stamp)
	})
	if err != nil {
		return nil, nil, err
	}
	return digest, notices, nil
}

// DigestedInto lists the notices a digest message carried, oldest first, at most limit.
func (s *Intake) DigestedInto(ctx context.Context, digestID string, limit int) ([]BatchMessage, error) {
	var out []BatchMessage
	err := s.k.Reader(ctx).Table("messages AS m").
		Select("m.*, r.name AS recipient_name, r.external_id AS recipient_external_id").
		Joins("LEFT JOIN recipients r ON r.id = m.recipient_id").
		Where("m.digest_message_id = ?", digestID).Order("m.created_at, m.id").Limit(limit).
		Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: notices of digest %s: %w", digestID, err)
	}
	return out, nil
}

// DigestCarriesKey reports whether the message is a digest that carried a notice of a
// batch made through the API key.
func (s *Intake) DigestCarriesKey(ctx context.Context, digestID string, keyID int64) (bool, error) {
	var n int64
	err := s.k.Reader(ctx).Table("messages AS m").Joins("JOIN batches b ON b.id = m.batch_id").
		Where("m.digest_message_id = ? AND b.api_key_id = ?", digestID, keyID).Limit(1).Count(&n).Error
	if err != nil {
		return false, fmt.Errorf("models: digest %s of api key %d: %w", digestID, keyID, err)
	}
	return n > 0, nil
}

// DigestCounts counts the notices sent with a digest by where they are: waiting in a
// group, digested, or gone some other way (cancelled). Benchmarks and tests read it.
func (s *Intake) DigestCounts(ctx context.Context) (map[Status]int, error) {
	var rows []struct {
		Status Status
		N      int
	}
	err := s.k.Reader(ctx).Model(&Message{}).Select("status, COUNT(*) AS n").
		Where("digest_slot <> ''").Group("status").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("models: count digest notices: %w", err)
	}
	out := make(map[Status]int, len(rows))
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}

// Folding posts to a chat group. When posts to one group wait for its robot's limit
// (pending, error class throttled), the worker that finds one waiting folds every post
// of the group then waiting into one post carrying them, due when the limit frees; the
// folded ones move pending → digested by compare-and-set, pointing at the post that
// carries them, as a digest's notices do. A waiting post that itself carried others is
// folded too: what it carried is pointed at the new post, so the post that finally goes
// out names every notice, and every notice is accounted for by the one that carried it.

// maxFold bounds the posts one fold takes; the rest wait for the next.
const maxFold = 500

// GroupFoldBuilder makes the post that carries a group's waiting posts: lines are the
// notices themselves (oldest first: the posts folded, and what folded posts carried),
// waiting the posts it replaces. It runs inside FoldGroupPosts's transaction.
type GroupFoldBuilder func(lines, waiting []Message) (*Batch, *Message, error)

// FoldGroupPosts folds the posts to chat group groupID waiting for its limit into one
// post built by build, and returns it (nil when fewer than two wait: nothing to fold).
// When another process folded or claimed any of them first, nothing is written and the
// error is ErrStateChanged.
func (s *Intake) FoldGroupPosts(ctx context.Context, groupID int64, build GroupFoldBuilder) (*Message, []Message, error) {
	var carrier *Message
	var waiting []Message
	err := s.k.TxRetry(ctx, func(tx *gorm.DB) error {
		carrier, waiting = nil, nil
		err := tx.Where("chat_group_id = ? AND status = ? AND error_class = ?", groupID, StatusPending, string(channels.Throttled)).
			Order("created_at, id").Limit(maxFold).Find(&waiting).Error
		if err != nil {
			return fmt.Errorf("models: posts waiting for chat group %d: %w", groupID, err)
		}
		if len(waiting) < 2 {
			waiting = nil
			return nil
		}
		ids := make([]string, len(waiting))
		for i := range waiting {
			ids[i] = waiting[i].ID
		}
		var carried []Message
		if err := tx.Where("digest_message_id IN ? AND status = ?", ids, StatusDigested).Order("created_at, id").Find(&carried).Error; err != nil {
			return fmt.Errorf("models: posts carried for chat group %d: %w", groupID, err)
		}
		carriers := map[string]bool{}
		for _, c := range carried {
			carriers[*c.DigestMessageID] = true
		}
		// A post that carried others, folded earlier, is no notice of its own: its batch
		// is a digest's. Its notices point at it no longer (each fold re-points them).
		batchIDs := make([]string, 0, len(carried)+len(waiting))
		for _, m := range slices.Concat(carried, waiting) {
			batchIDs = append(batchIDs, m.BatchID)
		}
		var folds []string
		if err := tx.Model(&Batch{}).Where("id IN ? AND source = ?", slices.Compact(slices.Sorted(slices.Values(batchIDs))), SourceDigest).
			Pluck("id", &folds).Error; err != nil {
			return fmt.Errorf("models: posts carried for chat group %d: %w", groupID, err)
		}
		var lines []Message
		for _, m := range slices.Concat(carried, waiting) {
			if !slices.Contains(folds, m.BatchID) {
				lines = append(lines, m)
			}
		}
		slices.SortStableFunc(lines, func(a, b Message) int { return a.CreatedAt.Compare(b.CreatedAt) })
		b, m, err := build(lines, waiting)
		if err != nil {
			return err
		}
		if err := tx.Create(b).Error; err != nil {
			return fmt.Errorf("models: create chat group fold batch: %w", err)
		}
		if err := insertMessage(tx, m); err != nil {
			return fmt.Errorf("models: create chat group fold: %w", err)
		}
		stamp := kernel.Now()
		res := tx.Model(&Message{}).Where("id IN ? AND status IN ? AND error_class = ?", ids, delivery.Digestible, string(channels.Throttled)).
			Updates(map[string]any{"status": StatusDigested, "digest_message_id": m.ID, "next_attempt_at": nil, "updated_at": stamp})
		if res.Error != nil {
			return fmt.Errorf("models: fold chat group %d: %w", groupID, res.Error)
		}
		if int(res.RowsAffected) != len(waiting) {
			return fmt.Errorf("models: fold chat group %d: %w", groupID, kernel.ErrStateChanged)
		}
		if len(carriers) > 0 {
			old := slices.Collect(maps.Keys(carriers))
			if err := tx.Model(&Message{}).Where("digest_message_id IN ? AND status = ?", old, StatusDigested).
				Updates(map[string]any{"digest_message_id": m.ID, "updated_at": stamp}).Error; err != nil {
				return fmt.Errorf("models: fold chat group %d: %w", groupID, err)
			}
		}
		carrier = m
		return digestedInto(tx, waiting, m, stamp)
	})
	if err != nil {
		return nil, nil, err
	}
	return carrier, waiting, nil
}

// digestedInto marks notices (moved to digested in tx) as carried by m and records
// their final status for their callbacks.
func digestedInto(tx *gorm.DB, notices []Message, m *Message, stamp time.Time) error {
	finals := make([]finalMessage, 0, len(notices))
	for i := range notices {
		notices[i].Status, notices[i].DigestMessageID = StatusDigested, &m.ID
		if f, ok := finalOf(&notices[i], StatusDigested, ""); ok {
			finals = append(finals, f)
		}
	}
	return recordFinal(tx, finals, stamp)
}
