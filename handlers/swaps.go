package handlers

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/directory"
	"herald/duty"
	"herald/kernel"
	"herald/models"
	"herald/views"
)

// swapLabel names a swap: "Li Wei 2026-12-01 ↔ Zhang Min 2026-12-05".
func swapLabel(sw duty.DutySwap, people map[int64]directory.Recipient) string {
	return people[sw.AID].Name + " " + sw.ADate + " ↔ " + people[sw.BID].Name + " " + sw.BDate
}

func (h *Handlers) renderSwapForm(c *gin.Context, status int, f views.SwapForm, errs map[string]string) {
	staff, err := h.Store.Directory().HeadOfficeStaff(c.Request.Context(), dutyStaffLimit)
	if err != nil {
		h.fail(c, err)
		return
	}
	f.Today = time.Now().In(h.Location).Format(time.DateOnly)
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
	sw, people, err := h.Dispatch.Duty().CreateSwap(c.Request.Context(), actor(c), duty.Swap{A: f.A, ADate: f.ADate, B: f.B, BDate: f.BDate, Note: f.Note})
	if errs, ok := fieldErrors(c, err); ok {
		h.renderSwapForm(c, http.StatusUnprocessableEntity, f, errs)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.redirectNotice(c, "/duty#overrides", "saved", tr(c, "swap.notice", "Label", swapLabel(*sw, swapPeople(people))))
}

// swapPeople is a swap's two people by id, as swapLabel takes them.
func swapPeople(people [2]directory.Recipient) map[int64]directory.Recipient {
	return map[int64]directory.Recipient{people[0].ID: people[0], people[1].ID: people[1]}
}

// DeleteSwap undoes a shift swap: its overrides go together.
func (h *Handlers) DeleteSwap(c *gin.Context) {
	id, _ := strconv.ParseInt(c.Param("id"), 10, 64)
	sw, people, err := h.Dispatch.Duty().DeleteSwap(c.Request.Context(), actor(c), id)
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "error.no_swap", "ID", c.Param("id")))
		return
	}
	h.redirectNotice(c, "/duty#overrides", "deleted", tr(c, "swap.notice", "Label", swapLabel(*sw, swapPeople(people))))
}

// reminderView gathers the duty reminder section.
func (h *Handlers) reminderView(c *gin.Context, cfg *models.ReminderConfig, errs map[string]string) (views.ReminderView, error) {
	ctx := c.Request.Context()
	v := views.ReminderView{CanEdit: CurrentUser(c).Role.Allows(access.RoleOperator), Errors: errs}
	var err error
	if cfg != nil {
		v.Config = *cfg
	} else if v.Config, err = h.Store.Intake().DutyReminderConfig(ctx); err != nil {
		return v, err
	}
	if v.Recent, err = h.Store.Intake().RecentDutyReminders(ctx, 5); err != nil {
		return v, err
	}
	if !v.CanEdit {
		return v, nil
	}
	if v.Accounts, err = h.Store.Sending().EnabledAccounts(ctx); err != nil {
		return v, err
	}
	v.Templates, err = h.Store.Templates().Templates(ctx)
	return v, err
}

// SaveDutyReminder sets the duty reminder.
func (h *Handlers) SaveDutyReminder(c *gin.Context) {
	cfg := models.ReminderConfig{Enabled: c.PostForm("enabled") != "", Time: strings.TrimSpace(c.PostForm("time")),
		Account: c.PostForm("account"), Template: c.PostForm("template")}
	err := h.Dispatch.SetDutyReminder(c.Request.Context(), actor(c), cfg)
	if errs, ok := fieldErrors(c, err); ok {
		c.Set(reminderFormKey, reminderForm{cfg: cfg, errs: errs})
		h.renderDuty(c, http.StatusUnprocessableEntity, views.OverrideForm{}, views.HolidayForm{}, nil)
		return
	}
	if err != nil {
		h.fail(c, err)
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
