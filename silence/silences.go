package silence

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"herald/delivery"
	"herald/kernel"
	"herald/models"
	"herald/templates"
)

// Matchers is a silence's matchers, stored as JSON in one column.
type Matchers []delivery.Matcher

// Value implements driver.Valuer.
func (m Matchers) Value() (driver.Value, error) {
	if m == nil {
		m = Matchers{}
	}
	b, err := json.Marshal([]delivery.Matcher(m))
	return string(b), err
}

// Scan implements sql.Scanner.
func (m *Matchers) Scan(src any) error { return kernel.ScanJSON(src, m) }

// Silence holds the messages its matchers all match while it is active (delivery's
// silences.go has the rule). ExpiredAt is set when someone expired it early (or its
// approval was refused); EndedAt once the pass that ends it has run, after which its
// held messages go on as OnEnd says.
type Silence struct {
	ID       int64
	Matchers Matchers
	StartsAt time.Time
	EndsAt   time.Time
	// Schedule makes the silence recurring: it holds only in its windows, between
	// StartsAt and EndsAt (schedules.go); nil for a silence of fixed times.
	Schedule *Schedule
	Comment  string
	// CreatedBy is who created it (a username, or apikey:<name>); APIKeyID the key, when
	// one did: a key without the admin scope sees and changes only its own silences.
	CreatedBy string
	APIKeyID  *int64 `gorm:"column:api_key_id"`
	// HoldsKeyID is the send key whose messages alone it holds: set when a key without
	// the admin scope made it; nil holds anyone's.
	HoldsKeyID *int64 `gorm:"column:holds_key_id"`
	// Version counts the edits of its matchers: a worker compiles it once per version.
	Version   int
	OnEnd     string
	ExpiredAt *time.Time
	ExpiredBy string
	EndedAt   *time.Time
	// Approval is "" for a silence that needed none, else ApprovalAwaiting,
	// ApprovalApproved or ApprovalRejected; Makers are the people who may not approve it.
	Approval string
	Makers   templates.StringList
	// ApprovalReasons say why it awaits (or awaited) approval: delivery's Broad… codes.
	ApprovalReasons templates.StringList
	DecidedBy       string
	DecidedAt       *time.Time
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// State is the silence's state at now.
func (s *Silence) State(now time.Time) string {
	return delivery.SilenceState(s.StartsAt, s.EndsAt, s.ExpiredAt, s.Approval == models.ApprovalAwaiting || s.Approval == models.ApprovalRejected, now)
}

// End is when the silence stops holding: its end, or when it was expired early.
func (s *Silence) End() time.Time {
	if s.ExpiredAt != nil && s.ExpiredAt.Before(s.EndsAt) {
		return *s.ExpiredAt
	}
	return s.EndsAt
}

// MessageSilence records that a silence holds (or held) a message.
type MessageSilence struct {
	MessageID string `gorm:"primaryKey"`
	SilenceID int64  `gorm:"primaryKey"`
	HeldAt    time.Time
	// HeldUntil is the end of the window of a recurring silence that held the message:
	// it goes on then, though the silence goes on. Nil for a silence of fixed times.
	HeldUntil *time.Time
}

// TableName implements gorm's tabler.
func (MessageSilence) TableName() string { return "message_silences" }

// CreateSilence writes a new silence (in the caller's transaction, when the store is
// bound to one).
func (s *Holds) CreateSilence(ctx context.Context, sil *Silence) error {
	now := kernel.Now()
	sil.CreatedAt, sil.UpdatedAt, sil.Version = now, now, 1
	if err := s.k.Writer(ctx).Create(sil).Error; err != nil {
		return fmt.Errorf("silence: create silence: %w", err)
	}
	return nil
}

// UpdateSilence replaces what a person may edit of a silence that has not ended:
// matchers, times, comment, what it does at its end, and its approval; it moves the
// silence to its next version. ErrStateChanged means it was expired, ended or edited
// meanwhile (its version is no longer sil.Version).
func (s *Holds) UpdateSilence(ctx context.Context, sil *Silence) error {
	sil.UpdatedAt = kernel.Now()
	res := s.k.Writer(ctx).Model(&Silence{}).Where("id = ? AND version = ?", sil.ID, sil.Version).Where(silenceWhere("", silenceEditable)).
		Updates(map[string]any{"matchers": sil.Matchers, "starts_at": sil.StartsAt, "ends_at": sil.EndsAt, "schedule": sil.Schedule, "comment": sil.Comment,
			"on_end": sil.OnEnd, "approval": sil.Approval, "approval_reasons": sil.ApprovalReasons, "makers": sil.Makers,
			"decided_by": "", "decided_at": nil, "version": gorm.Expr("version + 1"), "updated_at": sil.UpdatedAt})
	if res.Error != nil {
		return fmt.Errorf("silence: update silence %d: %w", sil.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("silence: update silence %d: %w", sil.ID, kernel.ErrStateChanged)
	}
	sil.Version++
	return nil
}

// LiveSilenceCounts counts the silences that have not ended or been expired (pending,
// awaiting approval or active): those of one creator (the API key keyID when it is not
// 0, else the person createdBy) and all of them. In MySQL the count locks what it read
// until the transaction ends, so two silences created at once cannot both take the last
// place; SQLite runs one writer at a time.
func (s *Holds) LiveSilenceCounts(ctx context.Context, keyID int64, createdBy string) (mine, all int, err error) {
	var rows []struct {
		APIKeyID  *int64
		CreatedBy string
	}
	err = s.k.Writer(ctx).Model(&Silence{}).Clauses(clause.Locking{Strength: "UPDATE"}).Select("api_key_id, created_by").
		Where(silenceWhere("", silenceOpen)).Scan(&rows).Error
	if err != nil {
		return 0, 0, fmt.Errorf("silence: count live silences: %w", err)
	}
	for _, r := range rows {
		if (keyID != 0 && r.APIKeyID != nil && *r.APIKeyID == keyID) || (keyID == 0 && r.APIKeyID == nil && r.CreatedBy == createdBy) {
			mine++
		}
	}
	return mine, len(rows), nil
}

// CreatorSilences lists the silences of one creator (the API key keyID when it is not
// 0, else the person createdBy) that may have held messages since since: not refused,
// not ended before it.
func (s *Holds) CreatorSilences(ctx context.Context, keyID int64, createdBy string, since time.Time) ([]Silence, error) {
	var out []Silence
	q := s.k.Reader(ctx).Where("(ended_at IS NULL OR ended_at >= ?) AND approval <> ?", since.UTC(), models.ApprovalRejected)
	if keyID != 0 {
		q = q.Where("api_key_id = ?", keyID)
	} else {
		q = q.Where("created_by = ? AND api_key_id IS NULL", createdBy)
	}
	if err := q.Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("silence: silences of %s: %w", createdBy, err)
	}
	return out, nil
}

// SilenceByID returns one silence.
func (s *Holds) SilenceByID(ctx context.Context, id int64) (*Silence, error) {
	var sil Silence
	if err := s.k.Reader(ctx).Where("id = ?", id).First(&sil).Error; err != nil {
		return nil, fmt.Errorf("silence: silence %d: %w", id, kernel.NotFound(err))
	}
	return &sil, nil
}

// Silences lists silences, newest first, at most limit: those of the API key ownKey, or
// every one when ownKey is 0. Silences that ended before endedAfter are left out.
func (s *Holds) Silences(ctx context.Context, ownKey int64, endedAfter time.Time, limit int) ([]Silence, error) {
	var out []Silence
	q := s.k.Reader(ctx).Where("ended_at IS NULL OR ended_at >= ?", endedAfter.UTC())
	if ownKey != 0 {
		q = q.Where("api_key_id = ?", ownKey)
	}
	if err := q.Order("id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("silence: silences: %w", err)
	}
	return out, nil
}

// LiveSilences lists the silences that have not ended and may hold messages (not
// waiting for approval, not refused), oldest first: those whose times make them active
// hold what they match.
func (s *Holds) LiveSilences(ctx context.Context) ([]Silence, error) {
	var out []Silence
	err := s.k.Reader(ctx).Where(silenceWhere("", []silenceStage{silenceLive})).Order("id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("silence: live silences: %w", err)
	}
	return out, nil
}

// ExpireSilence expires a silence early at now (a compare-and-set: ErrStateChanged
// means it had ended or been expired already).
func (s *Holds) ExpireSilence(ctx context.Context, id int64, by string, now time.Time) error {
	res := s.k.Writer(ctx).Model(&Silence{}).Where("id = ?", id).Where(silenceWhere("", silenceOpen)).
		Updates(map[string]any{"expired_at": now.UTC(), "expired_by": kernel.Truncate(by, 128), "updated_at": now.UTC()})
	if res.Error != nil {
		return fmt.Errorf("silence: expire silence %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("silence: expire silence %d: %w", id, kernel.ErrStateChanged)
	}
	return nil
}

// DecideSilence records the decision on a silence awaiting approval; a refusal also
// expires it. ErrStateChanged means it was not awaiting approval.
func (s *Holds) DecideSilence(ctx context.Context, id int64, decision, by string, now time.Time) error {
	upd := map[string]any{"approval": decision, "decided_by": kernel.Truncate(by, 128), "decided_at": now.UTC(), "updated_at": now.UTC()}
	move := silenceApprove
	if decision == models.ApprovalRejected {
		upd["expired_at"], upd["expired_by"] = now.UTC(), kernel.Truncate(by, 128)
		move = silenceRefuse
	}
	res := s.k.Writer(ctx).Model(&Silence{}).Where("id = ?", id).Where(silenceWhere("", silenceTable.From(move))).
		Updates(upd)
	if res.Error != nil {
		return fmt.Errorf("silence: decide silence %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("silence: decide silence %d: %w", id, kernel.ErrStateChanged)
	}
	return nil
}

// DueSilenceEnds lists the silences whose end has come by now and that have not been
// ended yet.
func (s *Holds) DueSilenceEnds(ctx context.Context, now time.Time) ([]Silence, error) {
	var out []Silence
	now = now.UTC()
	err := s.k.Reader(ctx).Where(silenceWhere("", silenceEndable)).Where("(ends_at <= ? OR expired_at <= ?)", now, now).Order("id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("silence: silences due to end: %w", err)
	}
	return out, nil
}

// EndSilence marks a silence ended at now, once (a compare-and-set: ErrStateChanged
// means another process ended it), and returns how many messages it holds.
func (s *Holds) EndSilence(ctx context.Context, id int64, now time.Time) (int, error) {
	var held int64
	err := s.k.Tx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&Silence{}).Where("id = ?", id).Where(silenceWhere("", silenceEndable)).Update("ended_at", now.UTC())
		if res.Error != nil {
			return fmt.Errorf("silence: end silence %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("silence: end silence %d: %w", id, kernel.ErrStateChanged)
		}
		return tx.Table("message_silences AS ms").Joins("JOIN messages m ON m.id = ms.message_id").
			Where("ms.silence_id = ? AND m.status = ?", id, models.StatusHeld).Count(&held).Error
	})
	return int(held), err
}

// subjectColumns select what a silence looks at in a message (delivery.Subject), from
// messages m and the rows it names.
const subjectColumns = "m.id, m.platform, m.priority, COALESCE(a.name, '') AS account, COALESCE(t.name, '') AS template, " +
	"COALESCE(r.department, '') AS department, COALESCE(r.external_id, '') AS recipient, COALESCE(k.name, '') AS api_key, " +
	"COALESCE(al.policy, '') AS policy, COALESCE(b.api_key_id, 0) AS key_id, m.created_at"

// subjectJoins are the joins subjectColumns reads.
const subjectJoins = "LEFT JOIN batches b ON b.id = m.batch_id LEFT JOIN accounts a ON a.id = m.account_id " +
	"LEFT JOIN templates t ON t.id = b.template_id LEFT JOIN recipients r ON r.id = m.recipient_id " +
	"LEFT JOIN api_keys k ON k.id = b.api_key_id LEFT JOIN alerts al ON al.id = m.alert_id"

// subjectRow is one message as a silence sees it.
type subjectRow struct {
	ID, Platform, Priority, Account, Template, Department, Recipient, APIKey, Policy string
	KeyID                                                                            int64
	CreatedAt                                                                        time.Time
}

func (r subjectRow) subject() delivery.Subject {
	return delivery.Subject{delivery.MatchPlatform: r.Platform, delivery.MatchPriority: r.Priority, delivery.MatchAccount: r.Account,
		delivery.MatchTemplate: r.Template, delivery.MatchDepartment: r.Department, delivery.MatchRecipient: r.Recipient,
		delivery.MatchAPIKey: r.APIKey, delivery.MatchPolicy: r.Policy, delivery.SubjectKeyID: keyIDText(r.KeyID)}
}

// keyIDText is an API key id as a subject holds it: "" for no key.
func keyIDText(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

// SilenceSubjects returns what a silence sees of each of the messages ids that is
// waiting (pending or failed) and due by dueBy, by id.
func (s *Holds) SilenceSubjects(ctx context.Context, ids []string, dueBy time.Time) (map[string]delivery.Subject, error) {
	var rows []subjectRow
	err := s.k.Reader(ctx).Table("messages AS m").Select(subjectColumns).Joins(subjectJoins).
		Where("m.id IN ? AND m.status IN ? AND m.next_attempt_at <= ?", ids, delivery.Holdable, dueBy.UTC()).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("silence: silence subjects: %w", err)
	}
	out := make(map[string]delivery.Subject, len(rows))
	for _, r := range rows {
		out[r.ID] = r.subject()
	}
	return out, nil
}

// subjectPage is how many messages one read of RecentSubjects returns.
const subjectPage = 2000

// RecentSubjects calls fn with what a silence sees of each message created since since,
// oldest first, until fn returns false or max messages have been seen. It reports
// whether it saw them all.
func (s *Holds) RecentSubjects(ctx context.Context, since time.Time, max int, fn func(delivery.Subject) bool) (bool, error) {
	after, afterID := since.UTC(), ""
	seen := 0
	for {
		var rows []subjectRow
		q := s.k.Reader(ctx).Table("messages AS m").Select(subjectColumns).Joins(subjectJoins)
		if afterID == "" {
			q = q.Where("m.created_at >= ?", after)
		} else {
			q = q.Where("(m.created_at > ? OR (m.created_at = ? AND m.id > ?))", after, after, afterID)
		}
		if err := q.Order("m.created_at, m.id").Limit(subjectPage).Scan(&rows).Error; err != nil {
			return false, fmt.Errorf("silence: recent silence subjects: %w", err)
		}
		for _, r := range rows {
			if seen == max {
				return false, nil
			}
			seen++
			if !fn(r.subject()) {
				return false, nil
			}
		}
		if len(rows) < subjectPage {
			return true, nil
		}
		last := rows[len(rows)-1]
		after, afterID = last.CreatedAt.UTC(), last.ID
	}
}

// stillHolding returns holds without the silences that have ended or been expired
// (early, or by a rejection), and without the messages no silence then holds.
func stillHolding(tx *gorm.DB, holds map[string][]int64) (map[string][]int64, error) {
	var sids []int64
	for _, list := range holds {
		for _, sid := range list {
			if !slices.Contains(sids, sid) {
				sids = append(sids, sid)
			}
		}
	}
	var live []int64
	if err := tx.Model(&Silence{}).Where("id IN ?", sids).Where(silenceWhere("", silenceOpen)).
		Pluck("id", &live).Error; err != nil {
		return nil, fmt.Errorf("silence: silences still holding: %w", err)
	}
	out := make(map[string][]int64, len(holds))
	for id, list := range holds {
		var keep []int64
		for _, sid := range list {
			if slices.Contains(live, sid) {
				keep = append(keep, sid)
			}
		}
		if len(keep) > 0 {
			out[id] = keep
		}
	}
	return out, nil
}

// HoldMessages holds due waiting messages for the silences that match them (message id
// → silence ids), each recurring silence until the end of its window (until, by
// silence id): each one still pending or failed and due by dueBy moves to held, with
// no task and no attempt used, records the silences that hold it and, for a callback
// key, its message.held event, in one transaction. It returns the messages it held, each
// with the silences that hold it (those not ended meanwhile), and the keys that have
// events to hear; a message claimed or changed meanwhile is left as it is.
func (s *Holds) HoldMessages(ctx context.Context, holds map[string][]int64, until map[int64]time.Time, dueBy time.Time) (held map[string][]int64, keys []int64, err error) {
	if len(holds) == 0 {
		return nil, nil, nil
	}
	err = s.k.TxRetry(ctx, func(tx *gorm.DB) error {
		now := kernel.Now()
		// A worker's view of the silences may be a second old: hold only for silences
		// that have not ended or been expired meanwhile, so that a message the end pass
		// has just released is not held again by the silence that released it.
		holds, err := stillHolding(tx, holds)
		if err != nil {
			return err
		}
		held, keys = map[string][]int64{}, keys[:0]
		if len(holds) == 0 {
			return nil
		}
		ids := make([]string, 0, len(holds))
		for id := range holds {
			ids = append(ids, id)
		}
		// The token tells the rows this transaction held from any another process held at
		// the same moment; claim_token means nothing outside sending.
		// The lease is left as it was, and the token has a claim's length: the claim that
		// follows the release then updates the row in place (unclaimed).
		token := kernel.NewToken()[:models.ClaimTokenLen]
		res := tx.Model(&models.Message{}).Where("id IN ? AND status IN ? AND next_attempt_at <= ?", ids, delivery.Holdable, dueBy.UTC()).
			Updates(map[string]any{"status": models.StatusHeld, "next_attempt_at": nil, "claim_token": token,
				"task_id": "", "updated_at": now})
		if res.Error != nil {
			return fmt.Errorf("silence: hold messages: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return nil
		}
		var rows []models.Message
		if err := tx.Select("id, batch_id, callback_key_id").Where("id IN ? AND status = ? AND claim_token = ?", ids, models.StatusHeld, token).
			Find(&rows).Error; err != nil {
			return fmt.Errorf("silence: held messages: %w", err)
		}
		var links []MessageSilence
		var events []models.CallbackEvent
		for _, m := range rows {
			held[m.ID] = holds[m.ID]
			for _, sid := range holds[m.ID] {
				link := MessageSilence{MessageID: m.ID, SilenceID: sid, HeldAt: now}
				if u, ok := until[sid]; ok {
					link.HeldUntil = &u
				}
				links = append(links, link)
			}
			if m.CallbackKeyID != nil {
				id := m.ID
				events = append(events, models.NewEvent(*m.CallbackKeyID, models.EventMessageHeld, &id, m.BatchID, string(models.StatusHeld), "", now))
				if !slices.Contains(keys, *m.CallbackKeyID) {
					keys = append(keys, *m.CallbackKeyID)
				}
			}
		}
		if err := kernel.CreateRows(tx.Clauses(clause.OnConflict{DoNothing: true}), links); err != nil {
			return fmt.Errorf("silence: record silences of held messages: %w", err)
		}
		if len(events) > 0 {
			if err := kernel.CreateRows(tx, events); err != nil {
				return fmt.Errorf("silence: record held events: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return held, keys, nil
}

// FreeHeld is a held message none of whose silences is still live.
type FreeHeld struct {
	ID        string
	Priority  models.Priority
	AccountID int64
	SendAt    time.Time
	// Cancel is set when a silence that held it cancels what it held.
	Cancel bool
}

// priorityRank orders messages high, normal, low in SQL.
const priorityRank = "CASE m.priority WHEN 'high' THEN 0 WHEN 'normal' THEN 1 ELSE 2 END"

// FreeHeldMessages lists held messages whose every silence has ended at now (or, for a
// recurring silence, whose window that held it has), in the order they are to go on: by
// priority, then oldest first; at most limit of them.
func (s *Holds) FreeHeldMessages(ctx context.Context, now time.Time, limit int) ([]FreeHeld, error) {
	var out []FreeHeld
	holding := silenceWhere("s.", silenceEndable)
	err := s.k.Reader(ctx).Table("messages AS m").
		Select("m.id, m.priority, m.account_id, m.send_at, EXISTS (SELECT 1 FROM message_silences mc JOIN silences c ON c.id = mc.silence_id "+
			"WHERE mc.message_id = m.id AND c.on_end = ?) AS cancel", delivery.OnEndCancel).
		Where("m.status = ? AND NOT EXISTS (SELECT 1 FROM message_silences ms JOIN silences s ON s.id = ms.silence_id "+
			"WHERE ms.message_id = m.id AND (ms.held_until IS NULL OR ms.held_until > ?) AND "+holding.SQL+")",
			append([]any{models.StatusHeld, now.UTC()}, holding.Vars...)...).
		Order(priorityRank + ", m.id").Limit(limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("silence: held messages free to go: %w", err)
	}
	return out, nil
}

// Release is some held messages to make pending again, due at DueAt and carried by the
// task TaskID.
type Release struct {
	TaskID string
	IDs    []string
	DueAt  time.Time
}

// ReleaseHeld makes held messages pending again, each group due when it says and
// carried by its task, and cancels the held messages cancel, in one transaction. Each
// move is a compare-and-set on held, so a message is released or cancelled once however
// many processes try. It returns, for each release, the ids it moved, and how many it
// cancelled.
func (s *Holds) ReleaseHeld(ctx context.Context, releases []Release, cancel []string, now time.Time) ([][]string, int, error) {
	moved := make([][]string, len(releases))
	var cancelled int
	now = now.UTC().Truncate(time.Microsecond) // as stored: RecordCancelled finds the rows by it
	err := s.k.TxRetry(ctx, func(tx *gorm.DB) error {
		cancelled = 0
		for i, r := range releases {
			moved[i] = nil
			res := tx.Model(&models.Message{}).Where("id IN ? AND status = ?", r.IDs, models.StatusHeld).
				Updates(map[string]any{"status": models.StatusPending, "next_attempt_at": r.DueAt.UTC(), "task_id": r.TaskID,
					"claim_token": models.UnclaimedToken, "updated_at": now})
			if res.Error != nil {
				return fmt.Errorf("silence: release held messages: %w", res.Error)
			}
			if res.RowsAffected == 0 {
				continue
			}
			// The task id is this release's own: it tells the rows moved here.
			if err := tx.Model(&models.Message{}).Where("id IN ? AND task_id = ?", r.IDs, r.TaskID).Order("id").
				Pluck("id", &moved[i]).Error; err != nil {
				return fmt.Errorf("silence: released messages: %w", err)
			}
		}
		if len(cancel) == 0 {
			return nil
		}
		res := tx.Model(&models.Message{}).Where("id IN ? AND status = ?", cancel, models.StatusHeld).
			Updates(map[string]any{"status": models.StatusCancelled, "last_error": "cancelled at the end of the silence that held it",
				"updated_at": now})
		if res.Error != nil {
			return fmt.Errorf("silence: cancel held messages: %w", res.Error)
		}
		cancelled = int(res.RowsAffected)
		return models.RecordCancelled(tx, "id IN ?", cancel, now)
	})
	return moved, cancelled, err
}

// HeldCounts counts, for each of the silences ids, the messages it held (ever) and
// those it holds now.
func (s *Holds) HeldCounts(ctx context.Context, ids []int64) (ever, now map[int64]int, err error) {
	ever, now = map[int64]int{}, map[int64]int{}
	if len(ids) == 0 {
		return ever, now, nil
	}
	var rows []struct {
		SilenceID int64
		Ever, Now int
	}
	err = s.k.Reader(ctx).Table("message_silences AS ms").Joins("JOIN messages m ON m.id = ms.message_id").
		Select("ms.silence_id, COUNT(*) AS ever, COALESCE(SUM(CASE WHEN m.status = ? THEN 1 ELSE 0 END), 0) AS now", models.StatusHeld).
		Where("ms.silence_id IN ?", ids).Group("ms.silence_id").Scan(&rows).Error
	if err != nil {
		return nil, nil, fmt.Errorf("silence: held counts: %w", err)
	}
	for _, r := range rows {
		ever[r.SilenceID], now[r.SilenceID] = r.Ever, r.Now
	}
	return ever, now, nil
}

// SilencesOfMessage lists the ids of the silences that hold or held a message.
func (s *Holds) SilencesOfMessage(ctx context.Context, messageID string) ([]int64, error) {
	var ids []int64
	if err := s.k.Reader(ctx).Model(&MessageSilence{}).Where("message_id = ?", messageID).Order("silence_id").
		Pluck("silence_id", &ids).Error; err != nil {
		return nil, fmt.Errorf("silence: silences of message %s: %w", messageID, err)
	}
	return ids, nil
}
