// Package chatgroups is the group chats Herald posts to as recipients: a chat group
// names the account that posts (a group robot, or a WeCom or Feishu application and the
// chat's id), who a post @s (whoever is on duty, or nobody) and whether posts waiting
// for the robot's limit are folded into one. Chats holds its queries; Moderator its
// audited changes and the @ of a post at send time.
package chatgroups

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"herald/channels"
	"herald/kernel"
)

// Who a post @s when the send does not say (a chat group's Mention).
const (
	MentionOnDuty = "on_duty"
	MentionNone   = "none"
)

// Limits of a chat group's fields.
const (
	MaxChatID = 128
	MaxNote   = 255
)

// ChatGroup is one group chat Herald posts to.
type ChatGroup struct {
	ID        int64
	Name      string
	AccountID int64
	// Account and Platform are the posting account's name and platform, read with the
	// group (not columns of its own).
	Account  string `gorm:"-"`
	Platform string `gorm:"-"`
	// ChatID is the group chat's id for an application's group chat; "" for a robot.
	ChatID  string
	Mention string
	Fold    bool
	Note    string
	// Version moves with every change: an update or a delete is a compare-and-set on
	// the version read.
	Version   int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TableName is chat_groups.
func (ChatGroup) TableName() string { return "chat_groups" }

// Address is what a post to the group carries as its address: the chat id of an
// application's group chat, or the group's name for a robot, which posts to its own
// group whatever the address says.
func (g *ChatGroup) Address() string {
	if channels.IsRobot(g.Platform) {
		return g.Name
	}
	return g.ChatID
}

var nameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// validate checks a group's own fields, its account's platform already read into it.
func validate(g *ChatGroup) error {
	switch {
	case !nameRe.MatchString(g.Name):
		return kernel.Invalid("name", "chatgroups.error.name")
	case !slices.Contains(channels.GroupPlatforms(), g.Platform):
		return kernel.Invalid("account", "chatgroups.error.account_platform", "Platforms", strings.Join(channels.GroupPlatforms(), ", "))
	case !channels.IsRobot(g.Platform) && g.ChatID == "":
		return kernel.Invalid("chat_id", "chatgroups.error.chat_id_required")
	case len(g.ChatID) > MaxChatID:
		return kernel.Invalid("chat_id", "chatgroups.error.too_long", "Max", MaxChatID)
	case g.Mention != MentionOnDuty && g.Mention != MentionNone:
		return kernel.Invalid("mention", "chatgroups.error.mention")
	case len(g.Note) > MaxNote:
		return kernel.Invalid("note", "chatgroups.error.too_long", "Max", MaxNote)
	}
	if err := kernel.CheckText("chat_id", g.ChatID, false); err != nil {
		return err
	}
	return kernel.CheckText("note", g.Note, false)
}

// Chats is the chat groups' data; safe for concurrent use.
type Chats struct {
	// k is the database, or the database bound to a transaction (On).
	k *kernel.DB
}

// NewStore is the chat groups on k.
func NewStore(k *kernel.DB) *Chats { return &Chats{k: k} }

// On is the store on tx, the database bound to a transaction (kernel.DB.InTx).
func (s *Chats) On(tx *kernel.DB) *Chats { return &Chats{k: tx} }

// Filter narrows the list of chat groups: Q searches names, chat ids and notes; After
// is the last name of the page before (keyset pagination); Limit caps the page (0: all).
type Filter struct {
	Q     string
	After string
	Limit int
}

// withAccount selects the groups with their account's name and platform.
func withAccount(q *gorm.DB) *gorm.DB {
	return q.Table("chat_groups").Select("chat_groups.*, accounts.name AS account_name, accounts.platform AS account_platform").
		Joins("LEFT JOIN accounts ON accounts.id = chat_groups.account_id")
}

// groupRow is a group as withAccount reads it.
type groupRow struct {
	ChatGroup       `gorm:"embedded"`
	AccountName     *string
	AccountPlatform *string
}

// find reads q's groups with their account's name and platform.
func find(q *gorm.DB) ([]ChatGroup, error) {
	var rows []groupRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]ChatGroup, len(rows))
	for i, r := range rows {
		out[i] = r.ChatGroup
		if r.AccountName != nil {
			out[i].Account, out[i].Platform = *r.AccountName, *r.AccountPlatform
		}
	}
	return out, nil
}

// Groups lists the chat groups by name.
func (s *Chats) Groups(ctx context.Context, f Filter) ([]ChatGroup, error) {
	q := withAccount(s.k.Reader(ctx))
	if f.Q != "" {
		q = kernel.WhereLike(q, kernel.LikeContains, f.Q, "chat_groups.name", "chat_groups.chat_id", "chat_groups.note")
	}
	if f.After != "" {
		q = q.Where("chat_groups.name > ?", f.After)
	}
	if f.Limit > 0 {
		q = q.Limit(f.Limit)
	}
	out, err := find(q.Order("chat_groups.name"))
	if err != nil {
		return nil, fmt.Errorf("chatgroups: list: %w", err)
	}
	return out, nil
}

// GroupByName reads one chat group; kernel.ErrNotFound when there is none.
func (s *Chats) GroupByName(ctx context.Context, name string) (*ChatGroup, error) {
	out, err := find(withAccount(s.k.Reader(ctx)).Where("chat_groups.name = ?", name).Limit(1))
	if err != nil {
		return nil, fmt.Errorf("chatgroups: group %s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("chatgroups: group %s: %w", name, kernel.ErrNotFound)
	}
	return &out[0], nil
}

// GroupsByNames reads the named chat groups, in no particular order; a name with no
// group is left out.
func (s *Chats) GroupsByNames(ctx context.Context, names []string) ([]ChatGroup, error) {
	if len(names) == 0 {
		return nil, nil
	}
	out, err := find(withAccount(s.k.Reader(ctx)).Where("chat_groups.name IN ?", names))
	if err != nil {
		return nil, fmt.Errorf("chatgroups: groups %v: %w", names, err)
	}
	return out, nil
}

// GroupsByIDs reads the chat groups with the given ids, by id.
func (s *Chats) GroupsByIDs(ctx context.Context, ids []int64) (map[int64]ChatGroup, error) {
	out := map[int64]ChatGroup{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := find(withAccount(s.k.Reader(ctx)).Where("chat_groups.id IN ?", ids))
	if err != nil {
		return nil, fmt.Errorf("chatgroups: groups by id: %w", err)
	}
	for _, g := range rows {
		out[g.ID] = g
	}
	return out, nil
}

// columns are what a save writes.
func columns(g *ChatGroup) map[string]any {
	return map[string]any{"name": g.Name, "account_id": g.AccountID, "chat_id": g.ChatID, "mention": g.Mention,
		"fold": g.Fold, "note": g.Note, "updated_at": g.UpdatedAt}
}

// Insert stores a new chat group; a taken name is a *kernel.FieldError naming name.
func (s *Chats) Insert(ctx context.Context, g *ChatGroup) error {
	now := kernel.Now()
	g.ID, g.CreatedAt, g.UpdatedAt, g.Version = 0, now, now, 1
	if err := s.k.Writer(ctx).Create(g).Error; err != nil {
		g.ID = 0
		if kernel.IsDuplicate(err) {
			return kernel.DuplicateField("name", "chatgroups.error.name_taken")
		}
		return fmt.Errorf("chatgroups: create %s: %w", g.Name, err)
	}
	return nil
}

// Update saves g over the group as read at version: kernel.ErrStateChanged when it
// changed or went since.
func (s *Chats) Update(ctx context.Context, g *ChatGroup, version int) error {
	g.UpdatedAt = kernel.Now()
	row := columns(g)
	row["version"] = gorm.Expr("version + 1")
	res := s.k.Writer(ctx).Table("chat_groups").Where("id = ? AND version = ?", g.ID, version).Updates(row)
	if kernel.IsDuplicate(res.Error) {
		return kernel.DuplicateField("name", "chatgroups.error.name_taken")
	}
	if res.Error != nil {
		return fmt.Errorf("chatgroups: update %s: %w", g.Name, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("chatgroups: update %s: %w", g.Name, kernel.ErrStateChanged)
	}
	g.Version = version + 1
	return nil
}

// Delete removes the group as read at version: kernel.ErrStateChanged when it changed
// or went since.
func (s *Chats) Delete(ctx context.Context, g *ChatGroup) error {
	res := s.k.Writer(ctx).Where("id = ? AND version = ?", g.ID, g.Version).Delete(&ChatGroup{})
	if res.Error != nil {
		return fmt.Errorf("chatgroups: delete %s: %w", g.Name, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("chatgroups: delete %s: %w", g.Name, kernel.ErrStateChanged)
	}
	return nil
}
