package handlers

import (
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"herald/audit"
	"herald/phone"
	"herald/views"
)

// maxVoiceCallbackBytes bounds a voice provider's report: a batch of call reports is
// a few kilobytes.
const maxVoiceCallbackBytes = 256 << 10

// switchboard is the calls' service on the handlers' store, alerts and adapters.
func (h *Handlers) switchboard() *phone.Switchboard {
	return phone.NewSwitchboard(h.Store, h.Dispatch.Alerts(), h.Channels, nil, h.Log)
}

// VoiceCallback serves POST /callbacks/voice/:account, where a voice provider reports
// the calls Herald placed through the account (phone.Switchboard.VoiceCallback). Every
// refusal is answered alike, 403 with no body, whatever its reason (an unknown account,
// not a voice account, a forged report, a body too large); a report Herald could not
// act on yet is answered 503, which the provider retries.
func (h *Handlers) VoiceCallback(c *gin.Context) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxVoiceCallbackBytes))
	if err != nil {
		c.Status(http.StatusForbidden)
		return
	}
	by := audit.System(phone.ActorVoiceCallback)
	by.IP = c.ClientIP()
	_, err = h.switchboard().VoiceCallback(c.Request.Context(), by, c.Param("account"), c.Request.Header, c.Request.URL.Query(), body)
	if err != nil {
		if a := h.present(c, err, onAPI); a.Refused {
			c.Status(a.Status)
		} else {
			c.Status(http.StatusServiceUnavailable)
		}
		return
	}
	c.Status(http.StatusOK)
}

// alertCalls puts an alert's calls (which the timeline shows beside their notices),
// and its calls and SMS held by a limit, on its page, with the names of their people.
func (h *Handlers) alertCalls(c *gin.Context, v *views.AlertView) error {
	ctx := c.Request.Context()
	calls, err := h.switchboard().CallsOfAlert(ctx, v.Row.Alert.ID)
	if err != nil || len(calls.Calls)+len(calls.Held) == 0 {
		return err
	}
	v.Calls, v.HeldPeople = calls, map[int64]string{}
	ids := make([]int64, len(calls.Held))
	for i, held := range calls.Held {
		ids[i] = held.RecipientID
	}
	heldPeople, err := h.Store.Directory().RecipientsByIDs(ctx, ids)
	for _, p := range heldPeople {
		v.HeldPeople[p.ID] = views.PersonName(ctx, p.Name, p.ExternalID)
	}
	return err
}
