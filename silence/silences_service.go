package silence

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"herald/audit"
	"herald/delivery"
	"herald/kernel"
	"herald/models"
	"herald/templates"
)

// Silences: while a silence is active, the worker holds each message it matches as the
// message comes due (tasks/silences.go). When the silence ends, at its end or when a
// person expires it early, the silence pass here ends it once and sends on every held
// message none of whose silences is still live: pending again, due now (or at its
// send_at, if later), in order of priority and then age, through the normal path and
// so within every limit; or cancelled, when a silence that held it says so. A broad
// silence waits for a second person's approval, as a large batch does (approvals.go):
// judged by what it would hold, not by how its matchers are spelled (approvalReasons).
// A send key's silence holds only that key's messages. Live silences are capped per
// creator and overall, and start at most MaxSilenceLead ahead: every worker tests every
// message against every live silence.

// Limits of a silence.
const (
	// MaxSilence is the longest a silence may last at all.
	MaxSilence = 90 * 24 * time.Hour
	// MaxSilenceLead is how far ahead a silence may start.
	MaxSilenceLead = 30 * 24 * time.Hour
	// MaxCreatorSilences is how many silences one person or one API key may have that
	// have not ended (pending, awaiting approval or active).
	MaxCreatorSilences = 20
	// MaxLiveSilences is how many silences may not have ended, all creators together.
	MaxLiveSilences = 200
	maxMatchers     = 20
	maxMatcherValue = 255
	maxComment      = 1000
	// SilenceKept is how long an ended silence stays listed.
	SilenceKept = 7 * 24 * time.Hour
)

// ErrSilenceEnded refuses expiring a silence that has ended already, before the call
// or meanwhile; it is a case of kernel.ErrStateChanged.
var ErrSilenceEnded = kernel.Declare(kernel.DomainError{Kind: kernel.KindConflict, Code: "silence_expired", Key: "silences.api.expired",
	Err: kernel.ErrStateChanged, Text: "silence: the silence has ended"})

// ErrOwnSilence refuses a decision on a silence by a person who made it; it is made
// With the silence's ID, which its message names.
var ErrOwnSilence = kernel.Declare(kernel.DomainError{Kind: kernel.KindForbidden, Code: "forbidden", Key: "silences.notice.own",
	Text: "silence: the maker of a silence cannot decide on it"})

// SilenceInput is a silence as a person writes it.
type SilenceInput struct {
	Matchers []delivery.Matcher
	// StartsAt nil starts it now.
	StartsAt *time.Time
	// EndsAt nil ends a recurring silence MaxSilence after it starts.
	EndsAt *time.Time
	// Schedule, when set, makes it recurring: it holds in its windows alone.
	Schedule *Schedule
	Comment  string
	// OnEnd is delivery.OnEndRelease (the default) or delivery.OnEndCancel.
	OnEnd string
}

// CheckMatchers validates matchers: known names, values within bounds, expressions RE2
// compiles. The error names the field (matchers[i].name or .value).
func CheckMatchers(matchers []delivery.Matcher) error {
	if len(matchers) > maxMatchers {
		return kernel.Invalid("matchers", "silences.check.too_many", "Max", maxMatchers)
	}
	for i, m := range matchers {
		at := fmt.Sprintf("matchers[%d]", i)
		if !slices.Contains(delivery.MatcherNames, m.Name) {
			return kernel.Invalid(at+".name", "silences.check.name", "Name", strconv.Quote(m.Name), "Names", strings.Join(delivery.MatcherNames, ", "))
		}
		if err := kernel.CheckText(at+".value", m.Value, false); err != nil {
			return err
		}
		if utf8.RuneCountInString(m.Value) > maxMatcherValue {
			return kernel.Invalid(at+".value", "compose.check.max_chars", "Max", maxMatcherValue)
		}
		if err := m.Check(); errors.Is(err, delivery.ErrRegexTooLarge) {
			return kernel.Invalid(at+".value", "silences.check.regex_too_large", "Max", delivery.MaxRegexProgram)
		} else if err != nil {
			return kernel.Invalid(at+".value", "silences.check.regex", "Err", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	}
	return nil
}

// checkSilence validates a silence as written and fills its defaults: it starts now,
// and releases what it held; a recurring one (in loc's time zone when it names none)
// lasts MaxSilence.
func checkSilence(in *SilenceInput, now time.Time, loc *time.Location) error {
	if err := CheckMatchers(in.Matchers); err != nil {
		return err
	}
	if in.Schedule != nil {
		if err := checkSchedule(in.Schedule, loc); err != nil {
			return err
		}
	}
	if in.StartsAt == nil {
		in.StartsAt = &now
	}
	if in.EndsAt == nil && in.Schedule != nil {
		ends := in.StartsAt.Add(MaxSilence)
		in.EndsAt = &ends
	}
	// As stored: MySQL keeps microseconds.
	starts := in.StartsAt.UTC().Truncate(time.Microsecond)
	in.StartsAt = &starts
	if starts.After(now.Add(MaxSilenceLead)) {
		return kernel.Invalid("starts_at", "silences.check.starts_too_late", "Days", int(MaxSilenceLead/(24*time.Hour)))
	}
	if in.EndsAt == nil {
		return kernel.Invalid("ends_at", "silences.check.ends_required")
	}
	ends := in.EndsAt.UTC().Truncate(time.Microsecond)
	in.EndsAt = &ends
	switch {
	case !ends.After(starts):
		return kernel.Invalid("ends_at", "silences.check.ends_after_starts")
	case !ends.After(now):
		return kernel.Invalid("ends_at", "silences.check.ends_past")
	case ends.Sub(starts) > MaxSilence:
		return kernel.Invalid("ends_at", "silences.check.too_long", "Days", int(MaxSilence/(24*time.Hour)))
	}
	in.Comment = strings.TrimSpace(in.Comment)
	if err := kernel.CheckText("comment", in.Comment, true); err != nil {
		return err
	}
	if in.Comment == "" || utf8.RuneCountInString(in.Comment) > maxComment {
		return kernel.Invalid("comment", "silences.check.comment", "Max", maxComment)
	}
	in.OnEnd = cmp.Or(in.OnEnd, delivery.OnEndRelease)
	if in.OnEnd != delivery.OnEndRelease && in.OnEnd != delivery.OnEndCancel {
		return kernel.Invalid("on_end", "silences.check.on_end")
	}
	return nil
}

// creator is who made a silence, for the rules that count a creator's silences: an API
// key (its id), or a person (their name, KeyID 0).
type creator struct {
	KeyID int64
	Name  string
}

func creatorOf(s *Silence) creator {
	if s.APIKeyID != nil {
		return creator{*s.APIKeyID, s.CreatedBy}
	}
	return creator{0, s.CreatedBy}
}

// silenceRule is the rule a silence holds messages by: a send key's silence holds only
// the key's messages.
func silenceRule(id int64, matchers []delivery.Matcher, holdsKey *int64) (*delivery.SilenceRule, error) {
	rule, err := delivery.NewSilenceRule(id, matchers)
	if err == nil && holdsKey != nil {
		rule.HoldOnly(*holdsKey)
	}
	return rule, err
}

// lengthReasons returns why a silence's times make it wait for approval: it lasts longer
// than delivery.MaxUnapprovedSilence, or its creator's silences that overlap it or
// follow on from it (delivery.Stretch) make one stretch longer than that. self is the
// silence being edited, left out (0 for a new one).
func (d *Keeper) lengthReasons(ctx context.Context, in SilenceInput, by creator, self int64) ([]string, error) {
	if in.Schedule != nil {
		// Approved once for all its windows: judged by one window's length.
		if in.Schedule.length() > delivery.MaxUnapprovedSilence {
			return []string{delivery.BroadLong}, nil
		}
		return nil, nil
	}
	w := delivery.Window{Start: *in.StartsAt, End: *in.EndsAt}
	if w.End.Sub(w.Start) > delivery.MaxUnapprovedSilence {
		return []string{delivery.BroadLong}, nil
	}
	// A silence that ended before this reaches back cannot join a stretch long enough.
	since := w.Start.Add(-delivery.MaxUnapprovedSilence - delivery.AdjacentGap)
	mine, err := d.store.CreatorSilences(ctx, by.KeyID, by.Name, since)
	if err != nil {
		return nil, err
	}
	var others []delivery.Window
	for _, s := range mine {
		if s.ID != self && s.Schedule == nil {
			others = append(others, delivery.Window{Start: s.StartsAt, End: s.End()})
		}
	}
	if delivery.Stretch(w, others) > delivery.MaxUnapprovedSilence {
		return []string{delivery.BroadAdjacent}, nil
	}
	return nil, nil
}

// approvalReasons returns why a silence waits for a second person's approval, none when
// it needs none: its matchers (none, a regex, a negation: delivery.BroadMatchers), its
// length alone or with its creator's adjacent silences, and, when nothing else has
// already decided it, more than delivery.MaxUnapprovedHeld of the last day's messages
// held (or more messages than a preview reads, so that it cannot tell).
func (d *Keeper) approvalReasons(ctx context.Context, in SilenceInput, by creator, self int64, holdsKey *int64) ([]string, error) {
	reasons := delivery.BroadMatchers(in.Matchers)
	long, err := d.lengthReasons(ctx, in, by, self)
	if err != nil {
		return nil, err
	}
	reasons = append(reasons, long...)
	if len(reasons) > 0 {
		return reasons, nil
	}
	rule, err := silenceRule(0, in.Matchers, holdsKey)
	if err != nil {
		return nil, err
	}
	p, err := d.countHeld(ctx, rule, delivery.MaxUnapprovedHeld)
	if err != nil {
		return nil, err
	}
	if p.Held > delivery.MaxUnapprovedHeld || !p.Complete {
		reasons = append(reasons, delivery.BroadHoldsMany)
	}
	return reasons, nil
}

// silenceParams are a silence's values for its audit entries.
func silenceParams(s *Silence) audit.Params {
	var ms []string
	for _, m := range s.Matchers {
		ms = append(ms, m.String())
	}
	return audit.Params{"id": strconv.FormatInt(s.ID, 10), "matchers": strings.Join(ms, ", "),
		"starts": s.StartsAt.Format(time.RFC3339), "ends": s.EndsAt.Format(time.RFC3339), "on_end": s.OnEnd, "approval": s.Approval,
		"reasons": strings.Join(s.ApprovalReasons, ", "), "schedule": s.Schedule.String()}
}

// CreateSilence validates and saves a new silence, audited. One that needs approval
// holds nothing until another person approves it (its ApprovalReasons say why). A send
// key's silence holds only the key's messages. Past MaxCreatorSilences of its creator's,
// or MaxLiveSilences in all, it is a *kernel.FieldError naming silences.
func (d *Keeper) CreateSilence(ctx context.Context, by audit.Actor, in SilenceInput) (*Silence, error) {
	if err := checkSilence(&in, d.now(), d.loc); err != nil {
		return nil, err
	}
	if err := checkValues(ctx, d.vocabulary, in.Matchers); err != nil {
		return nil, err
	}
	sil := &Silence{Matchers: in.Matchers, StartsAt: *in.StartsAt, EndsAt: *in.EndsAt, Schedule: in.Schedule, Comment: in.Comment,
		CreatedBy: by.Name, OnEnd: in.OnEnd}
	if by.APIKeyID != 0 {
		sil.APIKeyID = &by.APIKeyID
	}
	if own := by.OwnKey(); own != 0 {
		sil.HoldsKeyID = &own
	}
	if by.Person != "" {
		sil.Makers = templates.StringList{by.Person}
	}
	reasons, err := d.approvalReasons(ctx, in, creatorOf(sil), 0, sil.HoldsKeyID)
	if err != nil {
		return nil, err
	}
	sil.ApprovalReasons = reasons
	if len(reasons) > 0 {
		sil.Approval = models.ApprovalAwaiting
	}
	err = d.change(ctx, by, func(tx *Holds, ch *audit.Change) error {
		c := creatorOf(sil)
		mine, all, err := tx.LiveSilenceCounts(ctx, c.KeyID, c.Name)
		switch {
		case err != nil:
			return err
		case all >= MaxLiveSilences:
			return kernel.Invalid("silences", "silences.check.too_many_live", "Max", MaxLiveSilences)
		case mine >= MaxCreatorSilences:
			return kernel.Invalid("silences", "silences.check.too_many_mine", "Max", MaxCreatorSilences)
		}
		if err := tx.CreateSilence(ctx, sil); err != nil {
			return err
		}
		ch.AuditDetail("silence.create", "silence", strconv.FormatInt(sil.ID, 10), sil.Comment, silenceParams(sil))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sil, nil
}

// Silence returns a silence as by may see it: another key's silence is
// kernel.ErrNotFound to a key without the admin scope.
func (d *Keeper) Silence(ctx context.Context, by audit.Actor, id int64) (*Silence, error) {
	sil, err := d.store.SilenceByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if own := by.OwnKey(); own != 0 && (sil.APIKeyID == nil || *sil.APIKeyID != own) {
		return nil, fmt.Errorf("silence: silence %d of another key: %w", id, kernel.ErrNotFound)
	}
	return sil, nil
}

// maxSilenceList is how many silences one list holds.
const maxSilenceList = 500

// Silences lists the silences by may see, newest first, in one state ("" for every
// one); ended ones for SilenceKept. An unknown state is a *kernel.FieldError naming
// state.
func (d *Keeper) Silences(ctx context.Context, by audit.Actor, state string) ([]Silence, error) {
	if state != "" && !slices.Contains(delivery.SilenceStates, state) {
		return nil, kernel.Invalid("state", "silences.check.state", "States", strings.Join(delivery.SilenceStates, ", "))
	}
	now := d.now()
	list, err := d.store.Silences(ctx, by.OwnKey(), now.Add(-SilenceKept), maxSilenceList)
	if err != nil || state == "" {
		return list, err
	}
	return slices.DeleteFunc(list, func(s Silence) bool { return s.State(now) != state }), nil
}

// UpdateSilence replaces a silence that has not ended with in, audited. The change is
// approved afresh when it needs approval; messages it holds stay held until it ends.
// kernel.ErrStateChanged means it had expired.
func (d *Keeper) UpdateSilence(ctx context.Context, by audit.Actor, id int64, in SilenceInput) (*Silence, error) {
	sil, err := d.Silence(ctx, by, id)
	if err != nil {
		return nil, err
	}
	now := d.now()
	if sil.State(now) == delivery.SilenceExpired {
		return nil, kernel.ErrStateChanged
	}
	if err := checkSilence(&in, now, d.loc); err != nil {
		return nil, err
	}
	if err := checkValues(ctx, d.vocabulary, in.Matchers); err != nil {
		return nil, err
	}
	reasons, err := d.approvalReasons(ctx, in, creatorOf(sil), sil.ID, sil.HoldsKeyID)
	if err != nil {
		return nil, err
	}
	sil.Matchers, sil.StartsAt, sil.EndsAt, sil.Schedule, sil.Comment, sil.OnEnd = in.Matchers, *in.StartsAt, *in.EndsAt, in.Schedule, in.Comment, in.OnEnd
	sil.Approval, sil.DecidedBy, sil.DecidedAt, sil.ApprovalReasons = "", "", nil, reasons
	if len(reasons) > 0 {
		sil.Approval = models.ApprovalAwaiting
		if by.Person != "" && !slices.Contains(sil.Makers, by.Person) {
			sil.Makers = append(sil.Makers, by.Person)
		}
	}
	err = d.change(ctx, by, func(tx *Holds, ch *audit.Change) error {
		if err := tx.UpdateSilence(ctx, sil); err != nil {
			return err
		}
		ch.AuditDetail("silence.update", "silence", strconv.FormatInt(id, 10), sil.Comment, silenceParams(sil))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sil, nil
}

// ExpireSilence ends a silence early, audited: the silence pass sends on what it held
// within a second or two. ErrSilenceEnded (a kernel.ErrStateChanged) means it had
// expired already.
func (d *Keeper) ExpireSilence(ctx context.Context, by audit.Actor, id int64) (*Silence, error) {
	sil, err := d.Silence(ctx, by, id)
	if err != nil {
		return nil, err
	}
	now := d.now()
	if sil.State(now) == delivery.SilenceExpired {
		return nil, fmt.Errorf("silence: expire silence %d: %w", id, ErrSilenceEnded)
	}
	err = d.change(ctx, by, func(tx *Holds, ch *audit.Change) error {
		if err := tx.ExpireSilence(ctx, id, by.Name, now); err != nil {
			return err
		}
		ch.Audit("silence.expire", "silence", strconv.FormatInt(id, 10), silenceParams(sil))
		return nil
	})
	if errors.Is(err, kernel.ErrStateChanged) {
		return nil, fmt.Errorf("silence: expire silence %d: %w", id, ErrSilenceEnded)
	}
	if err != nil {
		return nil, err
	}
	sil.ExpiredAt, sil.ExpiredBy = &now, by.Name
	return sil, nil
}

// ownSilence reports whether by made the silence: the same person, the same key or the
// same actor.
func ownSilence(s *Silence, by audit.Actor) bool {
	return by.Name == s.CreatedBy || (by.APIKeyID != 0 && s.APIKeyID != nil && *s.APIKeyID == by.APIKeyID) ||
		(by.Person != "" && slices.Contains(s.Makers, by.Person))
}

// DecideSilence approves or refuses a silence awaiting approval, audited; a refused
// silence is expired. ErrOwnSilence refuses its maker; kernel.ErrStateChanged means it
// was not awaiting approval.
func (d *Keeper) DecideSilence(ctx context.Context, by audit.Actor, id int64, approve bool) error {
	sil, err := d.Silence(ctx, by, id)
	if err != nil {
		return err
	}
	if ownSilence(sil, by) {
		return ErrOwnSilence.With("ID", id)
	}
	decision, action := models.ApprovalApproved, "silence.approve"
	if !approve {
		decision, action = models.ApprovalRejected, "silence.reject"
	}
	return d.change(ctx, by, func(tx *Holds, ch *audit.Change) error {
		if err := tx.DecideSilence(ctx, id, decision, by.Name, d.now()); err != nil {
			return err
		}
		ch.Audit(action, "silence", strconv.FormatInt(id, 10), audit.Params{"id": strconv.FormatInt(id, 10), "maker": sil.CreatedBy})
		return nil
	})
}

// SilencePreview is how many of the messages of the last day a silence would have held,
// and why it would wait for a second person's approval.
type SilencePreview struct {
	Held int
	// Complete is false when there were more messages than MaxPreviewMessages: Held
	// counts among the first of them.
	Complete bool
	// Reasons are delivery's Broad… codes its matchers, its count and, when the input
	// has valid times, its length give; the save adds its creator's adjacent silences.
	Reasons []string
}

// MaxPreviewMessages bounds the messages a preview looks at.
const MaxPreviewMessages = 200000

// PreviewSilence counts the messages created over the last 24 hours that the silence in
// would have held, as by would make it (a send key's only its own), and says why it
// would need approval. Bad matchers are a *kernel.FieldError naming the field; bad
// times are left to the save.
func (d *Keeper) PreviewSilence(ctx context.Context, by audit.Actor, in SilenceInput) (SilencePreview, error) {
	if err := CheckMatchers(in.Matchers); err != nil {
		return SilencePreview{}, err
	}
	var holdsKey *int64
	if own := by.OwnKey(); own != 0 {
		holdsKey = &own
	}
	rule, err := silenceRule(0, in.Matchers, holdsKey)
	if err != nil {
		return SilencePreview{}, err
	}
	p, err := d.countHeld(ctx, rule, 0)
	if err != nil {
		return p, err
	}
	p.Reasons = delivery.BroadMatchers(in.Matchers)
	if p.Held > delivery.MaxUnapprovedHeld || !p.Complete {
		p.Reasons = append(p.Reasons, delivery.BroadHoldsMany)
	}
	if checkSilence(&in, d.now(), d.loc) == nil && in.Schedule == nil && in.EndsAt.Sub(*in.StartsAt) > delivery.MaxUnapprovedSilence {
		p.Reasons = append(p.Reasons, delivery.BroadLong)
	}
	return p, nil
}

// countHeld counts the messages of the last 24 hours rule matches, at most
// MaxPreviewMessages of them; with stopOver above 0 it stops once more than stopOver
// matched (Complete is then false).
func (d *Keeper) countHeld(ctx context.Context, rule *delivery.SilenceRule, stopOver int) (SilencePreview, error) {
	var p SilencePreview
	var err error
	p.Complete, err = d.store.RecentSubjects(ctx, d.now().Add(-24*time.Hour), MaxPreviewMessages, func(s delivery.Subject) bool {
		if rule.Matches(s) {
			p.Held++
		}
		return stopOver == 0 || p.Held <= stopOver
	})
	return p, err
}

// EndSilences ends every silence whose end has come, each once and audited with the
// number of messages it held, and reports how many it ended.
func (d *Keeper) EndSilences(ctx context.Context) (int, error) {
	now := d.now()
	due, err := d.store.DueSilenceEnds(ctx, now)
	if err != nil {
		return 0, err
	}
	ended := 0
	for _, sil := range due {
		err := d.change(ctx, audit.System("silences"), func(tx *Holds, ch *audit.Change) error {
			held, err := tx.EndSilence(ctx, sil.ID, now)
			if err != nil {
				return err
			}
			p := silenceParams(&sil)
			p["held"] = strconv.Itoa(held)
			ch.Audit("silence.end", "silence", strconv.FormatInt(sil.ID, 10), p)
			return nil
		})
		switch {
		case errors.Is(err, kernel.ErrStateChanged): // another worker ended it
		case err != nil:
			return ended, err
		default:
			ended++
		}
	}
	return ended, nil
}

// Vocabulary knows what a matcher's value can name: the platforms, accounts, templates,
// departments, people, priorities, escalation policies and API keys there are. A
// matcher that compares a value (neither an expression nor negated) must name one of
// them, since one that names nothing would be saved and hold nothing.
type Vocabulary interface {
	// Choices lists the values a matcher of name can take, each with the words that
	// tell a person what it is ("" where the value says it all): for people, those
	// whose name, external id or name in pinyin matches query ("" for the first ones).
	Choices(ctx context.Context, name, query string) ([]Choice, error)
	// Known reports whether value is one of name's values.
	Known(ctx context.Context, name, value string) (bool, error)
}

// Choice is one value a matcher can take, with what it is.
type Choice struct {
	Value string `json:"value"`
	Label string `json:"label,omitempty"`
}

// maxNear is how many near values a refusal of an unknown value lists.
const maxNear = 5

// checkValues refuses a comparing matcher whose value names nothing, with the values
// near it (by its words in either direction, or its label: a template's display name
// leads to its name) as the error's list.
func checkValues(ctx context.Context, v Vocabulary, matchers []delivery.Matcher) error {
	if v == nil {
		return nil
	}
	for i, m := range matchers {
		if m.Regex || m.Negate {
			continue
		}
		known, err := v.Known(ctx, m.Name, m.Value)
		if err != nil {
			return err
		}
		if known {
			continue
		}
		choices, err := v.Choices(ctx, m.Name, m.Value)
		if err != nil {
			return err
		}
		if m.Name != delivery.MatchRecipient {
			if all, err := v.Choices(ctx, m.Name, ""); err == nil {
				choices = append(choices, all...)
			}
		}
		at := fmt.Sprintf("matchers[%d].value", i)
		near := nearValues(m.Value, choices)
		if len(near) == 0 {
			return kernel.Invalid(at, "silences.check.unknown_value", "Value", strconv.Quote(m.Value))
		}
		return kernel.Invalid(at, "silences.check.unknown_value_near", "Value", strconv.Quote(m.Value), "Near", strings.Join(near, ", "))
	}
	return nil
}

// nearValues are the values of choices nearest to value, at most maxNear, each once:
// first those whose label is value, then those whose value or label holds value or is
// held by it (letter case aside), then those one or two edits away.
func nearValues(value string, choices []Choice) []string {
	v := strings.ToLower(strings.TrimSpace(value))
	rank := func(c Choice) int {
		val, label := strings.ToLower(c.Value), strings.ToLower(c.Label)
		switch {
		case label != "" && label == v:
			return 0
		case v != "" && (strings.Contains(val, v) || strings.Contains(v, val) || label != "" && (strings.Contains(label, v) || strings.Contains(v, label))):
			return 1
		case editsWithin(val, v, 2):
			return 2
		}
		return -1
	}
	var out []string
	for r := 0; r <= 2; r++ {
		for _, c := range choices {
			if rank(c) == r && !slices.Contains(out, c.Value) && len(out) < maxNear {
				out = append(out, c.Value)
			}
		}
	}
	return out
}

// editsWithin reports whether a and b are at most n single-character edits apart.
func editsWithin(a, b string, n int) bool {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > n || -d > n {
		return false
	}
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(rb)] <= n
}

// Holding lists the live silences that, active at at, would hold a message with one of
// the subjects, as the worker holds a message it is about to send, and how many of the
// subjects they hold: what the compose preview tells the operator a send will wait for.
func (d *Keeper) Holding(ctx context.Context, subjects []delivery.Subject, at time.Time) ([]Silence, int, error) {
	if len(subjects) == 0 {
		return nil, 0, nil
	}
	live, err := d.store.LiveSilences(ctx)
	if err != nil {
		return nil, 0, err
	}
	var out []Silence
	held := make([]bool, len(subjects))
	for _, sil := range live {
		if sil.State(at) != delivery.SilenceActive {
			continue
		}
		rule, err := silenceRule(sil.ID, sil.Matchers, sil.HoldsKeyID)
		if err != nil {
			continue // validated when saved; an expression Go no longer takes holds nothing
		}
		holds := false
		for i, s := range subjects {
			if rule.Matches(s) {
				held[i], holds = true, true
			}
		}
		if holds {
			out = append(out, sil)
		}
	}
	n := 0
	for _, h := range held {
		if h {
			n++
		}
	}
	return out, n, nil
}
