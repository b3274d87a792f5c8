package handlers

import (
	"github.com/gin-gonic/gin"

	"herald/alert"
	"herald/chatgroups"
	"herald/phone"
	"herald/views"
)

// maxTimeline caps the notices an alert's timeline shows.
const maxTimeline = 500

// alertTimeline puts every notice of an alert on its page, oldest first, whichever
// batch carries it: the alert's own (its first notice), each step's (by the batch the
// step recorded, or by its call for a call), Herald's own (taken, recovered, nobody
// answered); each with its person by name and id, or its chat group.
func (h *Handlers) alertTimeline(c *gin.Context, v *views.AlertView, steps []alert.AlertStep) error {
	ctx := c.Request.Context()
	a := v.Row.Alert
	msgs, err := alert.Of(h.Store).AlertNotices(ctx, a.ID, maxTimeline)
	if err != nil || len(msgs) == 0 {
		return err
	}
	byBatch := map[string]alert.AlertStep{}
	for _, s := range steps {
		if s.BatchID != "" {
			byBatch[s.BatchID] = s
		}
	}
	calls := map[string]phone.Call{}
	for _, call := range v.Calls.Calls {
		calls[call.MessageID] = call
	}
	var ids, groups []int64
	for _, m := range msgs {
		if m.ChatGroupID != nil {
			groups = append(groups, *m.ChatGroupID)
		} else {
			ids = append(ids, m.RecipientID)
		}
	}
	people, err := h.externalIDs(c, ids)
	if err != nil {
		return err
	}
	chats, err := chatgroups.NewStore(h.Store.DB()).GroupsByIDs(ctx, groups)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		e := views.TimelineEntry{Message: m, Kind: views.NoticeFollowUp}
		switch s, ok := byBatch[m.BatchID]; {
		case m.BatchID == a.BatchID:
			e.Kind = views.NoticeFirst
		case ok:
			e.Kind, e.N, e.Round = views.NoticeStep, s.N, s.Round
		}
		if call, ok := calls[m.ID]; ok {
			e.Kind, e.N, e.Round, e.Call = views.NoticeStep, call.Step, call.Round, &call
		}
		if m.ChatGroupID != nil {
			e.Group = chats[*m.ChatGroupID].Name
		} else {
			p := people[m.RecipientID]
			e.Person = views.PersonName(ctx, p.Name, p.ExternalID)
		}
		v.Timeline = append(v.Timeline, e)
	}
	return nil
}
