package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"herald/chatgroups"
	"herald/dispatch"
)

// chatGroupJSON is the API's chat group shape.
type chatGroupJSON struct {
	Name    string `json:"name"`
	Account string `json:"account"`
	// Platform is the account's (read-only).
	Platform string `json:"platform,omitempty"`
	ChatID   string `json:"chat_id"`
	Mention  string `json:"mention"`
	// Fold absent: on.
	Fold *bool  `json:"fold"`
	Note string `json:"note"`
}

func toChatGroupJSON(g *chatgroups.ChatGroup) chatGroupJSON {
	fold := g.Fold
	return chatGroupJSON{Name: g.Name, Account: g.Account, Platform: g.Platform, ChatID: g.ChatID, Mention: g.Mention, Fold: &fold, Note: g.Note}
}

func (in chatGroupJSON) input() chatgroups.Input {
	return chatgroups.Input{Name: in.Name, Account: in.Account, ChatID: in.ChatID, Mention: in.Mention, Fold: in.Fold, Note: in.Note}
}

// chatGroups is the chat groups' service, the same for the console and the API.
func (h *Handlers) chatGroups() *chatgroups.Moderator { return dispatch.ChatGroups(h.Dispatch) }

// APIListChatGroups is GET /api/v1/chat-groups.
func (h *Handlers) APIListChatGroups(c *gin.Context) {
	list, err := h.chatGroups().Groups(c.Request.Context(), chatgroups.Filter{Q: c.Query("q")})
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := make([]chatGroupJSON, len(list))
	for i := range list {
		out[i] = toChatGroupJSON(&list[i])
	}
	c.JSON(http.StatusOK, out)
}

// APIGetChatGroup is GET /api/v1/chat-groups/:name.
func (h *Handlers) APIGetChatGroup(c *gin.Context) {
	g, err := h.chatGroups().Group(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, toChatGroupJSON(g))
}

// APICreateChatGroup is POST /api/v1/chat-groups.
func (h *Handlers) APICreateChatGroup(c *gin.Context) {
	var body chatGroupJSON
	if !decodeJSON(c, &body) {
		return
	}
	g, err := h.chatGroups().Create(c.Request.Context(), actor(c), body.input())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusCreated, toChatGroupJSON(g))
}

// APIUpdateChatGroup is PUT /api/v1/chat-groups/:name; a name in the body renames it.
func (h *Handlers) APIUpdateChatGroup(c *gin.Context) {
	var body chatGroupJSON
	if !decodeJSON(c, &body) {
		return
	}
	svc := h.chatGroups()
	old, err := svc.Group(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	if body.Name == "" {
		body.Name = old.Name
	}
	g, err := svc.Update(c.Request.Context(), actor(c), old, body.input())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, toChatGroupJSON(g))
}

// APIDeleteChatGroup is DELETE /api/v1/chat-groups/:name.
func (h *Handlers) APIDeleteChatGroup(c *gin.Context) {
	svc := h.chatGroups()
	g, err := svc.Group(c.Request.Context(), c.Param("name"))
	if err == nil {
		err = svc.Delete(c.Request.Context(), actor(c), g)
	}
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
