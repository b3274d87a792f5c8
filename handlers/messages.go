package handlers

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"herald/channels"
	"herald/i18n"
	"herald/kernel"
	"herald/models"
	"herald/recall"
	"herald/sending"
	"herald/silence"
	"herald/views"
)

// errorClasses are the error classes a message can carry, for the filter.
var errorClasses = models.ErrorClasses

// maxNameSearch caps the name search of the message list, in characters.
const maxNameSearch = 100

// messageFilter reads the message list's filters with get (the query string, or the
// form of a bulk re-send) and resolves names to ids. Values that cannot match anything
// are reported in errs; nothing field-level is fatal.
func (h *Handlers) messageFilter(c *gin.Context, get func(string) string, accounts []sending.Account) (views.MessageFilter, models.MessageFilter, map[string]string, error) {
	v := views.MessageFilter{Status: get("status"), Platform: get("platform"), Account: get("account"),
		Recipient: strings.TrimSpace(get("recipient")), Name: strings.TrimSpace(get("name")), Batch: strings.TrimSpace(get("batch")), ErrorClass: get("error_class"),
		From: strings.TrimSpace(get("from")), To: strings.TrimSpace(get("to")), Waiting: get("waiting")}
	errs := map[string]string{}
	var f models.MessageFilter
	if slices.Contains(models.AllStatuses, models.Status(v.Status)) {
		f.Status = models.Status(v.Status)
	} else {
		v.Status = ""
	}
	if slices.Contains(models.WaitReasons, v.Waiting) {
		f.Waiting = v.Waiting
	} else {
		v.Waiting = ""
	}
	if slices.Contains(channels.Platforms, v.Platform) {
		f.Platform = v.Platform
	} else {
		v.Platform = ""
	}
	if slices.Contains(errorClasses, v.ErrorClass) {
		f.ErrorClass = v.ErrorClass
	} else {
		v.ErrorClass = ""
	}
	if v.Account != "" {
		i := slices.IndexFunc(accounts, func(a sending.Account) bool { return a.Name == v.Account })
		if i < 0 {
			v.Account = ""
		} else {
			f.AccountID = accounts[i].ID
		}
	}
	if v.Recipient != "" {
		r, err := h.Store.Directory().RecipientByExternalID(c.Request.Context(), v.Recipient)
		switch {
		case isNotFound(err):
			errs["recipient"] = tr(c, "messages.filter.no_recipient", "ID", v.Recipient)
			f.RecipientID = -1 // matches nothing
		case err != nil:
			return v, f, nil, err
		default:
			f.RecipientID = r.ID
		}
	}
	if v.Name != "" {
		if utf8.RuneCountInString(v.Name) > maxNameSearch {
			errs["name"] = tr(c, "messages.filter.long_name", "Max", maxNameSearch)
		}
		named, err := h.Store.Directory().RecipientIDsByName(c.Request.Context(), v.Name)
		if err != nil {
			return v, f, nil, err
		}
		f.Named, f.RecipientName = named, v.Name
	}
	if v.Batch != "" {
		if len(v.Batch) > 36 {
			errs["batch"] = tr(c, "messages.filter.bad_batch")
		}
		f.BatchID = v.Batch
	}
	f.CreatedFrom, f.CreatedBefore = dayRange(c, v.From, v.To, h.Location, errs)
	return v, f, errs, nil
}

// messageQuery is the filter as a query string, to carry into links.
func messageQuery(f views.MessageFilter) url.Values {
	return url.Values{"status": {f.Status}, "platform": {f.Platform}, "account": {f.Account}, "recipient": {f.Recipient},
		"name": {f.Name}, "batch": {f.Batch}, "error_class": {f.ErrorClass}, "from": {f.From}, "to": {f.To}, "waiting": {f.Waiting}}
}

// Messages lists messages, newest first, filtered, one keyset page at a time.
func (h *Handlers) Messages(c *gin.Context) {
	v, errs, ok := h.messagesView(c)
	if !ok {
		return
	}
	v.Notice = h.notice(c)
	status := http.StatusOK
	if len(errs) > 0 {
		status = http.StatusUnprocessableEntity
	}
	render(c, status, views.MessagesPage(page(c, tr(c, "title.messages"), "messages"), v, errs))
}

// MessagesLive renders the list part of the message page again (an htmx partial the page
// polls), for the same filter and page.
func (h *Handlers) MessagesLive(c *gin.Context) {
	if v, _, ok := h.messagesView(c); ok {
		render(c, http.StatusOK, views.MessageList(v))
	}
}

// messagesView reads one page of the message list as the query string asks for it;
// false when it has answered already (a server error).
func (h *Handlers) messagesView(c *gin.Context) (views.Messages, map[string]string, bool) {
	ctx := c.Request.Context()
	accounts, err := h.Store.Sending().Accounts(ctx)
	if err != nil {
		h.fail(c, err)
		return views.Messages{}, nil, false
	}
	vf, f, errs, err := h.messageFilter(c, c.Query, accounts)
	if err != nil {
		h.fail(c, err)
		return views.Messages{}, nil, false
	}
	v := views.Messages{Filter: vf, Accounts: accounts, AccountNames: map[int64]string{}, Platforms: channels.Platforms,
		ErrorClasses: errorClasses, Now: time.Now()}
	for _, a := range accounts {
		v.AccountNames[a.ID] = a.Name
	}
	var after *models.MessageCursor
	if b := c.Query("before"); b != "" {
		if after, err = models.ParseMessageCursor(b); err != nil {
			errs[""] = tr(c, "messages.filter.broken_page_link")
		}
	}
	if v.Rows, err = h.Dispatch.Messages().Messages(ctx, actor(c), f, after, pageSize+1); err != nil {
		h.fail(c, err)
		return views.Messages{}, nil, false
	}
	q := messageQuery(vf)
	if len(v.Rows) > pageSize {
		v.Rows = v.Rows[:pageSize]
		last := v.Rows[len(v.Rows)-1]
		next := messageQuery(vf)
		next.Set("before", models.MessageCursor{CreatedAt: last.CreatedAt, ID: last.ID}.String())
		v.Next = withQuery("/messages", next)
	}
	live := messageQuery(vf)
	if after != nil {
		v.First = withQuery("/messages", q)
		live.Set("before", after.String())
	}
	v.Live = withQuery("/messages/live", live)
	if (f.Status == "" || f.Status == models.StatusStopped) && f.Waiting == "" {
		v.Resend = withQuery("/messages/resend", q)
	}
	return v, errs, true
}

// Message shows one message and its attempts.
func (h *Handlers) Message(c *gin.Context) {
	h.renderMessage(c, http.StatusOK, nil)
}

func (h *Handlers) renderMessage(c *gin.Context, status int, errs map[string]string) {
	ctx := c.Request.Context()
	m, err := h.Store.MessageWithRecipient(ctx, c.Param("id"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "error.no_message", "ID", c.Param("id")))
		return
	}
	d := views.MessageDetail{Message: m, Notice: h.notice(c), Now: time.Now(),
		CanRecall: m.Status == models.StatusSent && channels.RecallWindow(m.Platform) > 0, RecallReach: 1}
	if d.CanRecall && channels.RecallsCall(m.Platform) {
		carried, err := recall.Of(h.Store).SentInCall(ctx, m.BatchID, m.AccountID, m.ProviderMessageID)
		if err != nil {
			h.fail(c, err)
			return
		}
		d.RecallReach = max(len(carried), 1)
	}
	if d.Attempts, err = h.Store.AttemptsOf(ctx, m.ID); err != nil {
		h.fail(c, err)
		return
	}
	if d.Digested, err = h.Store.Intake().DigestedInto(ctx, m.ID, digestNoticesShown); err != nil {
		h.fail(c, err)
		return
	}
	if d.Silences, err = silence.Of(h.Store).SilencesOfMessage(ctx, m.ID); err != nil {
		h.fail(c, err)
		return
	}
	if a, err := h.Store.Sending().AccountByID(ctx, m.AccountID); err == nil {
		d.Account = a.Name
	} else if !isNotFound(err) {
		h.fail(c, err)
		return
	}
	render(c, status, views.MessagePage(page(c, tr(c, "title.message"), "messages"), d, errs))
}

// digestNoticesShown is how many of a digest's notices its page lists.
const digestNoticesShown = 500

// MessageRetry makes a stopped message due again.
func (h *Handlers) MessageRetry(c *gin.Context) {
	h.changeMessageFromConsole(c, "retry")
}

// MessageCancel cancels a pending or failed message.
func (h *Handlers) MessageCancel(c *gin.Context) {
	h.changeMessageFromConsole(c, "cancel")
}

// messageStatus is m's status as the API names it; "" for no message (a refusal before
// it was read).
func messageStatus(m *models.Message) string {
	if m == nil {
		return ""
	}
	return string(m.Status)
}

// statusInSentence is m's status as the console says it inside a sentence, in lower
// case ("The message is pending now").
func statusInSentence(c *gin.Context, m *models.Message) string {
	return strings.ToLower(i18n.Name(c.Request.Context(), "status", messageStatus(m)))
}

func (h *Handlers) changeMessageFromConsole(c *gin.Context, op string) {
	ctx := c.Request.Context()
	id := c.Param("id")
	change := h.Dispatch.Messages().CancelMessage
	if op == "retry" {
		change = h.Dispatch.Messages().RetryMessage
	}
	m, err := change(ctx, actor(c), id)
	if err != nil {
		h.failOr(c, err, func(a answer) { h.renderMessage(c, a.Status, a.errs()) }, saying(kernel.ErrNotFound, "error.no_message", "ID", id),
			saying(kernel.ErrStateChanged, "messages.detail."+op+"_refused", "Status", statusInSentence(c, m)))
		return
	}
	h.redirectNotice(c, "/messages/"+id, map[string]string{"cancel": "cancelled", "retry": "retried"}[op], views.ShortID(id))
}

// resendMax bounds the stopped messages one bulk re-send looks at, so that the request
// ends well within the server's timeouts; running it again re-sends the rest.
const resendMax = 5000

// ResendForm asks to confirm re-sending the stopped messages of a filter, saying how many.
func (h *Handlers) ResendForm(c *gin.Context) {
	ctx := c.Request.Context()
	accounts, err := h.Store.Sending().Accounts(ctx)
	if err != nil {
		h.fail(c, err)
		return
	}
	vf, f, errs, err := h.messageFilter(c, c.Query, accounts)
	if err != nil {
		h.fail(c, err)
		return
	}
	back := withQuery("/messages", messageQuery(vf))
	if len(errs) > 0 {
		c.Redirect(http.StatusSeeOther, back)
		return
	}
	n, err := h.Store.CountStopped(ctx, f)
	if err != nil {
		h.fail(c, err)
		return
	}
	conf := views.Confirm{Title: tr(c, "title.re_send_stopped_messages"), Action: "/messages/resend",
		Button: tr(c, "messages.resend.button", "N", n), Cancel: back}
	if n == 0 {
		conf.Question, conf.Disabled = tr(c, "messages.resend.nothing"), true
	} else {
		conf.Question = i18n.N(ctx, "messages.resend.question", int(n))
	}
	detail := "messages.resend.detail"
	if n > resendMax {
		detail = "messages.resend.detail_capped"
	}
	conf.Detail = tr(c, detail, "Filter", describeFilter(ctx, vf), "Max", resendMax)
	for k, list := range messageQuery(vf) {
		if list[0] != "" {
			conf.Fields = append(conf.Fields, views.Hidden{Name: k, Value: list[0]})
		}
	}
	slices.SortFunc(conf.Fields, func(a, b views.Hidden) int { return strings.Compare(a.Name, b.Name) })
	render(c, http.StatusOK, views.ConfirmPage(page(c, tr(c, "title.re_send_stopped_messages"), "messages"), conf))
}

// describeFilter says in words, in the language of ctx, which messages a filter selects.
func describeFilter(ctx context.Context, f views.MessageFilter) string {
	var parts []string
	for _, p := range [][2]string{{"platform", i18n.Name(ctx, "platform", f.Platform)}, {"account", f.Account},
		{"recipient", f.Recipient}, {"name", f.Name}, {"batch", f.Batch}, {"error_class", i18n.Name(ctx, "class", f.ErrorClass)},
		{"from", f.From}, {"to", f.To}} {
		if p[1] != "" {
			parts = append(parts, i18n.T(ctx, "messages.resend."+p[0], "Value", p[1]))
		}
	}
	if len(parts) == 0 {
		return i18n.T(ctx, "messages.resend.every")
	}
	return strings.Join(parts, i18n.T(ctx, "messages.resend.separator"))
}

// Resend retries the stopped messages of a filter, at most resendMax of them.
func (h *Handlers) Resend(c *gin.Context) {
	ctx := c.Request.Context()
	accounts, err := h.Store.Sending().Accounts(ctx)
	if err != nil {
		h.fail(c, err)
		return
	}
	vf, f, errs, err := h.messageFilter(c, c.PostForm, accounts)
	if err != nil {
		h.fail(c, err)
		return
	}
	back := withQuery("/messages", messageQuery(vf))
	if len(errs) > 0 {
		c.Redirect(http.StatusSeeOther, back)
		return
	}
	resent, err := h.Dispatch.Messages().ResendStopped(ctx, actor(c), f, resendMax)
	if err != nil {
		h.fail(c, err)
		return
	}
	subject := i18n.N(ctx, "messages.resend.subject", resent.Retried)
	if resent.Remaining > 0 {
		subject = tr(c, "messages.resend.still_stopped", "Subject", subject, "Remaining", resent.Remaining)
	}
	h.redirectNotice(c, back, "resent", subject)
}
