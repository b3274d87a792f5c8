package web_test

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"herald/i18n"
)

// The console walk: signed in as an admin, a browser follows every link of the console
// from the dashboard, in Chinese and in English, and submits every form it finds as a
// hurried person would: with the values the form shows, and a plausible value in each
// required field left empty. Every page answers 200; every submission answers a
// redirect, 200 or a named refusal (400, 403, 409, 422 with its page), never 404, 405
// or a server error. No Chinese page shows an English sentence outside the documented
// exceptions (walkEnglishAllowed).

// walkSkipLinks are links the walk does not follow: leaving the console, Asynqmon's own
// pages (another application), downloads (not pages), and the static files.
var walkSkipLinks = []*regexp.Regexp{
	regexp.MustCompile(`^/logout$`),
	regexp.MustCompile(`^/monitoring(/|$)`),
	regexp.MustCompile(`^/static/`),
	regexp.MustCompile(`^/api/`),
	regexp.MustCompile(`\.(csv|ics|json)$`),
	regexp.MustCompile(`^/duty/feeds/[^/]+\.ics`),
	regexp.MustCompile(`^/accounts/[^/]+/usage$`), // JSON for the usage bars
}

// walkSkipForm is a form the walk does not submit, and why.
type walkSkipForm struct {
	method string
	path   *regexp.Regexp
	why    string
}

// walkSkipForms are the forms that would end the walk itself: signing out, signing out
// everywhere, or taking the walking admin's own rights away.
var walkSkipForms = []walkSkipForm{
	{"POST", regexp.MustCompile(`^/logout$`), "signs the walk out"},
	{"POST", regexp.MustCompile(`^/sessions/revoke$`), "signs every session out, the walk's too"},
	{"POST", regexp.MustCompile(`^/sessions/[0-9a-f]+/sign-out$`), "signs a session out, the walk's own among them"},
}

// walkKnownDefects are submissions that fail today in code another change is taking
// up; each names the defect. Remove an entry once its fix is in.
var walkKnownDefects = []walkSkipForm{}

// walkEnglishAllowed are the Latin-script words a Chinese page shows on purpose:
// product, platform and protocol names, units, codes. Values from the database (names,
// template texts, account and key names, audit details) are allowed by walkUserData.
var walkEnglishAllowed = map[string]bool{
	"Herald": true, "Asynqmon": true, "Tianyuan": true, "Zhaohu": true, "WeCom": true, "Webhook": true,
	"API": true, "CSV": true, "JSON": true, "HTTP": true, "HTTPS": true, "URL": true, "SMTP": true, "TLS": true,
	"STARTTLS": true, "SSL": true, "ID": true, "IDs": true, "UTC": true, "Redis": true, "MySQL": true, "SQLite": true,
	"HMAC": true, "SHA": true, "Bearer": true, "Authorization": true, "POST": true, "GET": true, "PUT": true,
	"DELETE": true, "UTF": true, "Excel": true, "English": true, "Asia": true, "Shanghai": true, "iCalendar": true,
	"MB": true, "KB": true, "ms": true, "IP": true, "Sandbox": true, "Outlook": true, "Google": true, "Calendar": true,
	"Apple": true, "Markdown": true, "GB18030": true, "Content-Type": true,
}

// walkPage is a page the walk reached and the forms on it.
type walkPage struct {
	path  string
	forms []walkForm
}

// walkForm is one way to submit a form: its method, where it goes, its values, and
// whether htmx sends it (then with HX-Request, as htmx does).
type walkForm struct {
	page, method, action string
	values               url.Values
	multipart, hx        bool
	// destructive forms (a confirmation asked, a danger button) go last, so that what
	// they delete is not missing for the other forms.
	destructive bool
}

func (f walkForm) String() string {
	s := f.method + " " + f.action
	if f.hx {
		s += " (htmx)"
	}
	return s + " from " + f.page
}

func TestConsoleWalk(t *testing.T) {
	for _, lang := range []string{i18n.Chinese, i18n.English} {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			walkConsole(t, lang)
		})
	}
}

func walkConsole(t *testing.T, lang string) {
	c := newConsole(t)
	// Something in every state the pages show: sent, stopped, pending, a key with a
	// callback.
	msgs := c.send(nil, "E2001", "E2002", "E2003")
	c.stop(msgs["E2001"].ID)
	if _, _, err := c.store.Access().CreateAPIKey(context.Background(), "walk-key", "send,read", adminUser); err != nil {
		t.Fatal(err)
	}
	// Another user, whose role, access and password the users page offers to change.
	c.user(viewerUser)
	admin := c.as(adminUser)
	w := &walker{t: t, c: c, cl: admin, lang: lang, seen: map[string]int{}, submitted: map[string]bool{}}

	// Pages first, then their forms; forms create things (a rotation, an override) whose
	// pages and forms the next round finds.
	queue := []string{"/"}
	for round := 0; round < 3 && len(queue) > 0; round++ {
		pages := w.crawl(queue)
		var forms []walkForm
		for _, p := range pages {
			forms = append(forms, p.forms...)
		}
		sort.SliceStable(forms, func(i, j int) bool { return !forms[i].destructive && forms[j].destructive })
		n := 0
		for _, f := range forms {
			if w.submit(f) {
				n++
			}
		}
		t.Logf("%s round %d: %d pages, %d forms submitted", lang, round+1, len(pages), n)
		queue = []string{"/"}
		w.seen = map[string]int{}
		// Signed in still: no form may have ended the session.
		if resp, body := admin.getIn(lang, "/"); resp.StatusCode != http.StatusOK {
			t.Fatalf("after round %d the dashboard answers %d: a form ended the walk's session\n%s", round+1, resp.StatusCode, body)
		}
	}
	if len(w.problems) > 0 {
		t.Errorf("%d problems walking the console in %s:\n  %s", len(w.problems), lang, strings.Join(w.problems, "\n  "))
	}
	if w.pages < 25 {
		t.Errorf("the walk reached only %d pages: the navigation or the crawl is broken", w.pages)
	}
}

// walker is one walk through the console.
type walker struct {
	t    *testing.T
	c    *console
	cl   *client
	lang string
	// seen counts the pages reached by shape (ids and query values left out), so that
	// paging and calendar links do not walk on forever.
	seen      map[string]int
	submitted map[string]bool
	pages     int
	problems  []string
	userData  []string
}

// pagesPerShape is how many pages of one shape (/messages/:id, /duty/calendar?month=)
// the walk reaches.
const pagesPerShape = 3

var idSegment = regexp.MustCompile(`^[0-9a-f-]{8,}$|^\d+$|^E\d+$`)

// shape is a path with its ids and query values left out.
func shape(u *url.URL) string {
	segs := strings.Split(u.Path, "/")
	for i, s := range segs {
		if idSegment.MatchString(s) {
			segs[i] = ":id"
		}
	}
	keys := make([]string, 0, len(u.Query()))
	for k := range u.Query() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(segs, "/") + "?" + strings.Join(keys, "&")
}

func (w *walker) problem(format string, args ...any) {
	w.problems = append(w.problems, fmt.Sprintf(format, args...))
}

// crawl reaches the pages of queue and every console page they link to.
func (w *walker) crawl(queue []string) []walkPage {
	var out []walkPage
	visited := map[string]bool{}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		if visited[path] {
			continue
		}
		visited[path] = true
		u, _ := url.Parse(path)
		if w.seen[shape(u)] >= pagesPerShape && path != "/" {
			continue
		}
		w.seen[shape(u)]++
		resp, body := w.cl.getIn(w.lang, path)
		w.pages++
		if resp.StatusCode != http.StatusOK {
			w.problem("GET %s: %d", path, resp.StatusCode)
			continue
		}
		if !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
			continue
		}
		doc, err := html.Parse(strings.NewReader(body))
		if err != nil {
			w.problem("GET %s: %v", path, err)
			continue
		}
		if w.lang == i18n.Chinese {
			w.checkChinese(path, doc)
		}
		links, forms := w.read(path, doc)
		queue = append(queue, links...)
		out = append(out, walkPage{path, forms})
	}
	return out
}

// consolePath returns the console path a link or form of the page at base leads to, or
// "" for one elsewhere.
func consolePath(base, ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.HasPrefix(ref, "#") || strings.HasPrefix(ref, "mailto:") || strings.HasPrefix(ref, "javascript:") {
		return ""
	}
	b, _ := url.Parse("http://console" + base)
	u, err := b.Parse(ref)
	if err != nil || u.Host != "console" {
		return ""
	}
	u.Fragment = ""
	return u.RequestURI()
}

// read returns the page's links to follow and its forms.
func (w *walker) read(page string, doc *html.Node) (links []string, forms []walkForm) {
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.A:
				if _, download := attr(n, "download"); !download {
					if p := consolePath(page, attrVal(n, "href")); p != "" && !skipped(walkSkipLinks, p) {
						links = append(links, p)
					}
				}
			case atom.Form:
				forms = append(forms, w.formSubmissions(page, n)...)
				return
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(doc)
	return links, forms
}

func skipped(list []*regexp.Regexp, path string) bool {
	p, _, _ := strings.Cut(path, "?")
	return slices.ContainsFunc(list, func(re *regexp.Regexp) bool { return re.MatchString(p) })
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func attrVal(n *html.Node, key string) string { v, _ := attr(n, key); return v }

func hasAttr(n *html.Node, key string) bool { _, ok := attr(n, key); return ok }

func textOf(n *html.Node) string {
	var sb strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			sb.WriteString(n.Data)
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(n)
	return sb.String()
}

// formSubmissions returns the ways a person submits the form: one per submit button
// (each may carry its own name, value and formaction), through its action as a browser
// does, and through its hx-post or hx-get as htmx does.
func (w *walker) formSubmissions(page string, form *html.Node) []walkForm {
	values := url.Values{}
	var buttons []*html.Node
	radios := map[string]bool{}
	var firstRadio = map[string]string{}
	destructive := hasAttr(form, "data-confirm") || hasAttr(form, "hx-confirm")
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && !hasAttr(n, "disabled") {
			name := attrVal(n, "name")
			switch n.DataAtom {
			case atom.Input:
				typ := strings.ToLower(attrVal(n, "type"))
				switch typ {
				case "submit", "image":
					buttons = append(buttons, n)
				case "button", "reset", "file":
				case "checkbox":
					if name != "" && hasAttr(n, "checked") {
						values.Add(name, valueOr(n, "on"))
					}
				case "radio":
					if name == "" {
						break
					}
					if _, ok := firstRadio[name]; !ok {
						firstRadio[name] = valueOr(n, "on")
					}
					if hasAttr(n, "checked") {
						values.Add(name, valueOr(n, "on"))
						radios[name] = true
					}
				default:
					if name == "" || attrVal(n, "form") != "" {
						break
					}
					v := attrVal(n, "value")
					if v == "" && hasAttr(n, "required") {
						v = plausible(typ, name, n)
					}
					values.Add(name, v)
				}
			case atom.Button:
				if t := strings.ToLower(attrVal(n, "type")); t == "" || t == "submit" {
					buttons = append(buttons, n)
					if strings.Contains(attrVal(n, "class"), "danger") {
						destructive = true
					}
				}
			case atom.Select:
				if name != "" {
					var chosen []string
					var first, firstFilled string
					options := 0
					var opts func(*html.Node)
					opts = func(o *html.Node) {
						if o.Type == html.ElementNode && o.DataAtom == atom.Option {
							v, ok := attr(o, "value")
							if !ok {
								v = strings.TrimSpace(textOf(o))
							}
							if options == 0 {
								first = v
							}
							if firstFilled == "" && v != "" {
								firstFilled = v
							}
							options++
							if hasAttr(o, "selected") {
								chosen = append(chosen, v)
							}
						}
						for ch := o.FirstChild; ch != nil; ch = ch.NextSibling {
							opts(ch)
						}
					}
					opts(n)
					multiple := hasAttr(n, "multiple")
					if len(chosen) == 0 && !multiple && options > 0 {
						chosen = []string{first}
					}
					if hasAttr(n, "required") && (len(chosen) == 0 || chosen[0] == "") && firstFilled != "" {
						chosen = []string{firstFilled}
					}
					for _, v := range chosen {
						values.Add(name, v)
					}
				}
				return
			case atom.Textarea:
				if name != "" {
					v := textOf(n)
					if strings.TrimSpace(v) == "" && hasAttr(n, "required") {
						v = plausible("text", name, n)
					}
					values.Add(name, strings.TrimPrefix(v, "\n"))
				}
				return
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(form)
	for name, v := range firstRadio {
		if !radios[name] {
			values.Add(name, v)
		}
	}
	method := strings.ToUpper(attrVal(form, "method"))
	if method == "" {
		method = "GET"
	}
	action := page
	if a, ok := attr(form, "action"); ok && strings.TrimSpace(a) != "" {
		action = consolePath(page, a)
	}
	multipart := strings.EqualFold(attrVal(form, "enctype"), "multipart/form-data")
	var out []walkForm
	add := func(f walkForm) {
		if f.action == "" {
			return
		}
		f.page, f.multipart, f.destructive = page, multipart, destructive
		out = append(out, f)
	}
	if len(buttons) == 0 {
		add(walkForm{method: method, action: action, values: values})
	}
	for _, b := range buttons {
		vs := cloneValues(values)
		if name := attrVal(b, "name"); name != "" {
			vs.Add(name, attrVal(b, "value"))
		}
		a := action
		if fa := attrVal(b, "formaction"); fa != "" {
			a = consolePath(page, fa)
		}
		m := method
		if fm := attrVal(b, "formmethod"); fm != "" {
			m = strings.ToUpper(fm)
		}
		add(walkForm{method: m, action: a, values: vs})
	}
	for _, hx := range []string{"hx-post", "hx-get"} {
		if ref := attrVal(form, hx); ref != "" {
			add(walkForm{method: strings.ToUpper(strings.TrimPrefix(hx, "hx-")), action: consolePath(page, ref), values: values, hx: true})
		}
	}
	return out
}

func valueOr(n *html.Node, def string) string {
	if v, ok := attr(n, "value"); ok {
		return v
	}
	return def
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

var walkFieldError = regexp.MustCompile(`id="error-([^"]*)"[^>]*>([^<]*)<`)

// plausible is what a hurried person types into an empty required field.
func plausible(typ, name string, n *html.Node) string {
	switch typ {
	case "date":
		return time.Now().AddDate(0, 0, 1).Format(time.DateOnly)
	case "time":
		return "09:00"
	case "datetime-local":
		return time.Now().AddDate(0, 0, 1).Format("2006-01-02") + "T09:00"
	case "month":
		return time.Now().Format("2006-01")
	case "number", "range":
		if m := attrVal(n, "min"); m != "" {
			return m
		}
		return "1"
	case "email":
		return "a@example.com"
	case "url":
		return "https://example.com/x"
	case "tel":
		return "13800000000"
	case "password":
		return "walk"
	}
	switch {
	case strings.Contains(name, "date"):
		return time.Now().AddDate(0, 0, 1).Format(time.DateOnly)
	case strings.Contains(name, "email"):
		return "a@example.com"
	}
	return "walk"
}

// submit sends one form and checks its answer; it reports whether it was sent.
func (w *walker) submit(f walkForm) bool {
	path, _, _ := strings.Cut(f.action, "?")
	for _, s := range walkSkipForms {
		if s.method == f.method && s.path.MatchString(path) {
			return false
		}
	}
	for _, s := range walkKnownDefects {
		if s.method == f.method && s.path.MatchString(path) {
			w.t.Logf("known defect, not submitted: %s: %s", f, s.why)
			return false
		}
	}
	key := f.method + " " + f.action + " " + f.values.Encode() + fmt.Sprint(f.hx)
	if w.submitted[key] {
		return false
	}
	w.submitted[key] = true
	header := map[string]string{"Accept-Language": w.lang, "Origin": w.cl.base, "Sec-Fetch-Site": "same-origin"}
	if f.hx {
		header["HX-Request"] = "true"
	}
	var resp *http.Response
	var body string
	switch {
	case f.method == "GET":
		target := f.action
		if len(f.values) > 0 {
			u, _ := url.Parse(f.action)
			q := u.Query()
			for k, vs := range f.values {
				q[k] = vs
			}
			u.RawQuery = q.Encode()
			target = u.RequestURI()
		}
		resp, body = w.cl.do("GET", target, "", nil, header)
	case f.multipart:
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for k, vs := range f.values {
			for _, v := range vs {
				_ = mw.WriteField(k, v)
			}
		}
		mw.Close()
		resp, body = w.cl.do(f.method, f.action, mw.FormDataContentType(), &buf, header)
	default:
		resp, body = w.cl.do(f.method, f.action, "application/x-www-form-urlencoded", strings.NewReader(f.values.Encode()), header)
	}
	status := resp.StatusCode
	if testing.Verbose() {
		// go test -v lists every submission, with what a refusal said beside its fields.
		var said []string
		for _, m := range walkFieldError.FindAllStringSubmatch(body, -1) {
			said = append(said, m[1]+": "+html.UnescapeString(m[2]))
		}
		w.t.Logf("%s → %d %s", f, status, strings.Join(said, "; "))
	}
	switch {
	case status >= 300 && status < 400:
		loc := resp.Header.Get("Location")
		if strings.HasPrefix(loc, "/login") {
			w.problem("%s: sent to the login page (%s): the form ended the session", f, loc)
		} else if p := consolePath(f.action, loc); p != "" && !skipped(walkSkipLinks, p) {
			// The browser follows the redirect at once.
			if resp, body := w.cl.getIn(w.lang, p); resp.StatusCode != http.StatusOK {
				w.problem("%s: redirected to %s, which answers %d: %s", f, p, resp.StatusCode, clipText(body))
			}
		}
	case status == http.StatusOK || status == http.StatusCreated:
	case status == http.StatusBadRequest || status == http.StatusForbidden || status == http.StatusConflict || status == http.StatusUnprocessableEntity:
		if !f.hx && !strings.Contains(body, "<html") || strings.TrimSpace(body) == "" {
			w.problem("%s: %d without a page: %s", f, status, clipText(body))
		}
	default:
		w.problem("%s: %d with %s: %s", f, status, f.values.Encode(), clipText(body))
	}
	if w.lang == i18n.Chinese && status < 300 && strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
		if doc, err := html.Parse(strings.NewReader(body)); err == nil {
			w.checkChinese(f.String(), doc)
		}
	}
	return true
}

func clipText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// englishSentence is three or more Latin-script words in a row: an English sentence
// or phrase, as opposed to a name, a code or a product word.
var englishSentence = regexp.MustCompile(`[A-Za-z][A-Za-z'’]*(?:[ ,]+[A-Za-z][A-Za-z'’]*){2,}`)

// walkIdentifier is a message, batch or audit id (a UUID): taken out of a text before
// the user data, whose short values would otherwise cut its letters into "words".
var walkIdentifier = regexp.MustCompile(`\b[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b`)

// checkChinese reports the English sentences a Chinese page shows in its text, outside
// script, style, textarea, pre, code and class="mono" (technical values shown as they
// are: addresses, raw errors, field names), once the database's own values (people,
// templates, accounts, audit details) are taken out and the allowed words are skipped.
func (w *walker) checkChinese(where string, doc *html.Node) {
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			if m := w.englishIn(n.Data); m != "" {
				w.problem("%s: English on a Chinese page: %q in «%s»", where, m, clipText(n.Data))
			}
			return
		case html.ElementNode:
			switch n.DataAtom {
			case atom.Script, atom.Style, atom.Textarea, atom.Pre, atom.Code, atom.Kbd, atom.Samp:
				return
			}
			if slices.Contains(strings.Fields(attrVal(n, "class")), "mono") {
				return
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(doc)
}

// englishIn returns the first English sentence of a text, or "". The database's values
// are read again before a text is judged English: a form just stored new ones.
func (w *walker) englishIn(text string) string {
	text = walkIdentifier.ReplaceAllString(strings.Join(strings.Fields(text), " "), " ")
	for fresh := false; ; fresh = true {
		if fresh || w.userData == nil {
			w.userData = walkUserData(w.t, w.c)
		}
		rest := text
		for _, u := range w.userData {
			rest = strings.ReplaceAll(rest, u, " ")
		}
		found := ""
		for _, m := range englishSentence.FindAllString(rest, -1) {
			n := 0
			for _, word := range strings.FieldsFunc(m, func(r rune) bool { return r == ' ' || r == ',' }) {
				if !walkEnglishAllowed[word] {
					n++
				}
			}
			if n >= 3 {
				found = m
				break
			}
		}
		if found == "" || fresh {
			return found
		}
	}
}

// walkUserData are the values the database holds that pages show as they are: people,
// departments, templates, accounts, users, keys, holidays, audit details. Longest first,
// so that a name inside a longer value is taken out with it.
func walkUserData(t *testing.T, c *console) []string {
	db := c.store.SQL()
	var out []string
	for _, q := range []string{
		"SELECT name FROM recipients", "SELECT branch FROM recipients", "SELECT department FROM recipients",
		"SELECT name FROM templates", "SELECT subject FROM templates", "SELECT body FROM templates",
		"SELECT name FROM accounts", "SELECT username FROM console_users", "SELECT name FROM api_keys",
		"SELECT detail FROM audit_log", "SELECT name FROM holidays", "SELECT content FROM messages", "SELECT last_error FROM messages",
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Logf("user data %q: %v", q, err)
			continue
		}
		for rows.Next() {
			var s *string
			if rows.Scan(&s) == nil && s != nil && strings.TrimSpace(*s) != "" {
				out = append(out, strings.Join(strings.Fields(*s), " "))
			}
		}
		rows.Close()
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

// Requests no route takes answer in the reader's language: a console page for a path or
// a method the console does not have (404, 405), the API's JSON error for its own.
func TestUnroutedAnswersInReadersLanguage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	admin := c.as(adminUser)
	for _, tc := range []struct {
		lang, method, path string
		status             int
		want               []string
	}{
		{"zh-CN", "POST", "/duty/rotations/new", http.StatusMethodNotAllowed, []string{`<html lang="zh-CN">`, "此处不能这样操作", "此页面不接受这种请求"}},
		{"en", "POST", "/duty/rotations/new", http.StatusMethodNotAllowed, []string{`<html lang="en">`, "Not possible here", "does not take this kind of request"}},
		{"zh-CN", "GET", "/no-such-page", http.StatusNotFound, []string{`<html lang="zh-CN">`, "该页面不存在"}},
		{"zh-CN", "DELETE", "/api/v1/openapi.json", http.StatusMethodNotAllowed, []string{`"code":"method_not_allowed"`, "此接口不接受 DELETE 请求"}},
		{"", "DELETE", "/api/v1/openapi.json", http.StatusMethodNotAllowed, []string{`"code":"method_not_allowed"`, "this endpoint does not take DELETE"}},
	} {
		resp, body := admin.do(tc.method, tc.path, "application/x-www-form-urlencoded", strings.NewReader(""), map[string]string{"Accept-Language": tc.lang})
		wantStatus(t, tc.method+" "+tc.path+" in "+tc.lang, resp, body, tc.status)
		wantContains(t, tc.method+" "+tc.path+" in "+tc.lang, html.UnescapeString(body), tc.want...)
		if strings.Contains(body, "method not allowed") {
			t.Errorf("%s %s in %s answers gin's own English", tc.method, tc.path, tc.lang)
		}
		// An error page names no path: a link could make it say anything.
		if tc.status != http.StatusMethodNotAllowed || !strings.HasPrefix(tc.path, "/api/") {
			if page := strings.SplitN(body, "<main", 2); len(page) == 2 && strings.Contains(page[1], tc.path) {
				t.Errorf("%s %s in %s echoes the path", tc.method, tc.path, tc.lang)
			}
		}
	}
	// The signed-in admin's error page keeps the console's navigation.
	_, body := admin.getIn("zh-CN", "/no-such-page")
	wantContains(t, "404 page signed in", body, `href="/messages"`)
}
