package duty

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"herald/kernel"
)

// NationalDay is one date of a national holiday calendar: a day off, or a make-up
// workday (调休) when Off is false. Ordinary weekends are not listed.
type NationalDay struct {
	Date string `json:"date"`
	Name string `json:"name"`
	Off  bool   `json:"off"`
}

// DefaultMakeupWeekday is the weekly roster a make-up workday starts with when its
// notice does not say which weekday it stands for: Monday's, the first workday's. The
// operator chooses per date before an import is applied.
const DefaultMakeupWeekday = 1

// MaxNationalDays bounds one import.
const MaxNationalDays = 400

// holidayCN is a calendar file in the open holiday-cn format.
type holidayCN struct {
	Schema string   `json:"$schema"`
	ID     string   `json:"$id"`
	Year   int      `json:"year"`
	Papers []string `json:"papers"`
	Days   []struct {
		Name     string `json:"name"`
		Date     string `json:"date"`
		IsOffDay *bool  `json:"isOffDay"`
	} `json:"days"`
}

// ParseHolidayCN reads a year's calendar in the holiday-cn format
// ({"year","papers":[…],"days":[{"name","date","isOffDay"}]}). Problems are
// FieldErrors naming the JSON field (days[3].date).
func ParseHolidayCN(b []byte) (int, []NationalDay, error) {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))))
	dec.DisallowUnknownFields()
	var f holidayCN
	if err := dec.Decode(&f); err != nil {
		return 0, nil, kernel.Invalid("file", "national.invalid.json", "Reason", err.Error())
	}
	if f.Year < 2000 || f.Year > 2100 {
		return 0, nil, kernel.Invalid("year", "national.invalid.year")
	}
	if len(f.Days) > MaxNationalDays {
		return 0, nil, kernel.Invalid("days", "national.invalid.too_many", "Max", MaxNationalDays)
	}
	days := make([]NationalDay, len(f.Days))
	for i, d := range f.Days {
		if d.IsOffDay == nil {
			return 0, nil, kernel.Invalid(fmt.Sprintf("days[%d].isOffDay", i), "national.invalid.is_off_day")
		}
		days[i] = NationalDay{Date: d.Date, Name: strings.TrimSpace(d.Name), Off: *d.IsOffDay}
	}
	if err := checkNationalDays(f.Year, days, func(i int) string { return fmt.Sprintf("days[%d]", i) }); err != nil {
		return 0, nil, err
	}
	return f.Year, days, nil
}

// ParseNationalDates reads a pasted list, a date a line: "2027-01-01 off New Year's
// Day" or "2027-02-07 workday" (off/休 or workday/班, then an optional name), spaces,
// tabs or commas between. Problems are FieldErrors naming the line ("line 3").
func ParseNationalDates(text string) ([]NationalDay, error) {
	var days []NationalDay
	var lines []int
	for n, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(days) == MaxNationalDays {
			// One date more than allowed: stop reading, the list is refused anyway.
			return nil, kernel.Invalid("text", "national.invalid.too_many", "Max", MaxNationalDays)
		}
		field := fmt.Sprintf("line %d", n+1)
		parts := strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == '，' || r == '\t' || r == ' ' })
		if len(parts) < 2 {
			return nil, kernel.Invalid(field, "national.invalid.line")
		}
		d := NationalDay{Date: parts[0], Name: strings.Join(parts[2:], " ")}
		switch strings.ToLower(parts[1]) {
		case "off", "休", "休息", "放假":
			d.Off = true
		case "workday", "work", "班", "上班", "补班":
		default:
			return nil, kernel.Invalid(field, "national.invalid.kind")
		}
		days = append(days, d)
		lines = append(lines, n+1)
	}
	if len(days) == 0 {
		return nil, kernel.Invalid("text", "national.invalid.empty")
	}
	return days, checkNationalDays(0, days, func(i int) string { return fmt.Sprintf("line %d", lines[i]) })
}

// checkNationalDays checks each date (in year, if year is not 0), that no date comes
// twice, and the names' length; field names the i-th day in errors.
func checkNationalDays(year int, days []NationalDay, field func(int) string) error {
	seen := map[string]bool{}
	for i, d := range days {
		t, err := time.Parse(time.DateOnly, d.Date)
		switch {
		case err != nil || len(d.Date) != 10:
			return kernel.Invalid(field(i)+".date", "validation.date")
		case year != 0 && t.Year() != year:
			return kernel.Invalid(field(i)+".date", "national.invalid.other_year", "Year", year)
		case seen[d.Date]:
			return kernel.Invalid(field(i)+".date", "national.invalid.twice", "Date", d.Date)
		case utf8.RuneCountInString(d.Name) > 100:
			return kernel.Invalid(field(i)+".name", "duty.invalid.too_long", "Max", 100)
		}
		if err := kernel.CheckText(field(i)+".name", d.Name, false); err != nil {
			return err
		}
		seen[d.Date] = true
	}
	return nil
}

// NationalPlace is where in an import's input a problem is, read back from the field a
// parser's FieldError names ("line 6.date", "days[3].isOffDay", "entries[1]"), so that
// the console can say it in the reader's language.
type NationalPlace struct {
	// In is "line" (a pasted date list), "days" (a holiday-cn file) or "entries" (the
	// previewed dates posted back).
	In string
	// N is the line's number (from 1), or the day's position in its list (from 1).
	N int
	// Field is the part of the line or day: "date", "name", "isOffDay", or "" for the
	// whole of it.
	Field string
}

var nationalPlace = regexp.MustCompile(`^(?:line (\d+)|(days|entries)\[(\d+)\])(?:\.(\w+))?$`)

// ParseNationalPlace reads the place a national import's FieldError names; false for a
// field of the form (text, file, builtin …).
func ParseNationalPlace(field string) (NationalPlace, bool) {
	m := nationalPlace.FindStringSubmatch(field)
	if m == nil {
		return NationalPlace{}, false
	}
	if m[1] != "" {
		n, _ := strconv.Atoi(m[1])
		return NationalPlace{In: "line", N: n, Field: m[4]}, true
	}
	i, _ := strconv.Atoi(m[3])
	return NationalPlace{In: m[2], N: i + 1, Field: m[4]}, true
}

// ParseNationalEntries reads national days back from the JSON an import preview
// carries to its apply step, checking them again.
func ParseNationalEntries(text string) ([]NationalDay, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	var days []NationalDay
	if err := dec.Decode(&days); err != nil || len(days) == 0 {
		return nil, kernel.Invalid("entries", "national.invalid.empty")
	}
	if len(days) > MaxNationalDays {
		return nil, kernel.Invalid("entries", "national.invalid.too_many", "Max", MaxNationalDays)
	}
	return days, checkNationalDays(0, days, func(i int) string { return fmt.Sprintf("entries[%d]", i) })
}

// NationalHolidays turns national days into holiday entries: a make-up workday uses
// the roster of asWeekday[date], or DefaultMakeupWeekday.
func NationalHolidays(days []NationalDay, asWeekday map[string]int) []Holiday {
	out := make([]Holiday, len(days))
	for i, d := range days {
		out[i] = Holiday{Date: d.Date, Kind: HolidayOff, Name: d.Name}
		if !d.Off {
			wd := asWeekday[d.Date]
			if wd < 1 || wd > 7 {
				wd = DefaultMakeupWeekday
			}
			out[i].Kind, out[i].AsWeekday = HolidayWorkday, &wd
		}
	}
	slices.SortFunc(out, func(a, b Holiday) int { return strings.Compare(a.Date, b.Date) })
	return out
}

// HolidayChange is an entry to apply beside the one its date has now, if any.
type HolidayChange struct {
	Holiday
	Old    *Holiday
	Effect string // kernel.EffectCreate, kernel.EffectUpdate or kernel.EffectUnchanged
}

// HolidayChanges compares entries to apply with those stored for their dates.
func (s *Schedule) HolidayChanges(ctx context.Context, list []Holiday) ([]HolidayChange, error) {
	if len(list) == 0 {
		return nil, nil
	}
	from, to := list[0].Date, list[0].Date
	for _, h := range list {
		from, to = min(from, h.Date), max(to, h.Date)
	}
	stored, err := s.HolidaysBetween(ctx, from, to)
	if err != nil {
		return nil, err
	}
	byDate := make(map[string]*Holiday, len(stored))
	for i := range stored {
		byDate[stored[i].Date] = &stored[i]
	}
	out := make([]HolidayChange, len(list))
	for i, h := range list {
		c := HolidayChange{Holiday: h, Old: byDate[h.Date], Effect: kernel.EffectCreate}
		if c.Old != nil {
			c.Effect = kernel.EffectUpdate
			if c.Old.Kind == h.Kind && c.Old.Name == h.Name && derefWeekday(c.Old.AsWeekday) == derefWeekday(h.AsWeekday) {
				c.Effect = kernel.EffectUnchanged
			}
		}
		out[i] = c
	}
	return out, nil
}

func derefWeekday(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
