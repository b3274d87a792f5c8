package delivery

import "testing"

// TestMatcherTextRoundTrip: a matcher written by String reads back as itself by
// ParseMatcher, for each of the four tests and a value with a quote and a space; a bare
// value reads as written; a line with no test or no name is refused.
func TestMatcherTextRoundTrip(t *testing.T) {
	for _, m := range []Matcher{
		{Name: "severity", Value: "critical"},
		{Name: "platform", Value: "wecom", Negate: true},
		{Name: "label:alertname", Value: "Slow.*", Regex: true},
		{Name: "template", Value: `say "hi" now`, Regex: true, Negate: true},
	} {
		got, ok := ParseMatcher(m.String())
		if !ok || got != m {
			t.Errorf("%s reads back as %+v (%v), want %+v", m.String(), got, ok, m)
		}
	}
	if got, ok := ParseMatcher(" severity = critical "); !ok || got != (Matcher{Name: "severity", Value: "critical"}) {
		t.Errorf("a bare value: %+v (%v)", got, ok)
	}
	for _, bad := range []string{"severity", "=critical", "!~x"} {
		if m, ok := ParseMatcher(bad); ok {
			t.Errorf("%q read as %+v, want refused", bad, m)
		}
	}
}
