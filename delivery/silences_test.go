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

func TestMatchesEverything(t *testing.T) {
	tests := []struct {
		name     string
		matchers []Matcher
		want     bool
	}{
		{"none", nil, true},
		{"dot star", []Matcher{{Name: MatchPlatform, Value: ".*", Regex: true}}, true},
		{"negated empty set", []Matcher{{Name: MatchPlatform, Value: "x^", Regex: true, Negate: true}}, true},
		{"a value", []Matcher{{Name: MatchPlatform, Value: "wecom"}}, false},
		{"one constrains", []Matcher{{Name: MatchPlatform, Value: ".*", Regex: true}, {Name: MatchPriority, Value: "low"}}, false},
		{"dot plus leaves out the empty value", []Matcher{{Name: MatchTemplate, Value: ".+", Regex: true}}, false},
	}
	for _, tt := range tests {
		if got := MatchesEverything(tt.matchers); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
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
