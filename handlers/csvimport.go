package handlers

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"golang.org/x/text/encoding/simplifiedchinese"

	"herald/kernel"
	"herald/views"
)

// MaxImportBytes bounds an uploaded or pasted CSV file.
const MaxImportBytes = 5 << 20

// utf8BOM starts a file saved as "CSV UTF-8" by Excel.
const utf8BOM = "\ufeff"

// importText reads the CSV of an import form: the uploaded file if there is one, the
// pasted text otherwise. It returns the text as UTF-8 and how it was read
// (views.ReadUTF8 …). Problems are FieldErrors naming "file" or "csv". The forms are
// multipart, so the text is not inflated by URL encoding on its way back for "apply";
// the web middleware bounds the whole body and has parsed it already.
func importText(c *gin.Context) (text, readAs string, err error) {
	fh, err := c.FormFile("file")
	if err == nil {
		if fh.Size > MaxImportBytes {
			return "", "", kernel.Invalid("file", "import.too_large", "MB", MaxImportBytes>>20)
		}
		f, err := fh.Open()
		if err != nil {
			return "", "", kernel.Invalid("file", "import.unreadable")
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, MaxImportBytes+1))
		if err != nil {
			return "", "", kernel.Invalid("file", "import.unreadable")
		}
		if len(b) > MaxImportBytes {
			return "", "", kernel.Invalid("file", "import.too_large", "MB", MaxImportBytes>>20)
		}
		if text, readAs, err = decodeCSV(b, c.PostForm("encoding")); err != nil {
			return "", "", err
		}
		// GB18030 takes two bytes for most Chinese characters, UTF-8 three: the text
		// must still fit when the preview posts it back for "apply".
		if len(text) > MaxImportBytes {
			return "", "", kernel.Invalid("file", "import.too_large_utf8", "MB", MaxImportBytes>>20)
		}
	} else {
		// No file: rows pasted in, or the apply step posting the previewed text back.
		// A browser sends form text in the page's encoding, UTF-8.
		text, readAs = c.PostForm("csv"), views.ReadPasted
		if len(text) > MaxImportBytes {
			return "", "", kernel.Invalid("csv", "import.too_large", "MB", MaxImportBytes>>20)
		}
		if !utf8.ValidString(text) {
			return "", "", kernel.Invalid("csv", "import.pasted_not_utf8")
		}
		text = strings.TrimPrefix(text, utf8BOM)
	}
	if strings.TrimSpace(text) == "" {
		return "", "", kernel.Invalid("csv", "import.empty")
	}
	return text, readAs, nil
}

// decodeCSV turns the bytes of an uploaded CSV file into text. choice is the form's
// encoding: views.EncodingUTF8, views.EncodingGB18030, or automatic (anything else).
//
// A UTF-8 byte order mark decides, whatever the choice: it is what Excel writes for "CSV
// UTF-8" and cannot start a GB18030 file. Otherwise, automatically, bytes that are valid
// UTF-8 are UTF-8 (ASCII files included), and anything else is read as GB18030, which
// contains GBK and GB2312: what Excel on Chinese Windows writes for plain "CSV". Text in
// GBK is practically never valid UTF-8 as well (its lead bytes 0x81–0xFE are followed by
// bytes UTF-8 does not allow there), and where a file is ambiguous the person can choose.
func decodeCSV(b []byte, choice string) (text, readAs string, err error) {
	// No CSV holds a NUL byte; a workbook (.xlsx is a zip) or UTF-16 "Unicode text"
	// does, and would otherwise come out as a screen of GB18030 mojibake.
	if bytes.IndexByte(b, 0) >= 0 {
		return "", "", kernel.Invalid("file", "import.binary")
	}
	if rest, ok := bytes.CutPrefix(b, []byte(utf8BOM)); ok {
		if !utf8.Valid(rest) {
			return "", "", kernel.Invalid("file", "import.bad_utf8")
		}
		return string(rest), views.ReadUTF8BOM, nil
	}
	switch {
	case choice == views.EncodingUTF8:
		if !utf8.Valid(b) {
			return "", "", kernel.Invalid("file", "import.not_utf8")
		}
		return string(b), views.ReadUTF8, nil
	case choice == views.EncodingGB18030:
		text, err := decodeGB18030(b)
		return text, views.ReadGB18030, err
	case utf8.Valid(b):
		return string(b), views.ReadUTF8, nil
	default:
		text, err := decodeGB18030(b)
		return text, views.ReadGB18030Detected, err
	}
}

// decodeGB18030 reads GB18030 (or GBK) bytes. The decoder replaces bytes that are not
// GB18030 with U+FFFD rather than failing; such a file is refused instead of imported
// with question marks in people's names.
func decodeGB18030(b []byte) (string, error) {
	out, err := simplifiedchinese.GB18030.NewDecoder().Bytes(b)
	if err != nil || bytes.ContainsRune(out, utf8.RuneError) {
		return "", kernel.Invalid("file", "import.not_gb18030")
	}
	// GB18030 has a byte order mark of its own (84 31 95 33), decoded as U+FEFF.
	return strings.TrimPrefix(string(out), utf8BOM), nil
}

// csvRow is one data row of an import, its cells in the order of the known columns.
type csvRow struct {
	line  int
	cells []string
	// err is set when the row itself is malformed (wrong number of cells).
	err *kernel.FieldError
}

// get returns the cell of a column.
func (r csvRow) get(columns []string, col string) string {
	if i := slices.Index(columns, col); i >= 0 && i < len(r.cells) {
		return r.cells[i]
	}
	return ""
}

// csvFile is an import's rows as readCSV read them.
type csvFile struct {
	rows []csvRow
	// headers are the file's own header of each known column where it used another
	// name for it (an alias: 工号 for external_id), else "".
	headers []string
}

// readCSV parses an import: a header line naming columns (in any order; each must be one
// of columns, or a name aliases maps to one, and every required one must be there), then
// data rows. Cells come back arranged in the order of columns; a column the file lacks
// reads as empty. With maxRows above 0 it stops at the first row past maxRows, so a file
// of millions of tiny rows costs no more than one of maxRows + 1, and refuses it.
func readCSV(text string, columns []string, aliases map[string]string, required []string, maxRows int) (*csvFile, error) {
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord = -1
	// A line starting with # is a note, not a row: the staff template's example is one.
	r.Comment = '#'
	r.TrimLeadingSpace = true
	r.ReuseRecord = true // each row's cells are copied out
	header, err := r.Read()
	if err != nil {
		return nil, kernel.Invalid("csv", "import.no_header", "Columns", strings.Join(columns, ","))
	}
	f := &csvFile{headers: make([]string, len(columns))}
	pos := make([]int, len(header)) // file column → index in columns
	for i, h := range header {
		given := strings.TrimSpace(h)
		h = strings.ToLower(given)
		if col, ok := aliases[h]; ok {
			h = col
		} else {
			given = ""
		}
		j := slices.Index(columns, h)
		if j < 0 {
			return nil, kernel.Invalid("csv", "import.unknown_column", "Column", strconv.Quote(h), "Columns", strings.Join(columns, ","))
		}
		if slices.Contains(pos[:i], j) {
			return nil, kernel.Invalid("csv", "import.column_twice", "Column", h)
		}
		pos[i], f.headers[j] = j, given
	}
	for _, col := range required {
		if !slices.Contains(pos, slices.Index(columns, col)) {
			return nil, kernel.Invalid("csv", "import.column_required", "Column", col)
		}
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return nil, err
			}
			key := "import.bad_csv"
			switch {
			case errors.Is(pe.Err, csv.ErrQuote):
				key = "import.bad_quote"
			case errors.Is(pe.Err, csv.ErrBareQuote):
				key = "import.bare_quote"
			}
			fe := kernel.Invalid("csv", key, "Line", pe.StartLine)
			fe.Err = err
			return nil, fe
		}
		if maxRows > 0 && len(f.rows) == maxRows {
			return nil, kernel.Invalid("csv", "import.too_many_rows", "Max", maxRows)
		}
		line, _ := r.FieldPos(0)
		row := csvRow{line: line, cells: make([]string, len(columns))}
		if len(rec) != len(header) {
			row.err = kernel.Invalid("csv", "import.cells", "Cells", len(rec), "Columns", len(header))
		}
		for i, v := range rec {
			if i < len(pos) {
				row.cells[pos[i]] = fromSpreadsheet(strings.TrimSpace(v))
			}
		}
		f.rows = append(f.rows, row)
	}
	if len(f.rows) == 0 {
		return nil, kernel.Invalid("csv", "import.no_rows")
	}
	return f, nil
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

// rowErrors are the messages of a row's problems in the preview, each with the line.
func rowErrors(c *gin.Context, line int, messages []string) []string {
	out := make([]string, len(messages))
	for i, m := range messages {
		out[i] = tr(c, "import.line", "Line", line, "Error", m)
	}
	return out
}
