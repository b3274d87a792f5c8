package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// sendExpectingContinue posts body with a declared length, waiting for 100 Continue
// before sending it (as curl does), and returns the answer and how much of the body the
// client sent: nothing when the server answers without reading it.
func sendExpectingContinue(t *testing.T, cl *client, path, contentType, body string, header map[string]string) (*http.Response, string, int64) {
	t.Helper()
	r := &countingReader{r: strings.NewReader(body)}
	req, err := http.NewRequest("POST", cl.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Expect", "100-continue")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := cl.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return resp, string(text), r.n.Load()
}

// A console form is small: a body over 64 KB is refused with 413 before the handler
// runs, without reading it when its length is declared.
func TestConsoleBodyLimit(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	anon := c.as("")
	big := url.Values{"username": {adminUser}, "password": {strings.Repeat("p", 1<<20)}}.Encode()

	// A declared length over the cap: the answer comes before the body is sent (a
	// server reading the body would first answer 100 Continue).
	resp, page, sent := sendExpectingContinue(t, anon, "/login", "application/x-www-form-urlencoded", big, nil)
	wantStatus(t, "1 MB POST /login", resp, page, http.StatusRequestEntityTooLarge)
	wantContains(t, "413 page", page, "larger than 64 KB")
	if sent > 0 {
		t.Errorf("the client sent %d bytes of the body; the refusal should come before it is read", sent)
	}

	// Without a declared length (chunked), reading stops at the cap.
	resp, page = anon.do("POST", "/login", "application/x-www-form-urlencoded", io.MultiReader(strings.NewReader(big)), nil)
	wantStatus(t, "chunked 1 MB POST /login", resp, page, http.StatusRequestEntityTooLarge)

	// Just under the cap is a form like any other.
	small := url.Values{"username": {"nobody"}, "password": {strings.Repeat("p", 60<<10)}}
	resp, page = anon.post("/login", small)
	wantStatus(t, "60 KB POST /login", resp, page, http.StatusUnauthorized)

	// Signed in, the same holds for a page's form.
	op := c.as(operatorUser)
	resp, page = op.post("/templates/preview", url.Values{"body": {strings.Repeat("x", 100<<10)}})
	wantStatus(t, "100 KB template preview", resp, page, http.StatusRequestEntityTooLarge)
}

// Only the CSV imports take a file; every other form refuses multipart bodies.
func TestMultipartOnlyWhereAFileIsExpected(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	resp, body := c.as("").upload("/login", url.Values{"username": {adminUser}, "password": {testPassword}}, "")
	wantStatus(t, "multipart POST /login", resp, body, http.StatusUnsupportedMediaType)
	op := c.as(operatorUser)
	resp, body = op.upload("/recipients", url.Values{"external_id": {"E9001"}, "name": {"Upload"}, "org_type": {"branch"}}, "x")
	wantStatus(t, "multipart POST /recipients", resp, body, http.StatusUnsupportedMediaType)
	if _, err := c.store.Directory().RecipientByExternalID(t.Context(), "E9001"); err == nil {
		t.Error("the refused form created a recipient")
	}
	resp, body = op.upload("/duty/holidays/import", url.Values{"mode": {"preview"}}, "date,kind\n2031-01-01,off\n")
	wantStatus(t, "multipart holiday import", resp, body, http.StatusOK)
}

// An import takes a CSV file of up to 5 MB; a body past the upload cap is refused.
func TestImportTakesALargeFile(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	op := c.as(operatorUser)
	var csv strings.Builder
	csv.WriteString("external_id,name,org_type,branch,department,tianyuan_id,zhaohu_id,wecom_userid\n")
	pad := func(s string, n int) string { return s + strings.Repeat("x", n-len(s)) }
	rows := 0
	for csv.Len() < 5_000_000 {
		id := fmt.Sprintf("BULK%05d", rows)
		fmt.Fprintf(&csv, "%s,%s,branch,%s,%s,%s,%s,%s\n", pad(id, 64), pad("Name "+id, 100), pad("Branch", 100),
			pad("Dept", 100), pad("ty"+id, 64), pad("zh"+id, 64), pad("wc"+id, 64))
		rows++
	}
	resp, body := op.upload("/recipients/import", url.Values{"mode": {"preview"}}, csv.String())
	wantStatus(t, fmt.Sprintf("%d byte import", csv.Len()), resp, body, http.StatusOK)
	wantContains(t, "preview", body, fmt.Sprintf("All %d rows are valid", rows))

	resp, body = op.upload("/recipients/import", url.Values{"mode": {"preview"}}, strings.Repeat("x", 6<<20))
	wantStatus(t, "6 MB import", resp, body, http.StatusRequestEntityTooLarge)
}

// The API's limit is 1 MB, refused the same way: before reading a body declared longer.
func TestAPIBodyLimit(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	_, key, err := c.store.Access().CreateAPIKey(t.Context(), "limit-test", "send", adminUser)
	if err != nil {
		t.Fatal(err)
	}
	big := `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"` + strings.Repeat("x", 2<<20) + `"}}`
	resp, body, sent := sendExpectingContinue(t, c.as(""), "/api/v1/messages", "application/json", big,
		map[string]string{"Authorization": "Bearer " + key})
	wantStatus(t, "2 MB API request", resp, body, http.StatusRequestEntityTooLarge)
	wantContains(t, "2 MB API request", body, `"code":"body_too_large"`)
	if sent > 0 {
		t.Errorf("the client sent %d bytes of the body; the refusal should come before it is read", sent)
	}
}
