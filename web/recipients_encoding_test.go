package web_test

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/text/encoding/simplifiedchinese"
)

// TestStaffCSVEncodings: Excel on Chinese Windows saves "CSV" as GBK and "CSV UTF-8" with
// a byte order mark; the import reads both (and plain UTF-8), and the export writes the
// byte order mark so that Excel shows Chinese names instead of mojibake.
func TestStaffCSVEncodings(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	op := c.as(operatorUser)
	const header = "external_id,name,org_type,branch,department,tianyuan_id,zhaohu_id,wecom_userid,email,active\n"
	gb18030 := func(s string) string {
		out, err := simplifiedchinese.GB18030.NewEncoder().String(s)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	gbkFile := gb18030(header + "E3101,张伟,head_office,总行营业部,运营管理部,,,,,true\n")

	t.Run("GB18030 file is detected, previewed and stored", func(t *testing.T) {
		resp, body := op.upload("/recipients/import", url.Values{"mode": {"preview"}}, gbkFile)
		wantStatus(t, "preview", resp, body, http.StatusOK)
		// The preview names the encoding it used (GB18030 in either language).
		wantContains(t, "preview", body, "张伟", "总行营业部", `id="import-read-as"`, "GB18030")
		wantNotContains(t, "preview", body, "\ufffd")

		resp, body = op.upload("/recipients/import", url.Values{"mode": {"apply"}}, gbkFile)
		wantRedirect(t, "apply", resp, body, "/recipients")
		if r := c.recipient("E3101"); r.Name != "张伟" || r.Branch != "总行营业部" || r.Department != "运营管理部" {
			t.Errorf("stored %+v", r)
		}
	})

	t.Run("GB18030 chosen explicitly, and UTF-8 chosen for a GBK file", func(t *testing.T) {
		file := gb18030(header + "E3102,李娜,head_office,总行营业部,,,,,,true\n")
		resp, body := op.upload("/recipients/import", url.Values{"mode": {"apply"}, "encoding": {"gb18030"}}, file)
		wantRedirect(t, "apply", resp, body, "/recipients")
		if r := c.recipient("E3102"); r.Name != "李娜" {
			t.Errorf("stored name %q", r.Name)
		}

		resp, body = op.upload("/recipients/import", url.Values{"mode": {"preview"}, "encoding": {"utf-8"}}, file)
		wantStatus(t, "GBK file read as UTF-8", resp, body, http.StatusUnprocessableEntity)
		if fieldError(body, "file") == "" {
			t.Errorf("no error beside the file:\n%s", body)
		}
		wantContains(t, "the choice is kept", body, `<option value="utf-8" selected>`)

		// A workbook (a zip, with NUL bytes) is not read as GB18030 mojibake.
		resp, body = op.upload("/recipients/import", url.Values{"mode": {"preview"}}, "PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00\xb2\xc8")
		wantStatus(t, "workbook", resp, body, http.StatusUnprocessableEntity)
		if fieldError(body, "file") == "" {
			t.Errorf("no error beside the file:\n%s", body)
		}
	})

	t.Run("UTF-8 with a byte order mark", func(t *testing.T) {
		file := "\ufeff" + header + "E3103,王芳,branch,浦东分行,营业部,,,,,true\n"
		// Whatever the choice: the mark says UTF-8.
		resp, body := op.upload("/recipients/import", url.Values{"mode": {"apply"}, "encoding": {"gb18030"}}, file)
		wantRedirect(t, "apply", resp, body, "/recipients")
		if r := c.recipient("E3103"); r.Name != "王芳" || r.Branch != "浦东分行" {
			t.Errorf("stored %+v", r)
		}
	})

	t.Run("export is UTF-8 with a byte order mark and imports back unchanged", func(t *testing.T) {
		resp, body := op.get("/recipients/export.csv?q=" + url.QueryEscape("总行营业部"))
		wantStatus(t, "export", resp, body, http.StatusOK)
		if !strings.HasPrefix(body, "\ufeff") {
			t.Fatalf("export does not begin with the byte order mark: %q", body[:min(len(body), 20)])
		}
		rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(body, "\ufeff"))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 3 || rows[0][0] != "external_id" || rows[1][1] != "张伟" || rows[2][1] != "李娜" {
			t.Fatalf("export:\n%s", body)
		}

		resp, body = op.upload("/recipients/import", url.Values{"mode": {"preview"}}, body)
		wantStatus(t, "export imported back", resp, body, http.StatusOK)
		if n := strings.Count(body, `<span class="badge sent">`); n != 2 {
			t.Errorf("%d rows previewed as valid, want 2:\n%s", n, body)
		}
	})
}
