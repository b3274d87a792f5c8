package web_test

import (
	"encoding/json"
	"herald/directory"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// staffHeader is the header of a staff CSV file, as the export writes it.
// staffHeader names the columns the test files fill; a file may leave columns out.
const staffHeader = "external_id,name,org_type,branch,department,tianyuan_id,zhaohu_id,wecom_userid,email,active\n"

// templateHeader is every column, as the template and the export write them.
const templateHeader = "external_id,name,org_type,branch,department,tianyuan_id,zhaohu_id,wecom_userid,feishu_user_id,dingtalk_userid,email,mobile,active\n"

// resultCell returns the result cell of the preview row of a CSV line, or fails.
func resultCell(t *testing.T, body string, line int) string {
	t.Helper()
	rows := strings.Split(body, "<tr")
	for _, r := range rows {
		if strings.Contains(r, "<td>"+strconv.Itoa(line)+"</td>") {
			if i := strings.Index(r, `class="import-result"`); i >= 0 {
				return r[i:]
			}
		}
	}
	t.Fatalf("no preview row for line %d:\n%s", line, body)
	return ""
}

func TestStaffImportReportsEverythingAtOnce(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	op := c.as(operatorUser)

	t.Run("every problem of a row, each on its own line of the result cell", func(t *testing.T) {
		csv := staffHeader +
			"E3001,,nowhere,,,,,,not-an-email,maybe\n" +
			"E3002,Qian Hao,branch,Pudong Branch,,,,,,true\n"
		resp, body := op.post("/recipients/import", url.Values{"mode": {"preview"}, "csv": {csv}})
		wantStatus(t, "preview", resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "preview", body, "1 of 2 rows has errors")
		cell := resultCell(t, body, 2)
		wantContains(t, "result of line 2", cell, `<ul class="field-error compact">`,
			"<li>line 2: name must be 1–100 characters</li>",
			"<li>line 2: org_type must be head_office or branch (or 总行, 分行)</li>",
			"<li>line 2: email is not an email address</li>",
			"<li>line 2: active must be true or false (or 是, 否)</li>")
		wantContains(t, "result of line 3", resultCell(t, body, 3), "create")
	})

	t.Run("Chinese column names and values", func(t *testing.T) {
		csv := "\ufeff工号,姓名,机构类型,分行,部门,天元,招呼,企业微信,邮箱,在职\n" +
			"E3101,钱浩,总行,,营业部,ty_E3101,,,qian@example.com,是\n" +
			"E3102,孙丽,分行,浦东分行,柜台,,zh_E3102,,,否\n"
		resp, body := op.upload("/recipients/import", url.Values{"mode": {"preview"}}, csv)
		wantStatus(t, "preview", resp, body, http.StatusOK)
		wantContains(t, "preview", body, "All 2 rows are valid: 2 to create")
		resp, body = op.post("/recipients/import", url.Values{"mode": {"apply"}, "csv": {strings.TrimPrefix(csv, "\ufeff")}})
		wantRedirect(t, "apply", resp, body, "/recipients")
		if r := c.recipient("E3101"); r.Name != "钱浩" || r.OrgType != directory.HeadOffice || !r.Active ||
			r.Department != "营业部" || r.TianyuanID != "ty_E3101" || r.Email != "qian@example.com" {
			t.Errorf("E3101 imported as %+v", r)
		}
		if r := c.recipient("E3102"); r.OrgType != directory.Branch || r.Active || r.Branch != "浦东分行" || r.ZhaohuID != "zh_E3102" {
			t.Errorf("E3102 imported as %+v", r)
		}
	})

	t.Run("a template CSV to fill in", func(t *testing.T) {
		_, page := op.get("/recipients/import")
		wantContains(t, "import page", page, `href="/recipients/template.csv"`, "Download a template CSV", "工号 (external_id)")

		resp, body := op.get("/recipients/template.csv")
		wantStatus(t, "template", resp, body, http.StatusOK)
		if ct := resp.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
		if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, "attachment") || !strings.Contains(cd, ".csv") {
			t.Errorf("Content-Disposition %q", cd)
		}
		text, ok := strings.CutPrefix(body, "\ufeff")
		if !ok {
			t.Fatalf("the template does not start with a byte order mark: %q", body)
		}
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		const mark = "#example (ignored on import): "
		if len(lines) != 2 || lines[0]+"\n" != templateHeader || !strings.HasPrefix(lines[1], mark+"E3001,") {
			t.Fatalf("template %q, want the header and one example row marked as such", text)
		}
		// The import passes over the marked example; without its mark it is a valid row.
		resp, body = op.upload("/recipients/import", url.Values{"mode": {"preview"}}, body)
		wantStatus(t, "preview of the template as it is", resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "preview of the template as it is", body, "has a header but no rows")
		resp, body = op.upload("/recipients/import", url.Values{"mode": {"preview"}}, strings.Replace(text, mark, "", 1))
		wantStatus(t, "preview of the example", resp, body, http.StatusOK)
		wantContains(t, "preview of the example", body, "The 1 row is valid")

		// A Chinese reader's template names the columns as the import takes them in
		// Chinese, and marks its example in Chinese.
		resp, body = op.do("GET", "/recipients/template.csv", "", nil, map[string]string{"Accept-Language": "zh-CN"})
		wantStatus(t, "Chinese template", resp, body, http.StatusOK)
		zh := strings.Split(strings.TrimPrefix(body, "\ufeff"), "\n")
		if len(zh) < 2 || !strings.HasPrefix(zh[0], "工号,姓名,机构类型,分行,部门,天元,招呼,企业微信,飞书,钉钉,邮箱,手机,在职") ||
			!strings.HasPrefix(zh[1], "#示例行（导入时忽略）： E3001,钱浩,") {
			t.Errorf("Chinese template %q", body)
		}
		resp, body = op.upload("/recipients/import", url.Values{"mode": {"preview"}},
			strings.Replace(strings.TrimPrefix(strings.Join(zh, "\n"), "\ufeff"), "#示例行（导入时忽略）： ", "", 1))
		wantStatus(t, "preview of the Chinese example", resp, body, http.StatusOK)
		wantContains(t, "preview of the Chinese example", body, "The 1 row is valid")

		resp, body = c.as(viewerUser).get("/recipients/template.csv")
		wantStatus(t, "viewer", resp, body, http.StatusForbidden)
	})

	t.Run("over-long values are refused with their length and the limit, never cut", func(t *testing.T) {
		long := strings.Repeat("张", 160)
		csv := staffHeader + "E3201," + long + ",branch,,,,,,,true\n" +
			strings.Repeat("E", 70) + ",Short,branch," + strings.Repeat("b", 101) + ",,,,,,\n"
		resp, body := op.post("/recipients/import", url.Values{"mode": {"preview"}, "csv": {csv}})
		wantStatus(t, "preview", resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "preview", body, "line 2: name has 160 characters; at most 100",
			"line 3: external_id has 70 characters; at most 64", "line 3: branch has 101 characters; at most 100")

		_, page := op.get("/recipients/new")
		wantContains(t, "person form", page, `id="name" name="name" value="" required maxlength="100"`, `maxlength="64"`, `maxlength="254"`)
		resp, body = op.post("/recipients", url.Values{"external_id": {"E3202"}, "name": {long}, "org_type": {"branch"}})
		wantStatus(t, "create", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "name", "has 160 characters; at most 100")
		if _, err := c.store.Directory().RecipientByExternalID(ctx, "E3202"); err == nil {
			t.Error("a person with an over-long name was saved")
		}

		_, key, err := c.store.Access().CreateAPIKey(ctx, "hr-sync", "admin", adminUser)
		if err != nil {
			t.Fatal(err)
		}
		payload, _ := json.Marshal([]map[string]any{{"external_id": "E3203", "name": long, "org_type": "branch"}})
		resp, answer := c.as("").do("PUT", "/api/v1/recipients", "application/json", strings.NewReader(string(payload)),
			map[string]string{"Authorization": "Bearer " + key})
		var e struct {
			Error struct{ Code, Message, Field string }
		}
		_ = json.Unmarshal([]byte(answer), &e)
		if resp.StatusCode != http.StatusUnprocessableEntity || e.Error.Field != "[0].name" ||
			!strings.Contains(e.Error.Message, "has 160 characters; at most 100") {
			t.Errorf("API: %d %s, want 422 on [0].name with the length and the limit", resp.StatusCode, answer)
		}
		if _, err := c.store.Directory().RecipientByExternalID(ctx, "E3203"); err == nil {
			t.Error("the API saved a person with an over-long name")
		}
	})
}
