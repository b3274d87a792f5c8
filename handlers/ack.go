package handlers

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/alert"
	"herald/audit"
	"herald/channels"
	"herald/directory"
	"herald/kernel"
	"herald/views"
)

// The acknowledgment link's page and WeCom's callback: neither has a console session.
// The signed link, or WeCom's signature, is the whole credential, and both act as the
// one person the notice went to.

// AckPage serves GET /ack/:token: an alert notice with its two buttons, 我来处理 and
// 已解决, in the reader's language.
func (h *Handlers) AckPage(c *gin.Context) {
	ackHeaders(c)
	n, err := h.Dispatch.Alerts().OpenAckLink(c.Request.Context(), c.Param("token"))
	if err != nil {
		h.ackProblem(c, err)
		return
	}
	render(c, http.StatusOK, views.AckPage(h.ackView(c, n, "")))
}

// AckAct serves POST /ack/:token: a tap on one of the page's buttons (form field
// action: ack or resolve). Tapping twice is harmless and says who was first; a tap on
// an alert that has ended (resolved, or nobody answered) changes nothing and answers
// 409 with the page saying so.
func (h *Handlers) AckAct(c *gin.Context) {
	ackHeaders(c)
	by := audit.System(alert.ActorAckLink)
	by.IP = c.ClientIP()
	action := c.PostForm("action")
	n, res, err := h.Dispatch.Alerts().ActOnAckLink(c.Request.Context(), by, c.Param("token"), action)
	switch {
	case errors.Is(err, alert.ErrAlertEnded):
		render(c, h.present(c, err, onPage).Status, views.AckPage(h.ackView(c, n, "ended")))
	case err != nil:
		h.ackProblem(c, err)
	case res.Already && res.State() == alert.AlertResolved:
		render(c, http.StatusConflict, views.AckPage(h.ackView(c, n, ackOutcome(action, res))))
	default:
		render(c, http.StatusOK, views.AckPage(h.ackView(c, n, ackOutcome(action, res))))
	}
}

// ackOutcome is what a tap did, as the page says it (views.AckView.Outcome).
func ackOutcome(action string, res alert.AckResult) string {
	switch {
	case !res.Already && action == channels.ResolveAction:
		return "done_resolve"
	case !res.Already:
		return "done_ack"
	case res.Alert.State == alert.AlertResolved:
		return "already_resolved"
	}
	return "already_ack"
}

// ackHeaders keep the link's page out of caches and search engines, and its address
// (which carries the token) out of any Referer.
func ackHeaders(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	c.Header("Referrer-Policy", "no-referrer")
	c.Header("X-Robots-Tag", "noindex")
}

// ackProblem answers a link that cannot be used, naming nothing from it, with the
// answer of its refusal (dispatch's ErrAck errors: 404 for a link Herald did not sign
// as it stands, 410 for one whose notice was withdrawn or that has expired, 409 for a
// tap on a notice that has not gone out to its person). An action the page does not
// know is the page's fault, not the reader's (400); anything else could not be
// recorded (503: try again).
func (h *Handlers) ackProblem(c *gin.Context, err error) {
	a := h.present(c, err, onPage)
	if _, ok := errors.AsType[*kernel.FieldError](err); ok {
		a.Status, a.Message = http.StatusBadRequest, tr(c, "ack.unknown_action")
	} else if !a.Refused {
		a.Status, a.Message = http.StatusServiceUnavailable, tr(c, "ack.failed")
	}
	render(c, a.Status, views.AckProblem(a.Status, a.Message))
}

// ackView is the page's view of a notice.
func (h *Handlers) ackView(c *gin.Context, n alert.AckNotice, outcome string) views.AckView {
	a := n.Alert
	v := views.AckView{For: personName(n.Recipient), Subject: n.Message.Subject, Content: withoutOwnLink(n.Message.Content, c.Param("token")),
		State: a.State, AcknowledgedAt: a.AcknowledgedAt, ResolvedAt: a.ResolvedAt, Outcome: outcome}
	if a.AcknowledgedBy != "" {
		v.AcknowledgedBy = h.ackerName(c, a.AcknowledgedBy)
	}
	if a.ResolvedBy != "" {
		v.ResolvedBy = h.ackerName(c, a.ResolvedBy)
	}
	return v
}

// withoutOwnLink is a notice's content without the line that carries the link to the
// page showing it.
func withoutOwnLink(content, token string) string {
	own := alert.AckLinkPath + token
	lines := strings.Split(content, "\n")
	lines = slices.DeleteFunc(lines, func(l string) bool { return strings.Contains(l, own) })
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// ackerName is how the page names who acknowledged or resolved: a person's name for
// their external id, else the id as recorded (a console user's name).
func (h *Handlers) ackerName(c *gin.Context, id string) string {
	people, err := h.Store.Directory().CachedRecipientsByExternalIDs(c.Request.Context(), []string{id})
	if err != nil || len(people) == 0 {
		return id
	}
	return personName(&people[0])
}

// personName is a person's name, or their external id when they have none.
func personName(r *directory.Recipient) string {
	if r.Name != "" {
		return r.Name
	}
	return r.ExternalID
}

// maxWeComCallbackBytes bounds a callback's body: WeCom's events are a few hundred
// bytes.
const maxWeComCallbackBytes = 64 << 10

// WeComCallback serves GET and POST /callbacks/wecom/:account, the callback URL of a
// WeCom account's application. GET is WeCom's check of the URL, answered with the
// decrypted echostr; POST carries an event, of which Herald acts on clicks on alert
// cards' buttons (dispatch.WeComCallback). Every refusal is answered alike, 403 with
// no body, whatever its reason (an unknown account, a bad signature, an old timestamp,
// a replay, a body too large); WeCom retries what is not answered 200, so an event
// Herald cannot use is still answered 200, and one it could not act on yet 503.
func (h *Handlers) WeComCallback(c *gin.Context) {
	q := c.Request.URL.Query()
	req := alert.WeComCallbackRequest{Account: c.Param("account"), Signature: q.Get("msg_signature"),
		Timestamp: q.Get("timestamp"), Nonce: q.Get("nonce"), Echostr: q.Get("echostr"), Check: c.Request.Method == http.MethodGet}
	if !req.Check {
		body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxWeComCallbackBytes))
		if err != nil {
			c.Status(http.StatusForbidden)
			return
		}
		req.Body = body
	}
	by := audit.System(alert.ActorWeComCard)
	by.IP = c.ClientIP()
	echo, err := h.Dispatch.Alerts().WeComCallback(c.Request.Context(), by, req)
	switch {
	case err != nil:
		// A refusal's status, without its sentence; anything else could not be acted on
		// yet, which WeCom retries.
		if a := h.present(c, err, onAPI); a.Refused {
			c.Status(a.Status)
		} else {
			c.Status(http.StatusServiceUnavailable)
		}
	case req.Check:
		c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte(echo))
	default:
		c.Status(http.StatusOK)
	}
}
