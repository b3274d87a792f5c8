package handlers

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/duty"
	"herald/kernel"
	"herald/views"
)

func (h *Handlers) renderNational(c *gin.Context, status int, v views.NationalImport, errs map[string]string) {
	v.Builtin = duty.BuiltinNationalYears()
	render(c, status, views.NationalImportPage(page(c, tr(c, "national.title"), "duty"), v, errs))
}

// NationalImportForm shows the national holiday calendar import.
func (h *Handlers) NationalImportForm(c *gin.Context) {
	h.renderNational(c, http.StatusOK, views.NationalImport{}, nil)
}

// nationalDays reads the days an import form gives: the previewed entries posted back,
// a built-in year, an uploaded holiday-cn file, or pasted text (a holiday-cn file or a
// list of dates). source says what they are, in words.
func nationalDays(c *gin.Context) (days []duty.NationalDay, source, notice string, err error) {
	if entries := c.PostForm("entries"); entries != "" {
		days, err = duty.ParseNationalEntries(entries)
		return days, tr(c, "national.source_text"), "", err
	}
	if b := c.PostForm("builtin"); b != "" {
		year, _ := strconv.Atoi(b)
		days, notice, ok := duty.BuiltinNationalCalendar(year)
		if !ok {
			return nil, "", "", kernel.Invalid("builtin", "national.invalid.no_year")
		}
		return days, tr(c, "national.source_builtin", "Year", year), notice, nil
	}
	var raw []byte
	field := "text"
	if fh, ferr := c.FormFile("file"); ferr == nil {
		field = "file"
		if fh.Size > MaxImportBytes {
			return nil, "", "", kernel.Invalid("file", "import.too_large", "MB", MaxImportBytes>>20)
		}
		f, err := fh.Open()
		if err != nil {
			return nil, "", "", kernel.Invalid("file", "import.unreadable")
		}
		defer f.Close()
		if raw, err = io.ReadAll(io.LimitReader(f, MaxImportBytes)); err != nil {
			return nil, "", "", kernel.Invalid("file", "import.unreadable")
		}
	} else {
		raw = []byte(c.PostForm("text"))
	}
	text := strings.TrimSpace(string(raw))
	if !strings.HasPrefix(text, "{") {
		if field == "file" {
			return nil, "", "", kernel.Invalid("file", "national.invalid.json", "Reason", "{ …")
		}
		days, err = duty.ParseNationalDates(text)
		return days, tr(c, "national.source_text"), "", err
	}
	year, days, err := duty.ParseHolidayCN([]byte(text))
	var fe *kernel.FieldError
	if errors.As(err, &fe) && fe.Field == "file" {
		fe.Field = field
	}
	return days, tr(c, "national.source_file", "Year", year), "", err
}

// ImportNational previews (mode=preview) or applies (mode=apply) a year of national
// holidays: all its dates in one transaction, or none.
func (h *Handlers) ImportNational(c *gin.Context) {
	v := views.NationalImport{Text: c.PostForm("text")}
	days, source, notice, err := nationalDays(c)
	if err != nil {
		var fe *kernel.FieldError
		if errors.As(err, &fe) {
			msg := fe.In(c.Request.Context())
			field := fe.Field
			if place, ok := duty.ParseNationalPlace(field); ok {
				// A place inside the input: say it in words, beside the input it is in.
				field = "text"
				if _, err := c.FormFile("file"); err == nil {
					field = "file"
				}
				msg = nationalProblem(c, place, fe.Field, msg)
			}
			h.renderNational(c, http.StatusUnprocessableEntity, v, map[string]string{field: msg})
			return
		}
		h.fail(c, err)
		return
	}
	asWeekday := map[string]int{}
	for _, d := range days {
		if n, err := strconv.Atoi(c.PostForm("as_weekday." + d.Date)); err == nil {
			asWeekday[d.Date] = n
		}
	}
	list := duty.NationalHolidays(days, asWeekday)
	ctx := c.Request.Context()
	if c.PostForm("mode") == "apply" {
		if err := h.applyHolidays(c, list, duty.HolidaysFromNational); err != nil {
			h.fail(c, err)
		}
		return
	}
	changes, err := h.Store.Duty().HolidayChanges(ctx, list)
	if err != nil {
		h.fail(c, err)
		return
	}
	entries, _ := json.Marshal(days)
	v.Previewed, v.Source, v.Notice, v.Entries, v.Changes = true, source, notice, string(entries), changes
	for _, ch := range changes {
		switch ch.Effect {
		case kernel.EffectCreate:
			v.New++
		case kernel.EffectUpdate:
			v.Changed++
		default:
			v.Unchanged++
		}
	}
	h.renderNational(c, http.StatusOK, v, nil)
}

// nationalProblem says where in an import a problem is and what it is, in the reader's
// language ("第 6 行的日期：…"), with the raw detail beside it: the line as it was
// pasted, or the place in the file (days[3].date), which the person can look up.
func nationalProblem(c *gin.Context, place duty.NationalPlace, raw, problem string) string {
	field := ""
	if place.Field != "" {
		field = tr(c, "national.field."+place.Field)
	}
	if place.In != "line" {
		return tr(c, "national.invalid.at_"+place.In, "N", place.N, "Field", field, "Problem", problem, "Detail", raw)
	}
	lines := strings.Split(strings.ReplaceAll(c.PostForm("text"), "\r\n", "\n"), "\n")
	detail := ""
	if place.N >= 1 && place.N <= len(lines) {
		detail = strings.TrimSpace(lines[place.N-1])
	}
	return tr(c, "national.invalid.at_line", "N", place.N, "Field", field, "Problem", problem, "Detail", detail)
}
