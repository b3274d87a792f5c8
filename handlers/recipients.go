package handlers

import (
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/audit"
	"herald/directory"
	"herald/i18n"
	"herald/kernel"
	"herald/views"
)

// recipientFilter reads the staff list's filters from the query string.
func recipientFilter(c *gin.Context) (views.RecipientFilter, directory.RecipientFilter) {
	v := views.RecipientFilter{Q: strings.TrimSpace(c.Query("q")), OrgType: c.Query("org_type"), Branch: c.Query("branch"), Active: c.Query("active")}
	f := directory.RecipientFilter{Query: v.Q, Branch: v.Branch}
	if t := directory.OrgType(v.OrgType); t == directory.HeadOffice || t == directory.Branch {
		f.OrgType = t
	} else {
		v.OrgType = ""
	}
	if b, err := strconv.ParseBool(v.Active); err == nil {
		f.Active = &b
	} else {
		v.Active = ""
	}
	return v, f
}

func recipientQuery(f views.RecipientFilter) url.Values {
	return url.Values{"q": {f.Q}, "org_type": {f.OrgType}, "branch": {f.Branch}, "active": {f.Active}}
}

// Recipients lists staff, filtered, one page at a time (keyset on external id).
func (h *Handlers) Recipients(c *gin.Context) {
	ctx := c.Request.Context()
	v := views.Recipients{Notice: h.notice(c)}
	var f directory.RecipientFilter
	v.Filter, f = recipientFilter(c)
	f.After, f.Limit = c.Query("after"), pageSize+1
	people, err := h.Store.Directory().ListRecipients(ctx, f)
	if err != nil {
		h.fail(c, err)
		return
	}
	q := recipientQuery(v.Filter)
	if len(people) > pageSize {
		people = people[:pageSize]
		next := recipientQuery(v.Filter)
		next.Set("after", people[len(people)-1].ExternalID)
		v.Next = withQuery("/recipients", next)
	}
	if f.After != "" {
		v.First = withQuery("/recipients", q)
	}
	for i := range people {
		people[i].Mobile = shownMobile(c, people[i].Mobile)
	}
	v.People = people
	v.Export = withQuery("/recipients/export.csv", q)
	if v.Branches, err = h.Store.Directory().Branches(ctx); err != nil {
		h.fail(c, err)
		return
	}
	render(c, http.StatusOK, views.RecipientsPage(page(c, tr(c, "title.staff"), "recipients"), v))
}

// recipientColumns are the columns of a staff CSV file, import and export alike.
var recipientColumns = func() []string {
	cols := []string{"external_id", "name", "org_type", "branch", "department"}
	for _, a := range directory.IMAddresses {
		cols = append(cols, a.Field)
	}
	return append(cols, "email", "mobile", "active")
}()

// recipientAliases are the Chinese column names a staff CSV file may use instead.
var recipientAliases = map[string]string{
	"工号": "external_id", "姓名": "name", "机构类型": "org_type", "分行": "branch", "部门": "department",
	"天元": "tianyuan_id", "招呼": "zhaohu_id", "企业微信": "wecom_userid", "飞书": "feishu_user_id", "钉钉": "dingtalk_userid", "邮箱": "email", "手机": "mobile", "在职": "active",
}

// csvOrgType reads the org_type cell of a staff CSV file: head_office or branch, or
// their Chinese names 总行 and 分行.
func csvOrgType(s string) directory.OrgType {
	switch s {
	case "总行":
		return directory.HeadOffice
	case "分行":
		return directory.Branch
	}
	return directory.OrgType(s)
}

// parseActive reads the active cell of a staff CSV file: true or false as
// strconv.ParseBool reads them, or 是 (yes) and 否 (no).
func parseActive(s string) (active, ok bool) {
	switch s {
	case "是":
		return true, true
	case "否":
		return false, true
	}
	b, err := strconv.ParseBool(s)
	return b, err == nil
}

// exportChunk is how many recipients an export reads at a time.
const exportChunk = 1000

// ExportRecipients writes the filtered staff list as CSV, in the import's format.
func (h *Handlers) ExportRecipients(c *gin.Context) {
	ctx := c.Request.Context()
	_, f := recipientFilter(c)
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="staff.csv"`)
	// A byte order mark first: without it Excel reads a CSV file in the system's code
	// page (GBK on Chinese Windows) and garbles every Chinese name. The import skips it.
	_, _ = io.WriteString(c.Writer, utf8BOM)
	w := csv.NewWriter(c.Writer)
	_ = w.Write(recipientColumns)
	f.Limit = exportChunk
	n := 0
	for {
		list, err := h.Store.Directory().ListRecipients(ctx, f)
		if err != nil {
			// The header is out: all that can be done is to stop and log.
			h.Log.Error("export recipients", "error", err)
			return
		}
		for _, r := range list {
			row := []string{r.ExternalID, r.Name, string(r.OrgType), r.Branch, r.Department}
			for _, a := range directory.IMAddresses {
				row = append(row, *a.Of(&r))
			}
			row = append(row, r.Email, shownMobile(c, r.Mobile), strconv.FormatBool(r.Active))
			for i := range row {
				row[i] = toSpreadsheet(row[i])
			}
			_ = w.Write(row)
		}
		n += len(list)
		if len(list) < exportChunk {
			break
		}
		f.After = list[len(list)-1].ExternalID
	}
	w.Flush()
	h.audit(c, CurrentUser(c).Username, "recipients.export", "recipient", "", fmt.Sprintf("%d rows", n),
		audit.Params{"rows": strconv.Itoa(n)})
}

// shownMobile is a person's mobile number as the signed-in user may see it: whole for
// operators and admins, who edit people and may call them, masked for viewers
// (directory.MaskMobile).
func shownMobile(c *gin.Context, mobile string) string {
	if u := CurrentUser(c); u != nil && u.Role.Allows(access.RoleOperator) {
		return mobile
	}
	return directory.MaskMobile(mobile)
}

// recipientFromForm reads the person form.
func recipientFromForm(c *gin.Context) directory.Recipient {
	r := directory.Recipient{ExternalID: strings.TrimSpace(c.PostForm("external_id")), Name: c.PostForm("name"),
		OrgType: directory.OrgType(c.PostForm("org_type")), Branch: strings.TrimSpace(c.PostForm("branch")),
		Department: strings.TrimSpace(c.PostForm("department")),
		Email:      strings.TrimSpace(c.PostForm("email")), Mobile: strings.TrimSpace(c.PostForm("mobile")),
		Active: c.PostForm("active") == "true"}
	setAddresses(&r, func(field string) string { return strings.TrimSpace(c.PostForm(field)) })
	return r
}

// setAddresses fills r's user ids on the IM platforms from get, by field name.
func setAddresses(r *directory.Recipient, get func(field string) string) {
	for _, a := range directory.IMAddresses {
		*a.Of(r) = get(a.Field)
	}
}

// NewRecipientForm shows an empty person form.
func (h *Handlers) NewRecipientForm(c *gin.Context) {
	render(c, http.StatusOK, views.RecipientFormPage(page(c, tr(c, "title.new_person"), "recipients"),
		directory.Recipient{OrgType: directory.HeadOffice, Active: true}, false, nil))
}

// CreateRecipient adds a person, with the API's validation.
func (h *Handlers) CreateRecipient(c *gin.Context) {
	r, err := h.Dispatch.Directory().CreateRecipient(c.Request.Context(), actor(c), recipientFromForm(c))
	if errs, ok := fieldErrors(c, err); ok {
		render(c, http.StatusUnprocessableEntity, views.RecipientFormPage(page(c, tr(c, "title.new_person"), "recipients"), r, false, errs))
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.redirectNotice(c, "/recipients", "created", r.Name+" ("+r.ExternalID+")")
}

// storedRecipient loads the person named in the path, or shows 404.
func (h *Handlers) storedRecipient(c *gin.Context) (*directory.Recipient, bool) {
	r, err := h.Store.Directory().RecipientByExternalID(c.Request.Context(), c.Param("id"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "error.no_recipient", "ID", c.Param("id")))
		return nil, false
	}
	return r, true
}

// EditRecipientForm shows a person's form.
func (h *Handlers) EditRecipientForm(c *gin.Context) {
	if r, ok := h.storedRecipient(c); ok {
		render(c, http.StatusOK, views.RecipientFormPage(page(c, r.Name, "recipients"), *r, true, nil))
	}
}

// UpdateRecipient saves a person's changes; the external id stays.
func (h *Handlers) UpdateRecipient(c *gin.Context) {
	old, ok := h.storedRecipient(c)
	if !ok {
		return
	}
	r, err := h.Dispatch.Directory().UpdateRecipient(c.Request.Context(), actor(c), old.ExternalID, recipientFromForm(c))
	if err != nil {
		h.failOr(c, err, func(a answer) {
			render(c, a.Status, views.RecipientFormPage(page(c, old.Name, "recipients"), r, true, a.errs()))
		}, saying(kernel.ErrNotFound, "error.no_recipient", "ID", old.ExternalID))
		return
	}
	h.redirectNotice(c, "/recipients", "saved", r.Name+" ("+r.ExternalID+")")
}

// SetRecipientActive deactivates or reactivates a person.
func (h *Handlers) SetRecipientActive(c *gin.Context) {
	active := c.PostForm("active") == "true"
	r, err := h.Dispatch.Directory().SetRecipientActive(c.Request.Context(), actor(c), c.Param("id"), active)
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "error.no_recipient", "ID", c.Param("id")))
		return
	}
	notice := "deactivated"
	if active {
		notice = "activated"
	}
	h.redirectNotice(c, "/recipients", notice, r.Name+" ("+r.ExternalID+")")
}

// recipientImport is the staff import form, in the language of the request.
func recipientImport(c *gin.Context) views.Import {
	return views.Import{Title: tr(c, "title.import_staff"), Action: "/recipients/import", Back: "/recipients",
		Intro:         tr(c, "recipients.import.intro"),
		Aliases:       tr(c, "recipients.import.aliases"),
		Template:      RecipientTemplatePath,
		TemplateLabel: tr(c, "recipients.import.template"),
		TemplateHint:  tr(c, "recipients.import.template_hint"),
		Columns:       recipientColumns,
		Example:       strings.Join(recipientColumns, ",") + "\n" + tr(c, "recipients.import.example"),
		Encoding:      c.PostForm("encoding")}
}

// RecipientTemplatePath serves a staff CSV file to fill in (RecipientImportTemplate).
const RecipientTemplatePath = "/recipients/template.csv"

// RecipientImportTemplate serves a staff CSV file to fill in: the header, in the
// reader's language (the Chinese column names the import takes for a Chinese reader),
// and one example row marked as such: it starts with #, which the import passes over.
// It is in the import's format and the export's encoding (UTF-8 with a byte order mark,
// which Excel needs to read Chinese).
func (h *Handlers) RecipientImportTemplate(c *gin.Context) {
	var b strings.Builder
	b.WriteString(utf8BOM)
	w := csv.NewWriter(&b)
	header := recipientColumns
	if i18n.Lang(c.Request.Context()) == i18n.Chinese {
		header = make([]string, len(recipientColumns))
		for i, col := range recipientColumns {
			header[i] = col
			for alias, to := range recipientAliases {
				if to == col {
					header[i] = alias
				}
			}
		}
	}
	_ = w.Write(header)
	example, err := csv.NewReader(strings.NewReader(tr(c, "recipients.import.example"))).Read()
	if err == nil {
		example[0] = "#" + tr(c, "recipients.import.example_mark") + " " + example[0]
		_ = w.Write(example)
	}
	w.Flush()
	c.Header("Content-Disposition", `attachment; filename="staff-template.csv"`)
	c.Data(http.StatusOK, "text/csv; charset=utf-8", []byte(b.String()))
}

// RecipientImportForm shows the staff CSV import.
func (h *Handlers) RecipientImportForm(c *gin.Context) {
	render(c, http.StatusOK, views.ImportPage(page(c, tr(c, "title.import_staff"), "recipients"), recipientImport(c), nil))
}

// ImportRecipients previews a staff CSV (mode=preview: every row validated as the API
// validates it and compared with the stored person, nothing written) or applies it
// (mode=apply: one upsert transaction, all rows or none).
func (h *Handlers) ImportRecipients(c *gin.Context) {
	// Columns and the problems of their cells are named as the reader's catalog names
	// the columns of a staff file.
	label := func(col string) string { return tr(c, "recipients.import.col."+col) }
	problem := func(fe *kernel.FieldError) string {
		return tr(c, "import.field_error", "Field", label(fe.Field), "Message", fe.In(c.Request.Context()))
	}
	runImport(h, c, csvImport[directory.Recipient]{
		form: recipientImport(c), page: page(c, tr(c, "title.import_staff"), "recipients"),
		columns: recipientColumns, aliases: recipientAliases, required: []string{"external_id", "name", "org_type"}, maxRows: directory.MaxUpsert,
		label: label,
		item: func(r csvRow) (directory.Recipient, []string) {
			get := func(col string) string { return r.get(recipientColumns, col) }
			p := directory.Recipient{ExternalID: get("external_id"), Name: get("name"), OrgType: csvOrgType(get("org_type")),
				Branch: get("branch"), Department: get("department"), Email: get("email"), Mobile: get("mobile"), Active: true}
			setAddresses(&p, get)
			var problems []string
			for _, fe := range directory.RecipientProblems(&p) {
				if fe.Field == "org_type" {
					fe = kernel.Invalid("org_type", "recipients.invalid.org_type_csv")
				}
				problems = append(problems, problem(fe))
			}
			if a := get("active"); a != "" {
				b, ok := parseActive(a)
				if !ok {
					problems = append(problems, problem(kernel.Invalid("active", "recipients.not_bool_csv")))
				}
				p.Active = b
			}
			return p, problems
		},
		key: func(p directory.Recipient) string { return p.ExternalID },
		duplicate: func(id string, line int) string {
			return tr(c, "recipients.import.duplicate", "ID", id, "Line", line)
		},
		effects: h.Store.Directory().RecipientEffects,
		summary: func(n map[string]int) string {
			return tr(c, "recipients.import.summary", "Create", n[kernel.EffectCreate], "Update", n[kernel.EffectUpdate], "Unchanged", n[kernel.EffectUnchanged])
		},
		apply: func(list []directory.Recipient) error {
			res, err := h.Dispatch.Directory().UpsertRecipients(c.Request.Context(), actor(c), directory.ViaImport, list)
			if err != nil {
				return err
			}
			h.redirectNotice(c, "/recipients", "imported",
				tr(c, "recipients.import.done", "Created", res.Created, "Updated", res.Updated, "Unchanged", res.Unchanged))
			return nil
		},
	})
}
