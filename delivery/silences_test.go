package delivery

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Each matcher name, equality, negation and whole-value regexes; every matcher must
// match; an alert's notice only under a silence that names its policy.
func TestSilenceRuleMatches(t *testing.T) {
	plain := Subject{MatchPlatform: "wecom", MatchAccount: "wecom-ops", MatchTemplate: "disk-full", MatchDepartment: "运维部",
		MatchRecipient: "E1001", MatchPriority: "normal", MatchAPIKey: "zabbix", MatchPolicy: ""}
	notice := Subject{MatchPlatform: "wecom", MatchAccount: "wecom-ops", MatchTemplate: "", MatchDepartment: "运维部",
		MatchRecipient: "E1001", MatchPriority: "high", MatchAPIKey: "", MatchPolicy: "core-banking"}
	m := func(name, value string) Matcher { return Matcher{Name: name, Value: value} }
	re := func(name, value string) Matcher { return Matcher{Name: name, Value: value, Regex: true} }
	not := func(x Matcher) Matcher { x.Negate = true; return x }
	tests := []struct {
		name     string
		matchers []Matcher
		subject  Subject
		want     bool
	}{
		{"platform", []Matcher{m(MatchPlatform, "wecom")}, plain, true},
		{"platform other", []Matcher{m(MatchPlatform, "email")}, plain, false},
		{"account", []Matcher{m(MatchAccount, "wecom-ops")}, plain, true},
		{"template", []Matcher{m(MatchTemplate, "disk-full")}, plain, true},
		{"department", []Matcher{m(MatchDepartment, "运维部")}, plain, true},
		{"recipient", []Matcher{m(MatchRecipient, "E1001")}, plain, true},
		{"recipient other", []Matcher{m(MatchRecipient, "E1002")}, plain, false},
		{"priority", []Matcher{m(MatchPriority, "normal")}, plain, true},
		{"api key", []Matcher{m(MatchAPIKey, "zabbix")}, plain, true},
		{"values are compared whole", []Matcher{m(MatchTemplate, "disk")}, plain, false},
		{"negated", []Matcher{not(m(MatchPriority, "high"))}, plain, true},
		{"negated, equal", []Matcher{not(m(MatchPriority, "normal"))}, plain, false},
		{"regex", []Matcher{re(MatchTemplate, "disk-.*")}, plain, true},
		{"regex matches the whole value", []Matcher{re(MatchTemplate, "disk")}, plain, false},
		{"regex alternation stays whole", []Matcher{re(MatchTemplate, "disk|x")}, plain, false},
		{"negated regex", []Matcher{not(re(MatchAPIKey, "zab.*"))}, plain, false},
		{"negated regex, no match", []Matcher{not(re(MatchAPIKey, "prom.*"))}, plain, true},
		{"all must match", []Matcher{m(MatchPlatform, "wecom"), m(MatchPriority, "high")}, plain, false},
		{"no matchers match every message", nil, plain, true},
		{"policy names nothing in a plain message", []Matcher{m(MatchPolicy, "core-banking")}, plain, false},
		{"an alert's notice: a silence without its policy", []Matcher{m(MatchPlatform, "wecom")}, notice, false},
		{"an alert's notice: no matchers", nil, notice, false},
		{"an alert's notice: its policy named", []Matcher{m(MatchPolicy, "core-banking"), m(MatchPlatform, "wecom")}, notice, true},
		{"an alert's notice: its policy by regex", []Matcher{re(MatchPolicy, "core-.*")}, notice, true},
		{"an alert's notice: another policy", []Matcher{m(MatchPolicy, "payments")}, notice, false},
		{"an alert's notice: a negated policy names none", []Matcher{not(m(MatchPolicy, "payments"))}, notice, false},
	}
	for _, tt := range tests {
		r, err := NewSilenceRule(1, tt.matchers)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := r.Matches(tt.subject); got != tt.want {
			t.Errorf("%s: matches %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Breadth is judged by spelling no more: every regex and every negated matcher counts,
// however narrow it looks, and none at all holds everything.
func TestBroadMatchers(t *testing.T) {
	tests := []struct {
		name     string
		matchers []Matcher
		want     []string
	}{
		{"none", nil, []string{BroadNoMatchers}},
		{"a value", []Matcher{{Name: MatchPlatform, Value: "wecom"}}, nil},
		{"dot plus", []Matcher{{Name: MatchPriority, Value: ".+", Regex: true}}, []string{BroadRegex}},
		{"every priority spelled out", []Matcher{{Name: MatchPriority, Value: "high|normal|low", Regex: true}}, []string{BroadRegex}},
		{"a class", []Matcher{{Name: MatchPlatform, Value: "[a-z]+", Regex: true}}, []string{BroadRegex}},
		{"all but one", []Matcher{{Name: MatchRecipient, Value: "E1001", Negate: true}}, []string{BroadNegated}},
		{"every policy", []Matcher{{Name: MatchPolicy, Value: ".+", Regex: true}, {Name: MatchPlatform, Value: "wecom"}}, []string{BroadRegex}},
		{"both", []Matcher{{Name: MatchTemplate, Value: "x", Regex: true, Negate: true}}, []string{BroadRegex, BroadNegated}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, BroadMatchers(tt.matchers)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// A creator's silences that overlap or follow on within AdjacentGap are one stretch.
func TestStretch(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	w := func(from, to time.Duration) Window { return Window{t0.Add(from), t0.Add(to)} }
	h := time.Hour
	tests := []struct {
		name   string
		w      Window
		others []Window
		want   time.Duration
	}{
		{"alone", w(0, 24*h), nil, 24 * h},
		{"back to back", w(24*h, 48*h), []Window{w(0, 24*h)}, 48 * h},
		{"a gap within AdjacentGap", w(24*h+30*time.Minute, 48*h), []Window{w(0, 24*h)}, 48 * h},
		{"a chain before and after", w(24*h, 30*h), []Window{w(0, 24*h), w(30*h, 40*h), w(40*h+h, 50*h)}, 50 * h},
		{"apart", w(26*h, 30*h), []Window{w(0, 24*h)}, 4 * h},
		{"a nightly hour", w(24*h+h, 24*h+2*h), []Window{w(h, 2*h)}, h},
	}
	for _, tt := range tests {
		if got := Stretch(tt.w, tt.others); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A send key's silence holds its own key's messages only.
func TestSilenceRuleHoldOnly(t *testing.T) {
	r, err := NewSilenceRule(1, []Matcher{{Name: MatchPlatform, Value: "wecom"}})
	if err != nil {
		t.Fatal(err)
	}
	r.HoldOnly(7)
	for key, want := range map[string]bool{"7": true, "8": false, "": false} {
		if got := r.Matches(Subject{MatchPlatform: "wecom", SubjectKeyID: key}); got != want {
			t.Errorf("key %q: %v, want %v", key, got, want)
		}
	}
}

// Heavy expressions are refused when a silence is saved.
func TestMatcherCheckRefusesHeavyRegex(t *testing.T) {
	for expr, heavy := range map[string]bool{"disk-.*": false, "E100[1-9]": false, `(\pL{50}){50}`: true, "[a-z]{1000}": true} {
		err := Matcher{Name: MatchTemplate, Value: expr, Regex: true}.Check()
		if (err != nil) != heavy {
			t.Errorf("%s: %v, heavy %v", expr, err, heavy)
		}
	}
}

func TestSilenceState(t *testing.T) {
	start := time.Date(2026, 11, 27, 23, 30, 0, 0, time.UTC)
	end := start.Add(150 * time.Minute)
	early := start.Add(time.Hour)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	var got []string
	for _, c := range []struct {
		now      time.Time
		expired  *time.Time
		awaiting bool
	}{
		{at(-time.Minute), nil, false},
		{at(0), nil, false},
		{at(149 * time.Minute), nil, false},
		{end, nil, false},
		{at(30 * time.Minute), &early, false},
		{early, &early, false},
		{at(30 * time.Minute), nil, true},
	} {
		got = append(got, SilenceState(start, end, c.expired, c.awaiting, c.now))
	}
	want := []string{SilencePending, SilenceActive, SilenceActive, SilenceExpired, SilenceActive, SilenceExpired, SilencePending}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}
