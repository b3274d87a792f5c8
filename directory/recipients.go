package directory

import (
	"context"
	"fmt"
	"net/mail"
	"regexp"
	"strings"
	"time"

	"gorm.io/gorm"

	"herald/channels"
	"herald/kernel"
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
	ID          int64   `json:"-"`
	ExternalID  string  `json:"external_id"`
	Name        string  `json:"name"`
	OrgType     OrgType `json:"org_type"`
	Branch      string  `json:"branch"`
	Department  string  `json:"department"`
	TianyuanID  string  `json:"tianyuan_id"`
	ZhaohuID    string  `json:"zhaohu_id"`
	WecomUserid string  `json:"wecom_userid" gorm:"column:wecom_userid"`
	// FeishuUserID is the person's user_id on Feishu, DingtalkUserid their userid on DingTalk.
	FeishuUserID   string `json:"feishu_user_id" gorm:"column:feishu_user_id"`
	DingtalkUserid string `json:"dingtalk_userid" gorm:"column:dingtalk_userid"`
	Email          string `json:"email"`
	// Mobile is the person's mobile number (NormalizeMobile): eleven digits for a
	// mainland number, + and its digits for another; "" for none. Viewers see it masked
	// (MaskMobile).
	Mobile    string    `json:"mobile"`
	Active    bool      `json:"active"`
	CreatedAt time.Time `json:"-"`
	UpdatedAt time.Time `json:"-"`
}

// IMAddress is a staff field holding a person's user id on an instant-messaging platform.
type IMAddress struct {
	Field string // the API's field, the CSV column and the form's input name
	Of    func(*Recipient) *string
}

// IMAddresses are the user-id fields in the order the form, the CSV file and the API
// list them: Address, validation, the change record and the handlers all read this list.
var IMAddresses = []IMAddress{
	{"tianyuan_id", func(r *Recipient) *string { return &r.TianyuanID }},
	{"zhaohu_id", func(r *Recipient) *string { return &r.ZhaohuID }},
	{"wecom_userid", func(r *Recipient) *string { return &r.WecomUserid }},
	{"feishu_user_id", func(r *Recipient) *string { return &r.FeishuUserID }},
	{"dingtalk_userid", func(r *Recipient) *string { return &r.DingtalkUserid }},
}

// Address returns the recipient's address on a platform, empty when there is none:
// the field the platform table names (the sandbox and webhooks address people by their
// external id).
func (r *Recipient) Address(platform string) string {
	field := channels.AddressField(platform)
	for _, a := range IMAddresses {
		if a.Field == field {
			return *a.Of(r)
		}
	}
	switch field {
	case "email":
		return r.Email
	case "mobile":
		return r.Mobile
	case "external_id":
		return r.ExternalID
	}
	return ""
}

// CreateRecipient stores a new recipient.
func (s *Staff) CreateRecipient(ctx context.Context, r *Recipient) error {
	if err := s.changeRecipients(ctx, func(tx *gorm.DB) error { return tx.Create(r).Error }); err != nil {
		if kernel.IsDuplicate(err) {
			return kernel.DuplicateField("external_id", "validation.external_id_taken")
		}
		return fmt.Errorf("directory: create recipient %s: %w", r.ExternalID, err)
	}
	return nil
}

// ActiveRecipients lists active recipients, at most limit of them, in the order every
// picker of people shows them: by name, Chinese names by pinyin (SortRecipientsByName).
func (s *Staff) ActiveRecipients(ctx context.Context, limit int) ([]Recipient, error) {
	var out []Recipient
	err := s.k.Reader(ctx).Where("active = ?", true).Order("name, id").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("directory: list recipients: %w", err)
	}
	SortRecipientsByName(out)
	return out, nil
}

// RecipientsByIDs returns the recipients with the given ids, in no particular order.
func (s *Staff) RecipientsByIDs(ctx context.Context, ids []int64) ([]Recipient, error) {
	var out []Recipient
	if len(ids) == 0 {
		return out, nil
	}
	if err := s.k.Reader(ctx).Where("id IN ?", ids).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("directory: recipients by id: %w", err)
	}
	return out, nil
}

// RecipientsByExternalIDs returns the recipients with the given external ids.
func (s *Staff) RecipientsByExternalIDs(ctx context.Context, ids []string) ([]Recipient, error) {
	var out []Recipient
	if len(ids) == 0 {
		return out, nil
	}
	if err := s.k.Reader(ctx).Where("external_id IN ?", ids).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("directory: recipients by external id: %w", err)
	}
	return out, nil
}

// CountRecipients reports how many recipients exist.
func (s *Staff) CountRecipients(ctx context.Context) (int64, error) {
	var n int64
	if err := s.k.Reader(ctx).Model(&Recipient{}).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("directory: count recipients: %w", err)
	}
	return n, nil
}

var externalIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// MaxRecipients is the most people one request (a send, a step, a department's
// members) reaches.
const MaxRecipients = 10000

// The longest value each field of a recipient may hold, in characters (the columns'
// sizes).
const (
	MaxExternalID = 64
	MaxName       = 100 // name, branch and department
	MaxAddress    = 128 // the IMAddresses
	MaxEmail      = 254
)

// ValidateRecipient checks a recipient's fields; the console and the API share it. It
// returns the first problem; RecipientProblems lists them all.
func ValidateRecipient(r *Recipient) error {
	if problems := RecipientProblems(r); len(problems) > 0 {
		return problems[0]
	}
	return nil
}

// RecipientProblems trims a recipient's external id and name, writes a mobile number
// in its stored form (NormalizeMobile), and checks every field,
// returning every problem found (at most one a field, in the order of the fields), or
// nothing. A CSV import shows them all at once.
func RecipientProblems(r *Recipient) []*kernel.FieldError {
	r.ExternalID = strings.TrimSpace(r.ExternalID)
	r.Name = strings.TrimSpace(r.Name)
	var out []*kernel.FieldError
	add := func(fe *kernel.FieldError) bool {
		if fe != nil {
			out = append(out, fe)
		}
		return fe != nil
	}
	text := func(field, v string) *kernel.FieldError {
		if err := kernel.CheckText(field, v, false); err != nil {
			return err.(*kernel.FieldError)
		}
		return nil
	}
	const long = "recipients.invalid.too_long"
	if !add(kernel.TooLong("external_id", long, r.ExternalID, MaxExternalID)) && !externalIDRe.MatchString(r.ExternalID) {
		add(kernel.Invalid("external_id", "recipients.invalid.external_id", "Max", MaxExternalID))
	}
	if r.Name == "" {
		add(kernel.Invalid("name", "recipients.invalid.name", "Max", MaxName))
	} else if !add(kernel.TooLong("name", long, r.Name, MaxName)) {
		add(text("name", r.Name))
	}
	if r.OrgType != HeadOffice && r.OrgType != Branch {
		add(kernel.Invalid("org_type", "recipients.invalid.org_type"))
	}
	for _, f := range []struct{ field, v string }{{"branch", r.Branch}, {"department", r.Department}} {
		if !add(kernel.TooLong(f.field, long, f.v, MaxName)) {
			add(text(f.field, f.v))
		}
	}
	for _, a := range IMAddresses {
		v := *a.Of(r)
		if !add(kernel.TooLong(a.Field, long, v, MaxAddress)) && strings.ContainsFunc(v, func(c rune) bool { return c <= ' ' }) {
			add(kernel.Invalid(a.Field, "recipients.invalid.address"))
		}
	}
	if r.Email != "" && !add(kernel.TooLong("email", long, r.Email, MaxEmail)) {
		if a, err := mail.ParseAddress(r.Email); err != nil || a.Address != r.Email {
			add(kernel.Invalid("email", "recipients.invalid.email"))
		}
	}
	if !add(kernel.TooLong("mobile", long, r.Mobile, MaxMobile)) {
		if m, ok := NormalizeMobile(r.Mobile); ok {
			r.Mobile = m
		} else {
			add(kernel.Invalid("mobile", "recipients.invalid.mobile"))
		}
	}
	return out
}

// RecipientFilter selects recipients for a listing.
type RecipientFilter struct {
	// Query finds people as the compose form's people picker does (PersonMatches): part
	// of the name, external id, branch or department, or the name in pinyin, whole
	// ("zhangwei") or by initials ("zw").
	Query   string
	OrgType OrgType
	Branch  string
	Active  *bool
	After   string // external id to continue after (keyset pagination)
	Limit   int
}

// searchChunk is how many people a search reads at a time.
const searchChunk = 1000

// ListRecipients lists recipients by external id, filtered, one page at a time. A
// query is matched in Go with PersonMatches, the one matcher of people, since neither
// database spells names in pinyin: the other filters select in SQL, chunk by chunk,
// until the page is full or the directory is read.
func (s *Staff) ListRecipients(ctx context.Context, f RecipientFilter) ([]Recipient, error) {
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	if strings.TrimSpace(f.Query) == "" {
		return s.listRecipients(ctx, f)
	}
	scan := f
	scan.Query, scan.Limit = "", searchChunk
	var out []Recipient
	for {
		list, err := s.listRecipients(ctx, scan)
		if err != nil {
			return nil, err
		}
		for i := range list {
			if PersonMatches(&list[i], f.Query) {
				if out = append(out, list[i]); len(out) == f.Limit {
					return out, nil
				}
			}
		}
		if len(list) < searchChunk {
			return out, nil
		}
		scan.After = list[len(list)-1].ExternalID
	}
}

// listRecipients is ListRecipients without the query.
func (s *Staff) listRecipients(ctx context.Context, f RecipientFilter) ([]Recipient, error) {
	q := s.k.Reader(ctx).Model(&Recipient{})
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
	var out []Recipient
	if err := q.Order("external_id").Limit(f.Limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("directory: list recipients: %w", err)
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

// RecipientChange is what a write did to one recipient: created, updated, deactivated
// or reactivated, which fields changed, and each change as "field: was → now".
type RecipientChange struct {
	ExternalID string
	Name       string
	Action     string
	Fields     []string
	Diff       []string
}

// CompareRecipients is the change from a recipient as it was (old) to as it is (r).
func CompareRecipients(old, r Recipient) RecipientChange {
	ch := RecipientChange{ExternalID: r.ExternalID, Name: r.Name, Action: "updated"}
	switch {
	case old.Active && !r.Active:
		ch.Action = "deactivated"
	case !old.Active && r.Active:
		ch.Action = "reactivated"
	}
	type field struct {
		name     string
		was, now string
		masked   bool // shown as MaskMobile shows it: the audit log is open to viewers
	}
	fields := []field{{"name", old.Name, r.Name, false}, {"org_type", string(old.OrgType), string(r.OrgType), false},
		{"branch", old.Branch, r.Branch, false}, {"department", old.Department, r.Department, false}}
	for _, a := range IMAddresses {
		fields = append(fields, field{a.Field, *a.Of(&old), *a.Of(&r), false})
	}
	fields = append(fields, field{"email", old.Email, r.Email, false}, field{"mobile", old.Mobile, r.Mobile, true})
	for _, f := range fields {
		if f.was != f.now {
			if f.masked {
				f.was, f.now = MaskMobile(f.was), MaskMobile(f.now)
			}
			ch.Fields = append(ch.Fields, f.name)
			ch.Diff = append(ch.Diff, f.name+": "+f.was+" → "+f.now)
		}
	}
	if old.Active != r.Active {
		ch.Diff = append(ch.Diff, fmt.Sprintf("active: %t → %t", old.Active, r.Active))
	}
	return ch
}

// UpsertRecipients creates or updates recipients by external id in one transaction.
// Callers validate first; a duplicate external id in the list is an error.
func (s *Staff) UpsertRecipients(ctx context.Context, list []Recipient) (UpsertResult, error) {
	var res UpsertResult
	ids := make([]string, len(list))
	for i, r := range list {
		ids[i] = r.ExternalID
	}
	err := s.changeRecipients(ctx, func(tx *gorm.DB) error {
		var existing []Recipient
		for start := 0; start < len(ids); start += kernel.InsertChunk {
			var part []Recipient
			if err := tx.Where("external_id IN ?", ids[start:min(start+kernel.InsertChunk, len(ids))]).Find(&part).Error; err != nil {
				return fmt.Errorf("directory: upsert recipients: %w", err)
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
			r.UpdatedAt = kernel.Now()
			if err := tx.Save(&r).Error; err != nil {
				return fmt.Errorf("directory: update recipient %s: %w", r.ExternalID, err)
			}
			res.Updated++
			res.Changes = append(res.Changes, CompareRecipients(old, r))
		}
		if len(created) > 0 {
			if err := kernel.CreateRows(tx, created); err != nil {
				if kernel.IsDuplicate(err) {
					return kernel.DuplicateField("external_id", "validation.appears_twice")
				}
				return fmt.Errorf("directory: create recipients: %w", err)
			}
		}
		res.Created = len(created)
		for _, r := range created {
			res.Changes = append(res.Changes, RecipientChange{ExternalID: r.ExternalID, Name: r.Name, Action: "created"})
		}
		return nil
	})
	return res, err
}
