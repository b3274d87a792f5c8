package handlers

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-ical"
	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/directory"
	"herald/duty"
	"herald/i18n"
	"herald/views"
)

// The days a duty feed carries, around today.
const (
	feedDaysBack  = 31
	feedDaysAhead = 183
)

// DutyFeedPath is where a feed is served: DutyFeedPath + token + ".ics".
const DutyFeedPath = "/duty/feed/"

// DutyFeeds lists each head-office person's calendar feed.
func (h *Handlers) DutyFeeds(c *gin.Context) {
	h.renderDutyFeeds(c, http.StatusOK, "", "")
}

func (h *Handlers) renderDutyFeeds(c *gin.Context, status int, newFor, newURL string) {
	ctx := c.Request.Context()
	staff, err := h.Store.Directory().HeadOfficeStaff(ctx, dutyStaffLimit)
	if err != nil {
		h.fail(c, err)
		return
	}
	feeds, err := h.Store.Duty().DutyFeeds(ctx)
	if err != nil {
		h.fail(c, err)
		return
	}
	d := views.DutyFeeds{NewFor: newFor, NewURL: newURL, CanEdit: CurrentUser(c).Role.Allows(access.RoleOperator)}
	if newURL == "" {
		d.Notice = h.notice(c)
	}
	for _, p := range staff {
		row := views.FeedRow{Person: p}
		if f, ok := feeds[p.ID]; ok {
			row.Feed = &f
		}
		d.Rows = append(d.Rows, row)
	}
	render(c, status, views.DutyFeedsPage(page(c, tr(c, "feeds.heading"), "duty"), d))
}

// feedPerson reads the :id of a feed route.
func (h *Handlers) feedPerson(c *gin.Context) (*directory.Recipient, bool) {
	id, _ := strconv.ParseInt(c.Param("id"), 10, 64)
	people, err := h.Store.Directory().RecipientsByIDs(c.Request.Context(), []int64{id})
	if err != nil {
		h.fail(c, err)
		return nil, false
	}
	if len(people) == 0 {
		ErrorPage(c, http.StatusNotFound, "error.no_recipient", "ID", c.Param("id"))
		return nil, false
	}
	return &people[0], true
}

// RotateDutyFeed makes a new feed address for a person (the old one stops working) and
// shows it once.
func (h *Handlers) RotateDutyFeed(c *gin.Context) {
	p, ok := h.feedPerson(c)
	if !ok {
		return
	}
	token, err := h.Dispatch.Duty().RotateDutyFeed(c.Request.Context(), actor(c), p.ID)
	if _, bad := fieldErrors(c, err); bad {
		ErrorPage(c, http.StatusUnprocessableEntity, "duty.branch_staff", "ID", p.ExternalID)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	scheme := "http"
	if c.Request.TLS != nil || c.GetHeader("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	h.renderDutyFeeds(c, http.StatusOK, p.Name, scheme+"://"+c.Request.Host+DutyFeedPath+token+".ics")
}

// DeleteDutyFeed turns a person's feed off.
func (h *Handlers) DeleteDutyFeed(c *gin.Context) {
	p, ok := h.feedPerson(c)
	if !ok {
		return
	}
	err := h.Dispatch.Duty().DeleteDutyFeed(c.Request.Context(), actor(c), p.ID)
	if err != nil && !isNotFound(err) {
		h.fail(c, err)
		return
	}
	h.redirectNotice(c, "/duty/feeds", "deleted", tr(c, "feeds.notice", "Name", p.Name))
}

// DutyFeed serves a person's duty days as iCalendar, to whoever has the secret address:
// one all-day event a day on duty, from a month back to six months ahead.
func (h *Handlers) DutyFeed(c *gin.Context) {
	token, ok := strings.CutSuffix(c.Param("file"), ".ics")
	if !ok {
		c.Status(http.StatusNotFound)
		return
	}
	ctx := c.Request.Context()
	p, err := h.Store.Duty().DutyFeedOwner(ctx, token)
	if isNotFound(err) {
		c.Status(http.StatusNotFound)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	now := time.Now().In(h.Location)
	from, to := now.AddDate(0, 0, -feedDaysBack).Format(time.DateOnly), now.AddDate(0, 0, feedDaysAhead).Format(time.DateOnly)
	rosters, err := duty.Rosters(ctx, h.Store.Duty(), from, to)
	if err != nil {
		h.fail(c, err)
		return
	}
	cal := ical.NewCalendar()
	cal.Props.SetText(ical.PropVersion, "2.0")
	cal.Props.SetText(ical.PropProductID, "-//Herald//Duty calendar//EN")
	cal.Props.SetText(ical.PropCalendarScale, "GREGORIAN")
	cal.Props.SetText("X-WR-CALNAME", i18n.T(ctx, "feeds.calendar_name", "Name", p.Name))
	cal.Props.SetText("X-PUBLISHED-TTL", "PT1H")
	cal.Props.SetText(ical.PropRefreshInterval, "PT1H")
	cal.Props.Get(ical.PropRefreshInterval).SetValueType(ical.ValueDuration)
	stamp := now.UTC()
	for _, r := range rosters {
		if !r.OnDuty[p.ID] {
			continue
		}
		day, _ := time.Parse(time.DateOnly, r.Date)
		ev := ical.NewEvent()
		ev.Props.SetText(ical.PropUID, r.Date+"-"+p.ExternalID+"@herald-duty")
		ev.Props.SetDateTime(ical.PropDateTimeStamp, stamp)
		ev.Props.SetDate(ical.PropDateTimeStart, day)
		ev.Props.SetDate(ical.PropDateTimeEnd, day.AddDate(0, 0, 1))
		ev.Props.SetText(ical.PropSummary, i18n.T(ctx, "feeds.summary"))
		ev.Props.SetText(ical.PropDescription, views.SourceLabel(ctx, r.Source[p.ID]))
		ev.Props.SetText(ical.PropTransparency, "TRANSPARENT")
		cal.Children = append(cal.Children, ev.Component)
	}
	if len(cal.Children) == 0 {
		// A calendar must hold a component: with no duty days, it describes the time zone
		// the dates are in.
		tz := ical.NewComponent(ical.CompTimezone)
		tz.Props.SetText(ical.PropTimezoneID, h.Location.String())
		std := ical.NewComponent(ical.CompTimezoneStandard)
		std.Props.SetDateTime(ical.PropDateTimeStart, time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC))
		_, offset := now.Zone()
		std.Props.SetText(ical.PropTimezoneOffsetFrom, utcOffset(offset))
		std.Props.SetText(ical.PropTimezoneOffsetTo, utcOffset(offset))
		tz.Children = append(tz.Children, std)
		cal.Children = append(cal.Children, tz)
	}
	var buf bytes.Buffer
	if err := ical.NewEncoder(&buf).Encode(cal); err != nil {
		h.fail(c, err)
		return
	}
	c.Header("Cache-Control", "private, max-age=300")
	c.Data(http.StatusOK, "text/calendar; charset=utf-8", buf.Bytes())
}

// utcOffset writes a UTC offset in seconds as iCalendar does (+0800).
func utcOffset(seconds int) string {
	sign := '+'
	if seconds < 0 {
		sign, seconds = '-', -seconds
	}
	return fmt.Sprintf("%c%02d%02d", sign, seconds/3600, seconds%3600/60)
}
