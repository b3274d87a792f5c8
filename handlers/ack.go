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
	"herald/directory"
	"herald/kernel"
	"herald/views"
)

// The acknowledgment link's page and WeCom's callback: neither has a console session.
// The signed link, or WeCom's signature, is the whole credential, and both act as the
// one person the notice went to.

// AckPage serves GET /ack/:token: an alert notice with its two buttons, 我来处理 and
// 已解决, in the reader's language, and once someone has taken or resolved the alert,
// who did and when, in words for the link's person (views.AckView.Outcome).
func (h *Handlers) AckPage(c *gin.Context) {
	ackHeaders(c)
	n, err := h.Dispatch.Alerts().OpenAckLink(c.Request.Context(), c.Param("token"))
	if err != nil {
		h.ackProblem(c, err)
		return
	}
	render(c, http.StatusOK, views.AckPage(h.ackView(c, n)))
}

// AckAct serves POST /ack/:token: a tap on one of the page's buttons (form field
// action: ack or resolve), answered 303 to the page itself, so reloading it never taps
// again. The page reads the alert afresh and says what came of the tap from the
// alert's own record, not from anything the redirect carries: tapping twice, or after
// someone else, changes nothing, and the page says who was first. A tap on an alert
// nobody answered is refused (409) with the page saying so.
func (h *Handlers) AckAct(c *gin.Context) {
	ackHeaders(c)
	by := audit.System(alert.ActorAckLink)
	by.IP = c.ClientIP()
	token := c.Param("token")
	var n alert.AckNotice
	var err error
	if c.PostForm("group") != "" {
		// A post to a chat group: whoever tapped names themselves, picked from those it
		// @-ed or typed as their staff id.
		as := strings.TrimSpace(c.PostForm("as_id"))
		if as == "" {
			as = c.PostForm("as")
		}
		n, _, err = h.Dispatch.Alerts().ActOnGroupAckLink(c.Request.Context(), by, token, c.PostForm("action"), as)
	} else {
		n, _, err = h.Dispatch.Alerts().ActOnAckLink(c.Request.Context(), by, token, c.PostForm("action"))
	}
	fe, isField := errors.AsType[*kernel.FieldError](err)
	switch {
	case isField && fe.Field == "as" && n.Alert != nil:
		v := h.ackView(c, n)
		v.AsError = fe.In(c.Request.Context())
		render(c, http.StatusUnprocessableEntity, views.AckPage(v))
	case errors.Is(err, alert.ErrAlertEnded):
		// Refused like every other tap that cannot be, on the page answering it.
		v := h.ackView(c, n)
		v.Outcome = "ended"
		render(c, h.present(c, err, onPage).Status, views.AckPage(v))
	case err != nil:
		h.ackProblem(c, err)
	default:
		c.Redirect(http.StatusSeeOther, alert.AckLinkPath+token)
	}
}

// ackOutcome is what the page says of an alert someone has taken or resolved, for the
// person the link belongs to (views.AckView.Outcome): "mine_" when they did it
// themselves, through any of their ways in but the console's, "other_" when someone
// else did. An alert still open, or that nobody answered, has none.
func ackOutcome(n alert.AckNotice) string {
	a := n.Alert
	mine := func(by, via string) bool {
		return n.Recipient != nil && by == n.Recipient.ExternalID && via != alert.AckViaConsole
	}
	switch {
	case a.State == alert.AlertResolved && mine(a.ResolvedBy, a.ResolvedVia):
		return "mine_resolve"
	case a.State == alert.AlertResolved:
		return "other_resolve"
	case a.State == alert.AlertAcknowledged && mine(a.AcknowledgedBy, a.AcknowledgedVia):
		return "mine_ack"
	case a.State == alert.AlertAcknowledged:
		return "other_ack"
	}
	return ""
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
func (h *Handlers) ackView(c *gin.Context, n alert.AckNotice) views.AckView {
	a := n.Alert
	v := views.AckView{Subject: n.Message.Subject, Content: withoutOwnLink(n.Message.Content, c.Param("token")),
		State: a.State, AcknowledgedAt: a.AcknowledgedAt, ResolvedAt: a.ResolvedAt, Outcome: ackOutcome(n)}
	if n.Message.ChatGroupID != nil {
		v.Group = n.Group
		for _, p := range n.Mentioned {
			v.People = append(v.People, views.AckPerson{ID: p.ExternalID, Name: personName(&p)})
		}
	} else {
		v.For = personName(n.Recipient)
	}
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
	if p, ok := h.person(c, id); ok {
		return personName(p)
	}
	return id
}

// person is the staff member of external id id, from the directory's cache; false when
// there is none (or the directory cannot be read: the caller shows the id).
func (h *Handlers) person(c *gin.Context, id string) (*directory.Recipient, bool) {
	people, err := h.Store.Directory().CachedRecipientsByExternalIDs(c.Request.Context(), []string{id})
	if err != nil || len(people) == 0 {
		return nil, false
	}
	return &people[0], true
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
