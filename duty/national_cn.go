package duty

import (
	"slices"
	"strings"
	"time"
)

// The national holiday calendar Herald ships: each year as the State Council's General
// Office announced it (放假安排通知), a holiday at a time: its days off from first to
// last, and the weekend days worked instead (调休). The notices do not say which weekday
// a make-up workday stands for.
type nationalHoliday struct {
	name         string
	first, last  string
	makeupWorked []string
}

type nationalYear struct {
	notice   string // where the notice was published
	holidays []nationalHoliday
}

var nationalYears = map[int]nationalYear{
	2025: {
		notice: "https://www.gov.cn/zhengce/zhengceku/202411/content_6986383.htm",
		holidays: []nationalHoliday{
			{"元旦", "2025-01-01", "2025-01-01", nil},
			{"春节", "2025-01-28", "2025-02-04", []string{"2025-01-26", "2025-02-08"}},
			{"清明节", "2025-04-04", "2025-04-06", nil},
			{"劳动节", "2025-05-01", "2025-05-05", []string{"2025-04-27"}},
			{"端午节", "2025-05-31", "2025-06-02", nil},
			{"国庆节、中秋节", "2025-10-01", "2025-10-08", []string{"2025-09-28", "2025-10-11"}},
		},
	},
	2026: {
		notice: "https://www.gov.cn/zhengce/zhengceku/202511/content_7047091.htm",
		holidays: []nationalHoliday{
			{"元旦", "2026-01-01", "2026-01-03", []string{"2026-01-04"}},
			{"春节", "2026-02-15", "2026-02-23", []string{"2026-02-14", "2026-02-28"}},
			{"清明节", "2026-04-04", "2026-04-06", nil},
			{"劳动节", "2026-05-01", "2026-05-05", []string{"2026-05-09"}},
			{"端午节", "2026-06-19", "2026-06-21", nil},
			{"中秋节", "2026-09-25", "2026-09-27", nil},
			{"国庆节", "2026-10-01", "2026-10-07", []string{"2026-09-20", "2026-10-10"}},
		},
	},
}

// BuiltinNationalYears lists the years whose national calendar Herald ships.
func BuiltinNationalYears() []int {
	years := make([]int, 0, len(nationalYears))
	for y := range nationalYears {
		years = append(years, y)
	}
	slices.Sort(years)
	return years
}

// BuiltinNationalCalendar returns a shipped year's days off and make-up workdays in
// date order, and the address of its notice; ok is false for a year Herald does not
// ship.
func BuiltinNationalCalendar(year int) (days []NationalDay, notice string, ok bool) {
	y, ok := nationalYears[year]
	if !ok {
		return nil, "", false
	}
	for _, h := range y.holidays {
		first, _ := time.Parse(time.DateOnly, h.first)
		last, _ := time.Parse(time.DateOnly, h.last)
		for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
			days = append(days, NationalDay{Date: d.Format(time.DateOnly), Name: h.name, Off: true})
		}
		for _, w := range h.makeupWorked {
			days = append(days, NationalDay{Date: w, Name: h.name})
		}
	}
	slices.SortFunc(days, func(a, b NationalDay) int { return strings.Compare(a.Date, b.Date) })
	return days, y.notice, true
}
