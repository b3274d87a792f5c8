package web_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"herald/directory"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestRecipientsPage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	op := c.as(operatorUser)

	t.Run("list, search and filters", func(t *testing.T) {
		resp, body := c.as(viewerUser).get("/recipients")
		wantStatus(t, "GET /recipients", resp, body, http.StatusOK)
		wantContains(t, "staff list", body, "E1001", "Li Wei", "E2003", "Sun Li", "Export CSV")
		wantNotContains(t, "viewer's staff list", body, "/recipients/new")

		_, body = op.get("/recipients?q=Pudong")
		wantContains(t, "search Pudong", body, "Liu Yang", "Sun Li")
		wantNotContains(t, "search Pudong", body, "Zhao Lei", "Li Wei")

		_, body = op.get("/recipients?org_type=branch&branch=Xuhui+Branch")
		wantContains(t, "branch filter", body, "Zhao Lei")
		wantNotContains(t, "branch filter", body, "Liu Yang", "Li Wei")
	})

	t.Run("search by pinyin as the compose people picker does", func(t *testing.T) {
		list := []directory.Recipient{
			{ExternalID: "W001", Name: "王小明", OrgType: directory.Branch, Active: true},
			{ExternalID: "W002", Name: "钱红", OrgType: directory.HeadOffice, Active: true},
			{ExternalID: "W003", Name: "王芳", OrgType: directory.Branch, Active: true},
		}
		if _, err := c.store.Directory().UpsertRecipients(ctx, list); err != nil {
			t.Fatal(err)
		}
		for q, want := range map[string]string{"wxm": "W001", "qh": "W002", "wangxiaoming": "W001", "QianHong": "W002", "xiaom": "W001"} {
			_, body := op.get("/recipients?q=" + url.QueryEscape(q))
			wantContains(t, "search "+q, body, `<td class="mono">`+want+`</td>`)
			for _, other := range []string{"W001", "W002", "W003"} {
				if other != want {
					wantNotContains(t, "search "+q, body, `<td class="mono">`+other+`</td>`)
				}
			}
			// The people picker finds the same person.
			_, body = op.get("/compose?q=" + url.QueryEscape(q))
			wantContains(t, "picker "+q, body, want)
		}
	})

	t.Run("keyset pagination", func(t *testing.T) {
		var list []directory.Recipient
		for i := range 60 {
			list = append(list, directory.Recipient{ExternalID: fmt.Sprintf("P%03d", i), Name: fmt.Sprintf("Paged %03d", i), OrgType: directory.Branch, Active: true})
		}
		if _, err := c.store.Directory().UpsertRecipients(ctx, list); err != nil {
			t.Fatal(err)
		}
		_, body := op.get("/recipients?q=Paged")
		wantContains(t, "first page", body, `<td class="mono">P000</td>`, `<td class="mono">P049</td>`, `rel="next"`)
		wantNotContains(t, "first page", body, "P050")
		_, body = op.get("/recipients?q=Paged&after=P049")
		wantContains(t, "second page", body, `<td class="mono">P050</td>`, `<td class="mono">P059</td>`, "First page")
		// As a row (the page's own address, in the language switch, names P049 too).
		wantNotContains(t, "second page", body, `<td class="mono">P049</td>`, `rel="next"`)
	})

	t.Run("create validates like the API and keeps the input", func(t *testing.T) {
		form := url.Values{"external_id": {"E9001"}, "name": {"Hu Xin"}, "org_type": {"branch"}, "branch": {"Minhang"},
			"email": {"not an email"}, "active": {"true"}}
		resp, body := op.post("/recipients", form)
		wantStatus(t, "bad email", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "email", "is not an email address")
		wantContains(t, "form keeps input", body, `value="Hu Xin"`, `value="Minhang"`)

		form.Set("email", "hu@example.com")
		resp, body = op.post("/recipients", form)
		wantRedirect(t, "create", resp, body, "/recipients")
		r := c.recipient("E9001")
		if r.Name != "Hu Xin" || r.OrgType != directory.Branch || !r.Active || r.Email != "hu@example.com" {
			t.Errorf("created %+v", r)
		}
		if a := c.lastAudit("recipient.create"); a.TargetID != "E9001" || a.Actor != operatorUser {
			t.Errorf("audit %+v", a)
		}

		resp, body = op.post("/recipients", form)
		wantStatus(t, "duplicate", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "external_id", "is already used by another recipient")
	})

	t.Run("edit and deactivate", func(t *testing.T) {
		resp, body := op.get("/recipients/E9001/edit")
		wantStatus(t, "edit form", resp, body, http.StatusOK)
		wantContains(t, "edit form", body, `value="Hu Xin"`, "Deactivate")

		resp, body = op.post("/recipients/E9001/edit", url.Values{"name": {""}, "org_type": {"branch"}})
		wantStatus(t, "empty name", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "name", "must be 1–100 characters")

		resp, body = op.post("/recipients/E9001/edit", url.Values{"name": {"Hu Xin"}, "org_type": {"head_office"}, "department": {"Risk"}, "active": {"true"}})
		wantRedirect(t, "update", resp, body, "/recipients")
		if r := c.recipient("E9001"); r.OrgType != directory.HeadOffice || r.Department != "Risk" || r.Email != "" {
			t.Errorf("updated %+v", r)
		}

		resp, body = op.post("/recipients/E9001/active", url.Values{"active": {"false"}})
		wantRedirect(t, "deactivate", resp, body, "/recipients")
		if r := c.recipient("E9001"); r.Active {
			t.Error("still active after deactivating")
		}
		_, body = op.get("/recipients?active=false")
		wantContains(t, "inactive filter", body, "E9001")
		wantNotContains(t, "inactive filter", body, "E1001")

		resp, body = op.get("/recipients/NOPE/edit")
		wantStatus(t, "unknown person", resp, body, http.StatusNotFound)
	})

	t.Run("export is the filtered list in the import format", func(t *testing.T) {
		resp, body := c.as(viewerUser).get("/recipients/export.csv?org_type=branch&q=Pudong")
		wantStatus(t, "export", resp, body, http.StatusOK)
		// UTF-8 with a byte order mark, for Excel (see TestStaffCSVEncodings).
		body, ok := strings.CutPrefix(body, "\ufeff")
		if !ok {
			t.Errorf("export does not begin with the byte order mark")
		}
		rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 3 || strings.Join(rows[0], ",") != "external_id,name,org_type,branch,department,tianyuan_id,zhaohu_id,wecom_userid,feishu_user_id,dingtalk_userid,email,mobile,active" {
			t.Fatalf("export:\n%s", body)
		}
		if rows[1][0] != "E2001" || rows[2][0] != "E2003" || rows[1][len(rows[1])-1] != "true" {
			t.Errorf("export rows %v", rows[1:])
		}
	})

	t.Run("viewer cannot create", func(t *testing.T) {
		resp, body := c.as(viewerUser).post("/recipients", url.Values{"external_id": {"E9100"}, "name": {"X"}, "org_type": {"branch"}})
		wantStatus(t, "viewer creates", resp, body, http.StatusForbidden)
	})
}

func TestRecipientImport(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	op := c.as(operatorUser)
	const header = "external_id,name,org_type,branch,department,tianyuan_id,zhaohu_id,wecom_userid,email,active\n"
	good := header +
		"E3001,Qian Hao,branch,Pudong Branch,Counter,ty_E3001,,,qian@example.com,true\n" +
		"E1001,Li Wei,head_office,,Operations,ty_E1001,zh_E1001,wx_E1001,E1001@example.com,true\n" + // unchanged
		"E1002,Wang Fang,head_office,,Treasury,ty_E1002,zh_E1002,wx_E1002,E1002@example.com,false\n" // updated
	bad := header +
		"E3002,,branch,,,,,,,true\n" +
		"E3003,Bad Org,headoffice,,,,,,,\n" +
		"E3004,Bad Active,branch,,,,,,,maybe\n"
	mixed := header +
		"E3005,Good Row,branch,,,,,,,true\n" +
		"E3006,Bad Mail,branch,,,,,,x@,true\n" +
		"E3005,Again,branch,,,,,,,true\n"
	count := func() int64 {
		n, err := c.store.Directory().CountRecipients(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	seeded := count()

	t.Run("good rows: preview writes nothing, apply writes all", func(t *testing.T) {
		resp, body := op.upload("/recipients/import", url.Values{"mode": {"preview"}}, good)
		wantStatus(t, "preview", resp, body, http.StatusOK)
		wantContains(t, "preview", body, "All 3 rows are valid: 1 to create, 1 to update, 1 unchanged", ">create<", ">update<", ">unchanged<", "Apply 3 rows")
		if n := count(); n != seeded {
			t.Fatalf("preview created recipients: %d, had %d", n, seeded)
		}
		if r := c.recipient("E1002"); r.Department != "Operations" {
			t.Fatalf("preview updated E1002: %+v", r)
		}
		// The preview's Apply form posts the text back as multipart, as a browser does.
		resp, body = op.upload("/recipients/import", url.Values{"mode": {"apply"}, "csv": {good}}, "")
		wantRedirect(t, "apply", resp, body, "/recipients")
		if n := count(); n != seeded+1 {
			t.Fatalf("after apply %d recipients, want %d", n, seeded+1)
		}
		if r := c.recipient("E1002"); r.Department != "Treasury" || r.Active {
			t.Errorf("E1002 after import: %+v", r)
		}
		if r := c.recipient("E3001"); r.Branch != "Pudong Branch" || r.Email != "qian@example.com" {
			t.Errorf("E3001 after import: %+v", r)
		}
		if a := c.lastAudit("recipients.import"); a.ParamMap()["created"] != "1" || a.ParamMap()["updated"] != "1" || a.ParamMap()["unchanged"] != "1" {
			t.Errorf("audit %+v %v", a, a.ParamMap())
		}
		// And one entry per recipient changed, naming what changed.
		if a := c.lastAudit("recipient.create"); a.TargetID != "E3001" || a.ParamMap()["via"] != "csv" || a.Actor != operatorUser {
			t.Errorf("audit of the created recipient: %+v %v", a, a.ParamMap())
		}
		if a := c.lastAudit("recipient.deactivate"); a.TargetID != "E1002" || a.ParamMap()["via"] != "csv" ||
			!strings.Contains(a.ParamMap()["fields"], "department") || !strings.Contains(a.ParamMap()["changes"], "→ Treasury") {
			t.Errorf("audit of the deactivated recipient: %+v %v", a, a.ParamMap())
		}
	})

	t.Run("bad rows name the line and field", func(t *testing.T) {
		resp, body := op.upload("/recipients/import", url.Values{"mode": {"preview"}}, bad)
		wantStatus(t, "preview", resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "preview", body, "3 of 3 rows have errors",
			"line 2: name must be 1–100 characters",
			"line 3: org_type must be head_office or branch",
			"line 4: active must be true or false")
		wantNotContains(t, "preview", body, "Apply ")
	})

	t.Run("mixed rows: apply is all or nothing", func(t *testing.T) {
		before := count()
		resp, body := op.post("/recipients/import", url.Values{"mode": {"apply"}, "csv": {mixed}})
		wantStatus(t, "apply", resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "preview", body, "2 of 3 rows have errors", "line 3: email is not an email address", "line 4: external_id E3005 is also on line 2")
		if n := count(); n != before {
			t.Fatalf("a failed import changed the staff: %d, had %d", n, before)
		}
		if _, err := c.store.Directory().RecipientByExternalID(ctx, "E3005"); err == nil {
			t.Fatal("the good row of a failed import was written")
		}
	})

	t.Run("malformed files", func(t *testing.T) {
		for name, tc := range map[string]struct{ csv, want string }{
			"empty":           {"", "choose a file or paste rows"},
			"missing column":  {"external_id,name\nE1,X\n", "line 1: the column org_type is required"},
			"no rows":         {header, "has a header but no rows"},
			"ragged":          {header + "E3009,Short,branch\n", "line 2: has 3 cells; the header names 10"},
			"unclosed quote":  {header + "\"E3010,X,branch,,,,,,,true\n", "line 2"},
			"spreadsheet esc": {header + "E3011,'=cmd,branch,,,,,,,true\n", "The 1 row is valid"},
		} {
			t.Run(name, func(t *testing.T) {
				_, body := op.post("/recipients/import", url.Values{"mode": {"preview"}, "csv": {tc.csv}})
				wantContains(t, "preview", body, tc.want)
			})
		}
	})
}
