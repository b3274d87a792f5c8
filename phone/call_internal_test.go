package phone

import (
	"testing"

	"herald/channels"
)

// TestNewsOf: a report says something new of a call only once: its first outcome, or
// the keys pressed on an answered call that had none; never after a call was not placed.
func TestNewsOf(t *testing.T) {
	answered := channels.VoiceReport{Outcome: channels.VoiceAnswered}
	pressed := channels.VoiceReport{Outcome: channels.VoiceAnswered, Keys: "1"}
	noAnswer := channels.VoiceReport{Outcome: channels.VoiceNoAnswer}
	tests := []struct {
		name string
		call Call
		r    channels.VoiceReport
		want bool
	}{
		{"a first report", Call{}, noAnswer, true},
		{"a first report with keys", Call{}, pressed, true},
		{"a report without an outcome", Call{}, channels.VoiceReport{}, false},
		{"the same report again", Call{Outcome: channels.VoiceNoAnswer}, noAnswer, false},
		{"keys after the answer", Call{Outcome: channels.VoiceAnswered}, pressed, true},
		{"the answer after the keys", Call{Outcome: channels.VoiceAnswered, Keys: "1"}, answered, false},
		{"keys again", Call{Outcome: channels.VoiceAnswered, Keys: "1"}, pressed, false},
		{"another outcome after a first", Call{Outcome: channels.VoiceBusy}, answered, false},
		{"a report of a call never placed", Call{Outcome: CallNotPlaced, Reason: "alert_resolved"}, pressed, false},
	}
	for _, tt := range tests {
		if got := newsOf(&tt.call, tt.r); got != tt.want {
			t.Errorf("%s: newsOf = %v, want %v", tt.name, got, tt.want)
		}
	}
}
