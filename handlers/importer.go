package handlers

import (
	"cmp"
	"context"
	"net/http"
	"slices"

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
	// label names a column in the preview's header and its rows' problems, in the
	// language of the request; nil: the column's own name.
	label   func(col string) string
	maxRows int // 0: no limit beyond the size of the text
	// item builds a row's item; problems are the row's translated problems.
	item func(r csvRow) (item T, problems []string)
	// key identifies an item: two rows of one key are refused (duplicate says so).
	key       func(T) string
	duplicate func(key string, line int) string
	// effects compares valid items with what is stored, one effect each
	// (kernel.EffectCreate, EffectUpdate or EffectUnchanged).
	effects func(ctx context.Context, items []T) ([]string, error)
	// summary is the preview's sentence from the counts of effects.
	summary func(counts map[string]int) string
	// apply writes every item in one transaction, audits it, and answers (a redirect
	// with a notice). A FieldError is shown on the preview.
	apply func(items []T) error
}

// previewRows is how many rows a preview shows: a file of thousands is counted whole
// but shows one page of rows, in the file's order, those with errors before the others.
const previewRows = 100

// previewPage collects the rows a preview shows: the first previewRows, where a row
// with errors takes the place of the last valid one once the page is full.
type previewPage struct {
	list  []views.ImportRow
	items []int // the item of each row of list; -1 for a row with errors
}

// takes reports whether the page has room for a row, with errors or not.
func (p *previewPage) takes(hasErrors bool) bool {
	if len(p.list) < previewRows {
		return true
	}
	if !hasErrors {
		return false
	}
	// Drop the last valid row, if any, to make room.
	for i := len(p.items) - 1; i >= 0; i-- {
		if p.items[i] >= 0 {
			p.list = slices.Delete(p.list, i, i+1)
			p.items = slices.Delete(p.items, i, i+1)
			return true
		}
	}
	return false
}

// add appends a row, of item (-1 for a row with errors).
func (p *previewPage) add(row views.ImportRow, item int) {
	p.list = append(p.list, row)
	p.items = append(p.items, item)
}

// rows are the page's rows, each valid one with its effect.
func (p *previewPage) rows(effects []string) []views.ImportRow {
	for i, item := range p.items {
		if item >= 0 && item < len(effects) {
			p.list[i].Action = effects[item]
		}
	}
	return p.list
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
	file, err := readCSV(text, im.columns, im.aliases, im.required, im.maxRows)
	if errs, ok := fieldErrors(c, err); ok {
		fail(errs)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	if im.label != nil {
		v.Headers = make([]string, len(im.columns))
		for i, col := range im.columns {
			v.Headers[i] = cmp.Or(file.headers[i], im.label(col))
		}
	}
	items := make([]T, 0, len(file.rows))
	var shown previewPage
	seen := map[string]int{}
	for _, r := range file.rows {
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
			v.Errors++
			if shown.takes(true) {
				row.Errors = rowErrors(c, r.line, problems)
				shown.add(row, -1)
			}
		} else {
			seen[im.key(item)] = r.line
			if shown.takes(false) {
				shown.add(row, len(items))
			}
			items = append(items, item)
		}
	}
	v.Total = len(file.rows)
	effects, err := im.effects(c.Request.Context(), items)
	if err != nil {
		h.fail(c, err)
		return
	}
	counts := map[string]int{}
	for _, e := range effects {
		counts[e]++
	}
	v.Rows = shown.rows(effects)
	v.Previewed = true
	v.Summary = im.summary(counts)
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
		h.fail(c, err)
	}
}
