package duty_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"herald/duty"
	"herald/internal/testenv"
	"herald/kernel"
)

// The calendar Herald ships was entered from the State Council's notices; the open
// holiday-cn files record the same notices.
func TestBuiltinCalendarMatchesTheNotices(t *testing.T) {
	years := duty.BuiltinNationalYears()
	if len(years) == 0 || !slices.Contains(years, 2026) {
		t.Fatalf("shipped years %v lack 2026", years)
	}
	for _, year := range years {
		t.Run(fmt.Sprint(year), func(t *testing.T) {
			got, notice, ok := duty.BuiltinNationalCalendar(year)
			if !ok || notice == "" {
				t.Fatalf("year %d: ok %v, notice %q", year, ok, notice)
			}
			y, want, err := duty.ParseHolidayCN(testenv.HolidayCN(t, year))
			if err != nil || y != year {
				t.Fatalf("holiday-cn %d: year %d, %v", year, y, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("shipped calendar differs from the notice (-notice +shipped):\n%s", diff)
			}
		})
	}
	if _, _, ok := duty.BuiltinNationalCalendar(1999); ok {
		t.Error("a year Herald does not ship is found")
	}
}

func TestParseHolidayCNRefusesBadFiles(t *testing.T) {
	for _, tt := range []struct{ file, field string }{
		{`{"year":2027,"papers":[],"days":[{"name":"x","date":"2026-12-31","isOffDay":true}]}`, "days[0].date"},
		{`{"year":2027,"papers":[],"days":[{"name":"x","date":"2027-02-30","isOffDay":true}]}`, "days[0].date"},
		{`{"year":2027,"papers":[],"days":[{"name":"x","date":"2027-01-01"}]}`, "days[0].isOffDay"},
		{`{"year":2027,"days":[{"name":"a","date":"2027-01-01","isOffDay":true},{"name":"b","date":"2027-01-01","isOffDay":false}]}`, "days[1].date"},
		{`{"year":2027,"days":[],"extra":1}`, "file"},
		{`{"year":20,"days":[]}`, "year"},
		{`not json`, "file"},
	} {
		_, _, err := duty.ParseHolidayCN([]byte(tt.file))
		var fe *kernel.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("%s: %v, want an error naming %s", tt.file, err, tt.field)
		}
	}
}

func TestParseNationalDates(t *testing.T) {
	days, err := duty.ParseNationalDates("# 2027\n2027-01-01 off 元旦\n\n2027-01-02,休,元旦\r\n2027-01-04\tworkday\n2027-02-06 班 春节 调休\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []duty.NationalDay{{Date: "2027-01-01", Name: "元旦", Off: true}, {Date: "2027-01-02", Name: "元旦", Off: true},
		{Date: "2027-01-04"}, {Date: "2027-02-06", Name: "春节 调休"}}
	if diff := cmp.Diff(want, days); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for text, field := range map[string]string{
		"2027-01-01 off\n2027-01-01 workday": "line 2.date",
		"2027-01-01":                         "line 1",
		"2027-01-01 maybe":                   "line 1",
		"\n\n01/01/2027 off":                 "line 3.date",
		"# nothing":                          "text",
	} {
		_, err := duty.ParseNationalDates(text)
		var fe *kernel.FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%q: %v, want an error naming %s", text, err, field)
		}
	}
}

func TestHolidayChanges(t *testing.T) {
	t.Parallel()
	store := testenv.Store(t)
	ctx := context.Background()
	two := 2
	if err := store.Duty().SetHolidays(ctx, []duty.Holiday{{Date: "2027-01-01", Kind: duty.HolidayOff, Name: "元旦"},
		{Date: "2027-01-04", Kind: duty.HolidayWorkday, AsWeekday: &two}, {Date: "2027-03-01", Kind: duty.HolidayOff}}); err != nil {
		t.Fatal(err)
	}
	list := duty.NationalHolidays([]duty.NationalDay{{Date: "2027-01-04", Name: ""}, {Date: "2027-01-01", Name: "元旦", Off: true},
		{Date: "2027-01-02", Name: "元旦", Off: true}, {Date: "2027-01-05"}}, map[string]int{"2027-01-05": 5})
	changes, err := store.Duty().HolidayChanges(ctx, list)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		got = append(got, fmt.Sprintf("%s %s %d %s", c.Date, c.Kind, deref(c.AsWeekday), c.Effect))
	}
	want := []string{"2027-01-01 off 0 unchanged", "2027-01-02 off 0 create", "2027-01-04 workday 1 update", "2027-01-05 workday 5 create"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
