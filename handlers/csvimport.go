package handlers

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"herald/models"
)

// MaxImportBytes bounds an uploaded or pasted CSV file.
const MaxImportBytes = 5 << 20

// importText reads the CSV of an import form: the uploaded file if there is one, the
// pasted text otherwise. Problems are FieldErrors naming "file" or "csv". The forms are
// multipart, so the text is not inflated by URL encoding on its way back for "apply";
// the web middleware bounds the whole body and has parsed it already.
func importText(c *gin.Context) (string, error) {
	fh, err := c.FormFile("file")
	var text string
	if err == nil {
		if fh.Size > MaxImportBytes {
			return "", &models.FieldError{Field: "file", Message: fmt.Sprintf("is larger than %d MB", MaxImportBytes>>20)}
		}
		f, err := fh.Open()
		if err != nil {
			return "", &models.FieldError{Field: "file", Message: "could not be read"}
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, MaxImportBytes+1))
		if err != nil {
			return "", &models.FieldError{Field: "file", Message: "could not be read"}
		}
		text = string(b)
	} else {
		// No file: rows pasted in, or the apply step posting the previewed text back.
		text = c.PostForm("csv")
	}
	if len(text) > MaxImportBytes {
		return "", &models.FieldError{Field: "csv", Message: fmt.Sprintf("is larger than %d MB", MaxImportBytes>>20)}
	}
	if !utf8.ValidString(text) {
		return "", &models.FieldError{Field: "csv", Message: "is not UTF-8 text; save the file as CSV UTF-8"}
	}
	text = strings.TrimPrefix(text, "\ufeff")
	if strings.TrimSpace(text) == "" {
		return "", &models.FieldError{Field: "csv", Message: "choose a file or paste rows, starting with the header line"}
	}
	return text, nil
}

// csvRow is one data row of an import, its cells in the order of the known columns.
type csvRow struct {
	line  int
	cells []string
	// err is set when the row itself is malformed (wrong number of cells).
	err string
}

// get returns the cell of a column.
func (r csvRow) get(columns []string, col string) string {
	if i := slices.Index(columns, col); i >= 0 && i < len(r.cells) {
		return r.cells[i]
	}
	return ""
}

// readCSV parses an import: a header line naming columns (in any order; each must be one
// of columns, and every required one must be there), then data rows. Cells come back
// arranged in the order of columns; a column the file lacks reads as empty.
func readCSV(text string, columns, required []string) ([]csvRow, error) {
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	header, err := r.Read()
	if err != nil {
		return nil, &models.FieldError{Field: "csv", Message: "the first line must name the columns: " + strings.Join(columns, ",")}
	}
	pos := make([]int, len(header)) // file column → index in columns
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		j := slices.Index(columns, h)
		if j < 0 {
			return nil, &models.FieldError{Field: "csv", Message: fmt.Sprintf("line 1: unknown column %q; the columns are %s", h, strings.Join(columns, ","))}
		}
		if slices.Contains(pos[:i], j) {
			return nil, &models.FieldError{Field: "csv", Message: fmt.Sprintf("line 1: column %s appears twice", h)}
		}
		pos[i] = j
	}
	for _, col := range required {
		if !slices.ContainsFunc(header, func(h string) bool { return strings.ToLower(strings.TrimSpace(h)) == col }) {
			return nil, &models.FieldError{Field: "csv", Message: fmt.Sprintf("line 1: the column %s is required", col)}
		}
	}
	var rows []csvRow
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, &models.FieldError{Field: "csv", Message: fmt.Sprintf("line %d: %v", pe.StartLine, pe.Err)}
			}
			return nil, &models.FieldError{Field: "csv", Message: err.Error()}
		}
		line, _ := r.FieldPos(0)
		row := csvRow{line: line, cells: make([]string, len(columns))}
		if len(rec) != len(header) {
			row.err = fmt.Sprintf("has %d cells; the header names %d", len(rec), len(header))
		}
		for i, v := range rec {
			if i < len(pos) {
				row.cells[pos[i]] = fromSpreadsheet(strings.TrimSpace(v))
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, &models.FieldError{Field: "csv", Message: "has a header but no rows"}
	}
	return rows, nil
}

// formulaStart are the characters that make a spreadsheet treat a cell as a formula.
const formulaStart = "=+-@\t\r"

// toSpreadsheet makes a cell safe to open in a spreadsheet: one that would start a
// formula gets a leading apostrophe, which spreadsheets hide and imports remove.
func toSpreadsheet(s string) string {
	if s != "" && strings.ContainsRune(formulaStart, rune(s[0])) {
		return "'" + s
	}
	return s
}

// fromSpreadsheet undoes toSpreadsheet.
func fromSpreadsheet(s string) string {
	if len(s) > 1 && s[0] == '\'' && strings.ContainsRune(formulaStart, rune(s[1])) {
		return s[1:]
	}
	return s
}
