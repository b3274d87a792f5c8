package delivery

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Silences hold the notices that match them while they are active: during a maintenance
// window, the expected alarms wait instead of reaching the people on duty. A silence is
// a set of matchers, all of which must match a message (Alertmanager's rule); it is
// active from StartsAt until EndsAt, or until someone expires it early.

// The names a matcher may test, each a fact of the message (Subject).
const (
	MatchPlatform   = "platform"
	MatchAccount    = "account"
	MatchTemplate   = "template"
	MatchDepartment = "department"
	MatchRecipient  = "recipient"
	MatchPriority   = "priority"
	MatchAPIKey     = "api_key"
	// MatchPolicy is the escalation policy of an alert's notices ("" for other
	// messages): a silence holds an alert's notices only if it names their policy.
	MatchPolicy = "policy"
)

// MatcherNames lists the names a matcher may test.
var MatcherNames = []string{MatchPlatform, MatchAccount, MatchTemplate, MatchDepartment, MatchRecipient, MatchPriority, MatchAPIKey, MatchPolicy}

// The silence states, computed from its times (SilenceState).
const (
	SilencePending = "pending"
	SilenceActive  = "active"
	SilenceExpired = "expired"
)

// MaxUnapprovedSilence is the longest a silence may last without a second person's
// approval.
const MaxUnapprovedSilence = 24 * time.Hour

// SilenceStates lists the states in lifecycle order.
var SilenceStates = []string{SilencePending, SilenceActive, SilenceExpired}

// What a silence does with the messages it held when it ends.
const (
	OnEndRelease = "release"
	OnEndCancel  = "cancel"
)

// Matcher tests one fact of a message: equal to Value, or, with Regex, matched whole by
// the RE2 expression Value; Negate turns the answer round.
type Matcher struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Regex  bool   `json:"regex"`
	Negate bool   `json:"negate"`
}

// Compile checks a regex matcher's expression and returns it anchored at both ends; nil
// for a matcher that compares values.
func (m Matcher) Compile() (*regexp.Regexp, error) {
	if !m.Regex {
		return nil, nil
	}
	return regexp.Compile(`^(?:` + m.Value + `)$`)
}

// MaxRegexProgram bounds the size of a matcher's compiled expression: every worker tests
// every message it sends against every live silence, so no expression may be heavy.
const MaxRegexProgram = 1000

// ErrRegexTooLarge refuses an expression whose program is over MaxRegexProgram.
var ErrRegexTooLarge = errors.New("expression too large")

// Op is the matcher's test as Alertmanager writes it between name and value: =, !=,
// =~ (a regex) or !~.
func (m Matcher) Op() string {
	switch {
	case m.Regex && m.Negate:
		return "!~"
	case m.Regex:
		return "=~"
	case m.Negate:
		return "!="
	}
	return "="
}

// String writes the matcher as Alertmanager does, the value quoted: severity="critical",
// alertname=~"Slow.*". ParseMatcher reads it back.
func (m Matcher) String() string { return m.Name + m.Op() + strconv.Quote(m.Value) }

// ParseMatcher reads a matcher written name=value, name!=value, name=~expression or
// name!~expression, the value in double quotes or bare; false when line is none.
func ParseMatcher(line string) (Matcher, bool) {
	i := strings.IndexAny(line, "=!")
	if i <= 0 {
		return Matcher{}, false
	}
	m := Matcher{Name: strings.TrimSpace(line[:i])}
	rest := line[i:]
	for _, op := range []string{"!~", "=~", "!=", "="} {
		if strings.HasPrefix(rest, op) {
			m.Regex, m.Negate = strings.HasSuffix(op, "~"), op[0] == '!'
			m.Value = strings.TrimSpace(rest[len(op):])
			if v, err := strconv.Unquote(m.Value); err == nil {
				m.Value = v
			}
			return m, true
		}
	}
	return Matcher{}, false
}

// Check compiles a regex matcher's expression as Compile does and refuses one whose
// program is larger than MaxRegexProgram instructions.
func (m Matcher) Check() error {
	if _, err := m.Compile(); err != nil || !m.Regex {
		return err
	}
	re, err := syntax.Parse(`^(?:`+m.Value+`)$`, syntax.Perl)
	if err != nil {
		return err
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return err
	}
	if len(prog.Inst) > MaxRegexProgram {
		return ErrRegexTooLarge
	}
	return nil
}

// Subject is what a silence looks at in a message: the value of each matcher name, and
// under SubjectKeyID the id of the API key that sent it.
type Subject map[string]string

// SubjectKeyID is the subject's API key id ("" for a message no key sent): no matcher
// may name it; a send key's silence holds only the messages whose key is its own.
const SubjectKeyID = "api_key_id"

// SilenceRule is a silence's matchers ready to test messages with.
type SilenceRule struct {
	ID       int64
	matchers []compiledMatcher
	// onlyKey is the API key id whose messages alone it holds ("" for anyone's).
	onlyKey string
}

type compiledMatcher struct {
	Matcher
	re *regexp.Regexp
}

// matches reports whether the subject's value of the matcher's name matches, negated
// when the matcher is.
func (m compiledMatcher) matches(s Subject) bool {
	v := s[m.Name]
	var ok bool
	if m.re != nil {
		ok = m.re.MatchString(v)
	} else {
		ok = v == m.Value
	}
	return ok != m.Negate
}

// MatcherSet is a list of matchers ready to test subjects with: a subject matches when
// every matcher does (an empty set matches everything).
type MatcherSet []compiledMatcher

// CompileMatchers compiles matchers into a set; an expression that does not compile is
// an error (validated matchers never have one).
func CompileMatchers(matchers []Matcher) (MatcherSet, error) {
	set := make(MatcherSet, 0, len(matchers))
	for _, m := range matchers {
		re, err := m.Compile()
		if err != nil {
			return nil, err
		}
		set = append(set, compiledMatcher{m, re})
	}
	return set, nil
}

// Matches reports whether every matcher of the set matches s.
func (set MatcherSet) Matches(s Subject) bool {
	for _, m := range set {
		if !m.matches(s) {
			return false
		}
	}
	return true
}

// NewSilenceRule compiles a silence's matchers; an expression that does not compile is
// an error (validated matchers never have one).
func NewSilenceRule(id int64, matchers []Matcher) (*SilenceRule, error) {
	set, err := CompileMatchers(matchers)
	if err != nil {
		return nil, err
	}
	return &SilenceRule{ID: id, matchers: set}, nil
}

// HoldOnly limits the rule to the messages of the API key keyID, as a send key's silence
// is, and returns it.
func (r *SilenceRule) HoldOnly(keyID int64) *SilenceRule {
	r.onlyKey = strconv.FormatInt(keyID, 10)
	return r
}

// Matches reports whether every matcher matches the subject. An alert's notice (one
// with a policy) matches only a silence that names its policy with a matcher that is
// not negated; a send key's silence matches only the key's own messages.
func (r *SilenceRule) Matches(s Subject) bool {
	if r.onlyKey != "" && s[SubjectKeyID] != r.onlyKey {
		return false
	}
	namesPolicy := false
	for _, m := range r.matchers {
		if !m.matches(s) {
			return false
		}
		if m.Name == MatchPolicy && !m.Negate {
			namesPolicy = true
		}
	}
	return s[MatchPolicy] == "" || namesPolicy
}

// Why a silence waits for a second person's approval: its reach is judged by what it
// would hold, whatever the spelling of its matchers.
const (
	// BroadNoMatchers: without matchers it holds every message.
	BroadNoMatchers = "no_matchers"
	// BroadRegex: a regular expression's reach cannot be read at a glance (".+",
	// "high|normal|low" and "[a-z]+" all hold everything).
	BroadRegex = "regex"
	// BroadNegated: a negated matcher holds everything but what it names.
	BroadNegated = "negated"
	// BroadHoldsMany: it would have held more than MaxUnapprovedHeld of the last day's
	// messages.
	BroadHoldsMany = "holds_many"
	// BroadLong: it lasts longer than MaxUnapprovedSilence.
	BroadLong = "long"
	// BroadAdjacent: with its creator's silences that overlap it or follow on within
	// AdjacentGap, it covers longer than MaxUnapprovedSilence.
	BroadAdjacent = "adjacent"
)

// MaxUnapprovedHeld is the most of the last day's messages a silence may have held
// without a second person's approval.
const MaxUnapprovedHeld = 100

// AdjacentGap is the longest pause between two silences of one creator that still
// makes them one stretch for the MaxUnapprovedSilence rule: back-to-back silences are
// one long silence.
const AdjacentGap = time.Hour

// BroadMatchers returns why matchers alone make a silence broad: none at all, a regular
// expression, a negated matcher. The order is fixed, each reason once.
func BroadMatchers(matchers []Matcher) []string {
	var out []string
	if len(matchers) == 0 {
		out = append(out, BroadNoMatchers)
	}
	if slices.ContainsFunc(matchers, func(m Matcher) bool { return m.Regex }) {
		out = append(out, BroadRegex)
	}
	if slices.ContainsFunc(matchers, func(m Matcher) bool { return m.Negate }) {
		out = append(out, BroadNegated)
	}
	return out
}

// Window is the time a silence covers, from Start until End.
type Window struct{ Start, End time.Time }

// Stretch returns how long the stretch w belongs to lasts: w joined with every window of
// others that overlaps it or follows on within AdjacentGap, and with those that join
// them, from the first start to the last end.
func Stretch(w Window, others []Window) time.Duration {
	joined := true
	for joined {
		joined = false
		for _, o := range others {
			if o.Start.After(w.End.Add(AdjacentGap)) || o.End.Add(AdjacentGap).Before(w.Start) {
				continue
			}
			if o.Start.Before(w.Start) {
				w.Start, joined = o.Start, true
			}
			if o.End.After(w.End) {
				w.End, joined = o.End, true
			}
		}
	}
	return w.End.Sub(w.Start)
}

// SilenceState is a silence's state at now: pending before it starts (or while it
// waits for approval), active until it ends, expired from its end or from the moment
// someone expired it early.
func SilenceState(startsAt, endsAt time.Time, expiredAt *time.Time, awaiting bool, now time.Time) string {
	switch {
	case expiredAt != nil && !now.Before(*expiredAt), !now.Before(endsAt):
		return SilenceExpired
	case awaiting || now.Before(startsAt):
		return SilencePending
	}
	return SilenceActive
}
