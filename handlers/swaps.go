package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/dispatch"
	"herald/models"
	"herald/views"
)

// swapLabel names a swap: "Li Wei 2026-12-01 ↔ Zhang Min 2026-12-05".
func swapLabel(sw models.DutySwap, people map[int64]models.Recipient) string {
	return people[sw.AID].Name + " " + sw.ADate + " ↔ " + people[sw.BID].Name + " " + sw.BDate
}

func (h *Handlers) renderSwapForm(c *gin.Context, status int, f views.SwapForm, errs map[string]string) {
	staff, err := h.Store.HeadOfficeStaff(c.Request.Context(), dutyStaffLimit)
	if err != nil {
		h.serverError(c, err)
		return
	}
	render(c, status, views.SwapFormPage(page(c, tr(c, "swap.title"), "duty"), f, staff, errs))
}

// NewSwapForm shows the shift swap form.
func (h *Handlers) NewSwapForm(c *gin.Context) {
	h.renderSwapForm(c, http.StatusOK, views.SwapForm{}, nil)
}

// CreateSwap records a shift swap: four overrides made together.
func (h *Handlers) CreateSwap(c *gin.Context) {
	f := views.SwapForm{A: c.PostForm("a"), ADate: strings.TrimSpace(c.PostForm("a_date")), B: c.PostForm("b"),
		BDate: strings.TrimSpace(c.PostForm("b_date")), Note: strings.TrimSpace(c.PostForm("note"))}
	people := map[int64]models.Recipient{}
	var ids [2]int64
	var err error
	for i, pick := range []struct{ field, ext string }{{"a", f.A}, {"b", f.B}} {
		if pick.ext == "" {
			err = models.Invalid(pick.field, "duty.choose_person_error")
			break
		}
		var found []models.Recipient
		if found, err = h.headOfficeByExternalID(c, "", []string{pick.ext}); err != nil {
			var fe *models.FieldError
			if errors.As(err, &fe) {
				fe.Field = pick.field
			}
			break
		}
		ids[i], people[found[0].ID] = found[0].ID, found[0]
	}
	sw := &models.DutySwap{AID: ids[0], ADate: f.ADate, BID: ids[1], BDate: f.BDate, Note: f.Note, CreatedBy: CurrentUser(c).Username}
	if err == nil {
		err = dispatch.RecordSwap(c.Request.Context(), h.Store, sw, people[ids[0]].Name, people[ids[1]].Name)
	}
	if errs, ok := fieldErrors(c, err); ok {
		h.renderSwapForm(c, http.StatusUnprocessableEntity, f, errs)
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	label := swapLabel(*sw, people)
	h.audit(c, CurrentUser(c).Username, "duty.swap.create", "duty", "swap "+strconv.FormatInt(sw.ID, 10),
		f.A+" "+sw.ADate+" ↔ "+f.B+" "+sw.BDate)
	h.redirectNotice(c, "/duty#overrides", "saved", tr(c, "swap.notice", "Label", label))
}

// DeleteSwap undoes a shift swap: its overrides go together.
func (h *Handlers) DeleteSwap(c *gin.Context) {
	id, _ := strconv.ParseInt(c.Param("id"), 10, 64)
	sw, err := h.Store.DeleteSwap(c.Request.Context(), id)
	if isNotFound(err) || errors.Is(err, models.ErrStateChanged) {
		ErrorPage(c, http.StatusNotFound, "error.no_swap", "ID", c.Param("id"))
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	people, err := h.externalIDs(c, []int64{sw.AID, sw.BID})
	if err != nil {
		h.serverError(c, err)
		return
	}
	h.audit(c, CurrentUser(c).Username, "duty.swap.delete", "duty", "swap "+c.Param("id"),
		people[sw.AID].ExternalID+" "+sw.ADate+" ↔ "+people[sw.BID].ExternalID+" "+sw.BDate)
	h.redirectNotice(c, "/duty#overrides", "deleted", tr(c, "swap.notice", "Label", swapLabel(*sw, people)))
}

// reminderView gathers the duty reminder section.
func (h *Handlers) reminderView(c *gin.Context, cfg *models.ReminderConfig, errs map[string]string) (views.ReminderView, error) {
	ctx := c.Request.Context()
	v := views.ReminderView{CanEdit: CurrentUser(c).Role.Allows(models.RoleOperator), Errors: errs}
	var err error
	if cfg != nil {
		v.Config = *cfg
	} else if v.Config, err = h.Store.DutyReminderConfig(ctx); err != nil {
		return v, err
	}
	if v.Recent, err = h.Store.RecentDutyReminders(ctx, 5); err != nil {
		return v, err
	}
	if !v.CanEdit {
		return v, nil
	}
	if v.Accounts, err = h.Store.EnabledAccounts(ctx); err != nil {
		return v, err
	}
	v.Templates, err = h.Store.Templates(ctx)
	return v, err
}

// SaveDutyReminder sets the duty reminder.
func (h *Handlers) SaveDutyReminder(c *gin.Context) {
	ctx := c.Request.Context()
	cfg := models.ReminderConfig{Enabled: c.PostForm("enabled") != "", Time: strings.TrimSpace(c.PostForm("time")),
		Account: c.PostForm("account"), Template: c.PostForm("template")}
	var err error
	if cfg.Template != "" {
		var t *models.Template
		if t, err = h.Store.TemplateByName(ctx, cfg.Template); err == nil {
			err = dispatch.CheckReminderTemplate(t)
		} else if isNotFound(err) {
			err = models.Invalid("template", "reminder.invalid.template")
		}
	}
	if err == nil {
		u := CurrentUser(c)
		detail := "off"
		if cfg.Enabled {
			detail = "at " + cfg.Time + " through " + cfg.Account + ", template " + cfg.Template
		}
		err = h.Store.SetDutyReminderConfig(ctx, cfg, models.AuditEntry{Actor: u.Username, ActorType: "user", Action: "duty.reminder.set",
			TargetType: "setting", TargetID: models.SettingDutyReminder, Detail: detail, IP: c.ClientIP()})
	}
	if errs, ok := fieldErrors(c, err); ok {
		c.Set(reminderFormKey, reminderForm{cfg: cfg, errs: errs})
		h.renderDuty(c, http.StatusUnprocessableEntity, views.OverrideForm{}, views.HolidayForm{}, nil)
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	h.redirectNotice(c, "/duty#reminder", "saved", tr(c, "reminder.notice"))
}

// reminderFormKey carries a failed reminder form to the duty page it is shown on.
const reminderFormKey = "herald.reminder_form"

type reminderForm struct {
	cfg  models.ReminderConfig
	errs map[string]string
}
