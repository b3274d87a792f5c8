package sending_test

import (
	"testing"
	"time"

	"herald/kernel"
	"herald/models"
	"herald/sending"
)

func TestQuietHoursHolds(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	at := func(day, hour, minute int) time.Time { return time.Date(2026, 12, day, hour, minute, 0, 0, shanghai) }
	night := sending.QuietHours{Start: "20:00", End: "08:00"}
	lunch := sending.QuietHours{Start: "12:00", End: "13:30"}
	tests := []struct {
		name     string
		q        sending.QuietHours
		priority models.Priority
		now      time.Time
		until    time.Time // zero: not held
	}{
		{"before an overnight window", night, models.PriorityNormal, at(1, 19, 59), time.Time{}},
		{"at its start", night, models.PriorityNormal, at(1, 20, 0), at(2, 8, 0)},
		{"before midnight", night, models.PriorityLow, at(1, 23, 30), at(2, 8, 0)},
		{"after midnight", night, models.PriorityNormal, at(2, 3, 0), at(2, 8, 0)},
		{"at its end", night, models.PriorityNormal, at(2, 8, 0), time.Time{}},
		{"high is never held", night, models.PriorityHigh, at(1, 23, 30), time.Time{}},
		{"inside a daytime window", lunch, models.PriorityNormal, at(1, 12, 45), at(1, 13, 30)},
		{"after a daytime window", lunch, models.PriorityNormal, at(1, 13, 30), time.Time{}},
		{"no window", sending.QuietHours{}, models.PriorityLow, at(1, 23, 0), time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			held, until := tt.q.Holds(tt.priority, tt.now, shanghai)
			if held != !tt.until.IsZero() || (held && !until.Equal(tt.until)) {
				t.Errorf("Holds(%s, %s) = %v, %s; want held %v until %s", tt.priority, tt.now, held, until, !tt.until.IsZero(), tt.until)
			}
		})
	}
}

func TestQuietHoursValidate(t *testing.T) {
	tests := []struct {
		q     sending.QuietHours
		field string // "" = valid
	}{
		{sending.QuietHours{}, ""},
		{sending.QuietHours{Start: "20:00", End: "08:00"}, ""},
		{sending.QuietHours{Start: "8:00", End: "09:00"}, "quiet_hours.start"},
		{sending.QuietHours{Start: "24:00", End: "09:00"}, "quiet_hours.start"},
		{sending.QuietHours{Start: "20:00", End: ""}, "quiet_hours.end"},
		{sending.QuietHours{Start: "", End: "08:00"}, "quiet_hours.start"},
		{sending.QuietHours{Start: "10:00", End: "10:00"}, "quiet_hours.end"},
	}
	for _, tt := range tests {
		err := tt.q.Validate()
		fe, _ := err.(*kernel.FieldError)
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%+v: %v, want valid", tt.q, err)
		case tt.field != "" && (fe == nil || fe.Field != tt.field):
			t.Errorf("%+v: %v, want an error naming %s", tt.q, err, tt.field)
		}
	}
}
