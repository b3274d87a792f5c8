package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
)

// TestStaffImportStopsAtTheRowLimit: a 5 MB file of millions of one-letter rows is
// refused naming the limit without holding every row (it once took the process from
// 80 MB to 1.69 GB before answering), and a preview shows one page of rows with the
// count of the rest. Not parallel: it measures the memory the request allocates.
func TestStaffImportStopsAtTheRowLimit(t *testing.T) {
	c := newConsole(t)
	op := c.as(operatorUser)

	var b strings.Builder
	b.WriteString("external_id,name,org_type\n")
	for b.Len() < 5<<20-4 {
		b.WriteString("a\n")
	}
	huge := b.String()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, body := op.upload("/recipients/import", url.Values{"mode": {"preview"}}, huge)
	runtime.ReadMemStats(&after)
	wantStatus(t, "huge file", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "csv", "has more than 10000 rows; import at most 10000 at a time")
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("the request allocated %d MB", allocated>>20)
	if allocated > 200<<20 {
		t.Errorf("refusing a %d MB file allocated %d MB: the rows past the limit were read", len(huge)>>20, allocated>>20)
	}

	// 250 valid rows: counted whole, one page shown.
	b.Reset()
	b.WriteString("external_id,name,org_type\n")
	for i := range 250 {
		fmt.Fprintf(&b, "PG%03d,Page %d,branch\n", i, i)
	}
	resp, body = op.post("/recipients/import", url.Values{"mode": {"preview"}, "csv": {b.String()}})
	wantStatus(t, "250 rows", resp, body, http.StatusOK)
	wantContains(t, "250 rows", body, "All 250 rows are valid: 250 to create", "Apply 250 rows", "<td>PG099</td>",
		`id="import-more">Showing 100 of 250 rows`)
	wantNotContains(t, "250 rows", body, "<td>PG100</td>")

	// One bad row among them, far down: shown on the page.
	bad := strings.Replace(b.String(), "PG240,Page 240,branch", "PG240,,branch", 1)
	resp, body = op.post("/recipients/import", url.Values{"mode": {"preview"}, "csv": {bad}})
	wantStatus(t, "a bad row", resp, body, http.StatusUnprocessableEntity)
	wantContains(t, "a bad row", body, "1 of 250 rows has errors", "<td>PG240</td>", "line 242: name must be")
}

// TestImportAndTemplatePreviewsInChinese: the staff import's preview names its columns
// and their problems in Chinese (the file's own headers when it used Chinese ones), and
// the template editor's preview says what is wrong with a line in a Chinese sentence,
// the parser's words beside it.
func TestImportAndTemplatePreviewsInChinese(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	zh := c.login(operatorUser)
	zh.post("/language", url.Values{"language": {"zh-CN"}, "next": {"/"}})

	english := "external_id,name,org_type\nE3001,,branch\n"
	resp, body := zh.post("/recipients/import", url.Values{"mode": {"preview"}, "csv": {english}})
	wantStatus(t, "preview", resp, body, http.StatusUnprocessableEntity)
	wantContains(t, "preview of an English file", body, "<th>工号</th><th>姓名</th><th>机构类型</th>", "第 2 行：姓名：须为 1–100 个字符")
	wantNotContains(t, "preview of an English file", body, "<th>external_id</th>", "name 须为")

	chinese := "工号,名字,机构类型\nE3001,钱浩,总行\n"
	resp, body = zh.post("/recipients/import", url.Values{"mode": {"preview"}, "csv": {chinese}})
	wantStatus(t, "unknown Chinese column", resp, body, http.StatusUnprocessableEntity)
	chinese = "工号,姓名,ORG_TYPE\nE3001,钱浩,总行\n"
	resp, body = zh.post("/recipients/import", url.Values{"mode": {"preview"}, "csv": {chinese}})
	wantStatus(t, "preview of a Chinese file", resp, body, http.StatusOK)
	// The file's own Chinese headers; the catalog's for the column it named in English.
	wantContains(t, "preview of a Chinese file", body, "<th>工号</th><th>姓名</th><th>机构类型</th><th>分行</th>")

	form := url.Values{"name": {"late"}, "msg_type": {"text"}, "variables": {"task"}, "body": {"Late: {{.task}}\n{{if .task}}x"},
		"samples": {"task = x"}}
	_, body = zh.postHX("/templates/preview", form)
	wantContains(t, "template preview", body, "正文：第 2 行：模板提前结束了：缺少收尾的 }} 或 {{end}}（解析器原文：unexpected EOF）")
}
