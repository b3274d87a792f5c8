package delivery

import (
	"regexp"
	"slices"
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

// Subject is what a silence looks at in a message: the value of each matcher name.
type Subject map[string]string

// SilenceRule is a silence's matchers ready to test messages with.
type SilenceRule struct {
	ID       int64
	matchers []compiledMatcher
}

type compiledMatcher struct {
	Matcher
	re *regexp.Regexp
}

// NewSilenceRule compiles a silence's matchers; an expression that does not compile is
// an error (validated matchers never have one).
func NewSilenceRule(id int64, matchers []Matcher) (*SilenceRule, error) {
	r := &SilenceRule{ID: id}
	for _, m := range matchers {
		re, err := m.Compile()
		if err != nil {
			return nil, err
		}
		r.matchers = append(r.matchers, compiledMatcher{m, re})
	}
	return r, nil
}

// Matches reports whether every matcher matches the subject. An alert's notice (one
// with a policy) matches only a silence that names its policy with a matcher that is
// not negated.
func (r *SilenceRule) Matches(s Subject) bool {
	namesPolicy := false
	for _, m := range r.matchers {
		v := s[m.Name]
		var ok bool
		if m.re != nil {
			ok = m.re.MatchString(v)
		} else {
			ok = v == m.Value
		}
		if ok == m.Negate {
			return false
		}
		if m.Name == MatchPolicy && !m.Negate {
			namesPolicy = true
		}
	}
	return s[MatchPolicy] == "" || namesPolicy
}

// everyValue are values no real matcher singles out together: a matcher that matches
// all of them matches anything.
var everyValue = []string{"", "x", "high", "E1001", "运维部", "a b-c"}

// MatchesEverything reports whether the matchers leave nothing out: none at all, or
// each matches any value (a regex such as ".*"). Such a silence needs a second person's
// approval.
func MatchesEverything(matchers []Matcher) bool {
	for _, m := range matchers {
		re, err := m.Compile()
		if err != nil {
			return false
		}
		all := !slices.ContainsFunc(everyValue, func(v string) bool {
			ok := v == m.Value
			if re != nil {
				ok = re.MatchString(v)
			}
			return ok == m.Negate
		})
		if !all {
			return false
		}
	}
	return true
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
