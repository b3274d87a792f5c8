package handlers

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"herald/views"
)

// csvImport is one CSV import of items of type T (people, holiday entries). runImport
// does what every import does: read the uploaded or pasted text, read its rows, build
// each row's item with its problems, refuse an item given twice, compare the valid
// items with what is stored (models says create, update or unchanged of each), show
// the preview, and when asked apply every row in one transaction or none.
type csvImport[T any] struct {
	form     views.Import
	page     views.Page
	columns  []string
	aliases  map[string]string
	required []string
	maxRows  int // 0: no limit beyond the size of the text; reading stops one row past it
	// item builds a row's item; problems are the row's translated problems.
	item func(r csvRow) (item T, problems []string)
	// key identifies an item: two rows of one key are refused (duplicate says so).
	key       func(T) string
	duplicate func(key string, line int) string
	// effects compares valid items with what is stored, one effect each
	// (models.EffectCreate, EffectUpdate or EffectUnchanged).
	effects func(ctx context.Context, items []T) ([]string, error)
	// summary is the preview's sentence from the counts of effects.
	summary func(counts map[string]int) string
	// apply writes every item in one transaction, audits it, and answers (a redirect
	// with a notice). A FieldError is shown on the preview.
	apply func(items []T) error
}

// runImport runs an import from its form post (mode=preview or mode=apply).
func runImport[T any](h *Handlers, c *gin.Context, im csvImport[T]) {
	v := im.form
	fail := func(errs map[string]string) {
		render(c, http.StatusUnprocessableEntity, views.ImportPage(im.page, v, errs))
	}
	text, readAs, err := importText(c)
	if errs, ok := fieldErrors(c, err); ok {
		fail(errs)
		return
	}
	v.CSV, v.ReadAs = text, readAs
	rows, err := readCSV(text, im.columns, im.aliases, im.required, im.maxRows)
	if errs, ok := fieldErrors(c, err); ok {
		fail(errs)
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	items := make([]T, 0, len(rows))
	at := make([]int, 0, len(rows)) // the preview row of each valid item
	seen := map[string]int{}
	for _, r := range rows {
		row := views.ImportRow{Line: r.line, Cells: r.cells}
		var problems []string
		var item T
		if r.err != nil {
			problems = []string{r.err.In(c.Request.Context())}
		} else {
			item, problems = im.item(r)
			if line, dup := seen[im.key(item)]; dup && len(problems) == 0 {
				problems = append(problems, im.duplicate(im.key(item), line))
			}
		}
		if len(problems) > 0 {
			row.Errors = rowErrors(c, r.line, problems)
			v.Errors++
		} else {
			seen[im.key(item)] = r.line
			items = append(items, item)
			at = append(at, len(v.Rows))
		}
		v.Rows = append(v.Rows, row)
	}
	effects, err := im.effects(c.Request.Context(), items)
	if err != nil {
		h.serverError(c, err)
		return
	}
	counts := map[string]int{}
	for i, e := range effects {
		v.Rows[at[i]].Action = e
		counts[e]++
	}
	v.Previewed = true
	v.Summary = im.summary(counts)
	v.Total = len(v.Rows)
	v.Rows = previewPage(v.Rows)
	if v.Errors > 0 {
		fail(nil)
		return
	}
	if c.PostForm("mode") != "apply" {
		render(c, http.StatusOK, views.ImportPage(im.page, v, nil))
		return
	}
	err = im.apply(items)
	if _, ok := fieldErrors(c, err); ok {
		fail(map[string]string{"": fieldMessage(c, err)})
		return
	}
	if err != nil {
		h.serverError(c, err)
	}
}

// importPreviewRows is how many rows a preview shows: a page, whatever the size of the
// import; the rest are counted (views.Import.Total).
const importPreviewRows = 100

// previewPage picks the rows a preview shows: the rows with errors first, which are
// what the person has to fix, then the others in file order, at most importPreviewRows
// in all, in file order.
func previewPage(rows []views.ImportRow) []views.ImportRow {
	if len(rows) <= importPreviewRows {
		return rows
	}
	show := make([]bool, len(rows))
	n := 0
	for _, errorsOnly := range []bool{true, false} {
		for i, r := range rows {
			if n < importPreviewRows && !show[i] && (len(r.Errors) > 0 || !errorsOnly) {
				show[i] = true
				n++
			}
		}
	}
	out := make([]views.ImportRow, 0, importPreviewRows)
	for i, r := range rows {
		if show[i] {
			out = append(out, r)
		}
	}
	return out
}
