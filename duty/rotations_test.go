package duty_test

import (
	"fmt"
	"herald/duty"
	"strings"
	"testing"
)

// turns renders who each rotation puts on duty on each date from..to as
// "date:name=1+2,name=3" lines, people by id.
func turns(t *testing.T, d *duty.DutyData, dates ...string) string {
	t.Helper()
	var lines []string
	for _, date := range dates {
		day, err := d.Day(date)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, r := range day.Rotations {
			ids := make([]string, len(r.Members))
			for i, id := range r.Members {
				ids[i] = fmt.Sprint(id)
			}
			parts = append(parts, r.Name+"="+strings.Join(ids, "+"))
		}
		lines = append(lines, date+" "+day.Kind+" "+strings.Join(parts, ","))
	}
	return strings.Join(lines, "\n")
}

func TestRotationTurns(t *testing.T) {
	intPtr := func(n int) *int { return &n }
	// 2026-09-28 is a Monday. The National Day holiday of 2026 runs 10-01..10-07 with
	// make-up workdays on Sunday 09-27 (as a Monday) and Saturday 10-10 (as a Friday).
	holidays := map[string]*duty.Holiday{
		"2026-09-27": {Date: "2026-09-27", Kind: duty.HolidayWorkday, AsWeekday: intPtr(1)},
		"2026-10-10": {Date: "2026-10-10", Kind: duty.HolidayWorkday, AsWeekday: intPtr(5)},
	}
	for d := 1; d <= 7; d++ {
		date := fmt.Sprintf("2026-10-%02d", d)
		holidays[date] = &duty.Holiday{Date: date, Kind: duty.HolidayOff}
	}
	tests := []struct {
		name     string
		rotation duty.Rotation
		dates    []string
		want     []string
	}{
		{
			name:     "daily over every day, days off included",
			rotation: duty.Rotation{Name: "r", Members: [][]int64{{1}, {2}, {3}}, StartDate: "2026-09-28", TurnDays: 1, Covers: duty.CoversEveryDay},
			dates:    []string{"2026-09-27", "2026-09-28", "2026-09-29", "2026-09-30", "2026-10-01", "2026-10-02"},
			want: []string{"2026-09-27 makeup_workday ", "2026-09-28 workday r=1", "2026-09-29 workday r=2",
				"2026-09-30 workday r=3", "2026-10-01 holiday r=1", "2026-10-02 holiday r=2"},
		},
		{
			name:     "daily over workdays skips weekends and days off without using a turn, covers make-up days",
			rotation: duty.Rotation{Name: "r", Members: [][]int64{{1}, {2}, {3}}, StartDate: "2026-09-24", TurnDays: 1, Covers: duty.CoversWorkdays},
			// 09-24 Thu, 09-25 Fri, 09-26 Sat, 09-27 Sun (make-up), 09-28 Mon, 09-29 Tue, 09-30 Wed, 10-01..07 off, 10-08 Thu.
			dates: []string{"2026-09-24", "2026-09-25", "2026-09-26", "2026-09-27", "2026-09-28", "2026-09-30", "2026-10-01", "2026-10-08", "2026-10-10"},
			want: []string{"2026-09-24 workday r=1", "2026-09-25 workday r=2", "2026-09-26 weekend ", "2026-09-27 makeup_workday r=3",
				"2026-09-28 workday r=1", "2026-09-30 workday r=3", "2026-10-01 holiday ", "2026-10-08 workday r=1", "2026-10-10 makeup_workday r=3"},
		},
		{
			name:     "a week's turn runs over calendar weeks, groups on duty together",
			rotation: duty.Rotation{Name: "teams", Members: [][]int64{{1, 2}, {3, 4}}, StartDate: "2026-09-21", TurnDays: 7, Covers: duty.CoversWorkdays},
			dates:    []string{"2026-09-21", "2026-09-25", "2026-09-26", "2026-09-27", "2026-09-28", "2026-10-01", "2026-10-08", "2026-10-12"},
			want: []string{"2026-09-21 workday teams=1+2", "2026-09-25 workday teams=1+2", "2026-09-26 weekend ",
				"2026-09-27 makeup_workday teams=1+2", "2026-09-28 workday teams=3+4", "2026-10-01 holiday ",
				"2026-10-08 workday teams=1+2", "2026-10-12 workday teams=3+4"},
		},
		{
			name:     "chosen weekdays read make-up days as the weekday they stand for",
			rotation: duty.Rotation{Name: "mon", Members: [][]int64{{1}, {2}}, StartDate: "2026-09-20", TurnDays: 1, Covers: duty.CoversWeekdays, Weekdays: []int{1}},
			// 09-27 stands for a Monday, 10-05 is a Monday off.
			dates: []string{"2026-09-21", "2026-09-27", "2026-09-28", "2026-10-05", "2026-10-12"},
			want:  []string{"2026-09-21 workday mon=1", "2026-09-27 makeup_workday mon=2", "2026-09-28 workday mon=1", "2026-10-05 holiday ", "2026-10-12 workday mon=2"},
		},
		{
			name:     "nothing before the start",
			rotation: duty.Rotation{Name: "r", Members: [][]int64{{1}}, StartDate: "2026-10-12", TurnDays: 2, Covers: duty.CoversEveryDay},
			dates:    []string{"2026-10-11", "2026-10-12"},
			want:     []string{"2026-10-11 weekend ", "2026-10-12 workday r=1"},
		},
		{
			name:     "two-day turns over every day",
			rotation: duty.Rotation{Name: "r", Members: [][]int64{{1}, {2}}, StartDate: "2026-11-01", TurnDays: 2, Covers: duty.CoversEveryDay},
			dates:    []string{"2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04", "2026-11-05"},
			want:     []string{"2026-11-01 weekend r=1", "2026-11-02 workday r=1", "2026-11-03 workday r=2", "2026-11-04 workday r=2", "2026-11-05 workday r=1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &duty.DutyData{Rotations: []duty.Rotation{tt.rotation}, Holidays: holidays}
			if got, want := turns(t, d, tt.dates...), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("turns:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestDutyDataWeeklyRoster(t *testing.T) {
	intPtr := func(n int) *int { return &n }
	d := &duty.DutyData{
		Week: duty.Week{1: {11}, 5: {15}, 6: {16}},
		Holidays: map[string]*duty.Holiday{
			"2026-10-05": {Date: "2026-10-05", Kind: duty.HolidayOff},
			"2026-10-10": {Date: "2026-10-10", Kind: duty.HolidayWorkday, AsWeekday: intPtr(5)},
		},
	}
	for date, want := range map[string]string{"2026-10-12": "[11]", "2026-10-05": "[]", "2026-10-10": "[15]", "2026-10-17": "[16]"} {
		day, err := d.Day(date)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(day.Weekly); got != want {
			t.Errorf("%s: weekly %s, want %s", date, got, want)
		}
	}
	if _, err := d.Day("2026-13-01"); err == nil {
		t.Error("a bad date is accepted")
	}
}
