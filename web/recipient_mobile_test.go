package web_test

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestRecipientMobileInTheConsole: the person form takes a mobile number, refuses a bad
// one beside the field keeping what was typed, and stores a good one in its one form;
// operators see it whole in the staff list and its export, viewers masked.
func TestRecipientMobileInTheConsole(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	op, viewer := c.as(operatorUser), c.as(viewerUser)

	form := url.Values{"external_id": {"M9001"}, "name": {"Mo Bai"}, "org_type": {"branch"}, "branch": {"Minhang"},
		"mobile": {"138-1234"}, "active": {"true"}}
	resp, body := op.post("/recipients", form)
	wantStatus(t, "bad mobile", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "mobile", "must be a mainland mobile number")
	wantContains(t, "form keeps input", body, `value="138-1234"`, `value="Mo Bai"`)

	form.Set("mobile", "+86 138-1234-5678")
	resp, body = op.post("/recipients", form)
	wantRedirect(t, "create", resp, body, "/recipients")
	if r := c.recipient("M9001"); r.Mobile != "13812345678" {
		t.Errorf("stored mobile %q, want 13812345678", r.Mobile)
	}

	_, body = op.get("/recipients/M9001/edit")
	wantContains(t, "edit form", body, `value="13812345678"`)
	resp, body = op.post("/recipients/M9001/edit", url.Values{"name": {"Mo Bai"}, "org_type": {"branch"},
		"mobile": {"+85291234567"}, "active": {"true"}})
	wantRedirect(t, "update", resp, body, "/recipients")
	if r := c.recipient("M9001"); r.Mobile != "+85291234567" {
		t.Errorf("updated mobile %q, want +85291234567", r.Mobile)
	}
	// The audit log, open to viewers, names the change masked.
	if a := c.lastAudit("recipient.update"); a.Params == nil || !strings.Contains(*a.Params, "138****5678 → +852****4567") || strings.Contains(*a.Params, "91234567") {
		t.Errorf("audit params %v, want the mobile change masked", a.Params)
	}

	t.Run("the staff list", func(t *testing.T) {
		_, body := op.get("/recipients?q=M9001")
		wantContains(t, "operator's list", body, `<td class="mono">+85291234567</td>`)
		_, body = viewer.get("/recipients?q=M9001")
		wantContains(t, "viewer's list", body, `<td class="mono">+852****4567</td>`)
		wantNotContains(t, "viewer's list", body, "91234567")
	})

	t.Run("the export", func(t *testing.T) {
		mobileOf := func(cl *client) string {
			t.Helper()
			_, body := cl.get("/recipients/export.csv?q=M9001")
			rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(body, "\ufeff"))).ReadAll()
			if err != nil || len(rows) != 2 {
				t.Fatalf("export: %v\n%s", err, body)
			}
			i := slices.Index(rows[0], "mobile")
			if i < 0 {
				t.Fatalf("export has no mobile column: %v", rows[0])
			}
			return rows[1][i]
		}
		// A + starts a formula in a spreadsheet: the export writes it after an apostrophe.
		if got := mobileOf(op); got != "'+85291234567" {
			t.Errorf("operator's export: mobile %q", got)
		}
		if got := mobileOf(viewer); got != "'+852****4567" {
			t.Errorf("viewer's export: mobile %q", got)
		}
	})
}

// TestRecipientMobileImport: a staff file may have a mobile column, whose cells the
// preview shows and a bad one of which is refused on its row naming the column; a file
// without the column imports as before.
func TestRecipientMobileImport(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	op := c.as(operatorUser)

	t.Run("with the column", func(t *testing.T) {
		csv := "external_id,name,org_type,mobile\n" +
			"M3001,Qian Hao,branch,+86 139-0000-5678\n" +
			"M3002,Sun Li,branch,12345\n" +
			"M3003,Zhao Lei,branch,\n"
		resp, body := op.post("/recipients/import", url.Values{"mode": {"preview"}, "csv": {csv}})
		wantStatus(t, "preview", resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "preview", body, "1 of 3 rows has errors", "<th>mobile</th>", "+86 139-0000-5678",
			"line 3: mobile must be a mainland mobile number")
		wantContains(t, "result of line 2", resultCell(t, body, 2), "create")

		good := strings.Replace(csv, "12345", "+44 7911 123456", 1)
		resp, body = op.post("/recipients/import", url.Values{"mode": {"apply"}, "csv": {good}})
		wantRedirect(t, "apply", resp, body, "/recipients")
		for id, want := range map[string]string{"M3001": "13900005678", "M3002": "+447911123456", "M3003": ""} {
			if got := c.recipient(id).Mobile; got != want {
				t.Errorf("%s: mobile %q, want %q", id, got, want)
			}
		}
	})

	t.Run("under its Chinese name", func(t *testing.T) {
		csv := "工号,姓名,机构类型,手机\nM3101,钱浩,分行,13700001111\n"
		resp, body := op.post("/recipients/import", url.Values{"mode": {"apply"}, "csv": {csv}})
		wantRedirect(t, "apply", resp, body, "/recipients")
		if got := c.recipient("M3101").Mobile; got != "13700001111" {
			t.Errorf("mobile %q", got)
		}
	})

	t.Run("without the column", func(t *testing.T) {
		csv := staffHeader + "M3201,Wu Fang,branch,Pudong Branch,,,,,wu@example.com,true\n"
		resp, body := op.post("/recipients/import", url.Values{"mode": {"apply"}, "csv": {csv}})
		wantRedirect(t, "apply", resp, body, "/recipients")
		if r := c.recipient("M3201"); r.Email != "wu@example.com" || r.Mobile != "" {
			t.Errorf("imported %+v", r)
		}
	})
}

// TestRecipientMobileAPI: the recipients' API writes and reads mobile, whole (it needs
// the admin scope, which a read key lacks), and refuses a bad one naming the element.
func TestRecipientMobileAPI(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	api := c.apiKey("hr-sync", "admin")

	status, body, _ := api.call("PUT", "/api/v1/recipients", `[{"external_id":"M5001","name":"Mo Bai","org_type":"branch","mobile":"86 139 0000 5678"}]`)
	if status != http.StatusOK || body["created"] != 1.0 {
		t.Fatalf("upsert: %d %s", status, body["_raw"])
	}
	_, list, _ := api.call("GET", "/api/v1/recipients?q=M5001", "")
	people, _ := list["recipients"].([]any)
	if len(people) != 1 || people[0].(map[string]any)["mobile"] != "13900005678" {
		t.Errorf("read back: %s", list["_raw"])
	}

	status, body, _ = api.call("PUT", "/api/v1/recipients", `[{"external_id":"M5001","name":"Mo Bai","org_type":"branch","mobile":"13900005678"},
		{"external_id":"M5002","name":"x","org_type":"branch","mobile":"+0123"}]`)
	if status != http.StatusUnprocessableEntity || errorField(body) != "[1].mobile" {
		t.Errorf("bad mobile: %d %s, want 422 naming [1].mobile", status, body["_raw"])
	}
	if status, _, _ := c.apiKey("dashboard", "read").call("GET", "/api/v1/recipients?q=M5001", ""); status != http.StatusForbidden {
		t.Errorf("a read key listed staff: %d", status)
	}
}
