package handlers

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/channels"
	"herald/chatgroups"
	"herald/kernel"
	"herald/views"
)

// The console's 群 page, reached from the accounts page (the navigation keeps to one
// row at 1366 px): every change goes through the chat groups' service
// (h.chatGroups()), as the API's does.

// ChatGroups lists the chat groups, searched by name, chat id or note, a page at a time.
func (h *Handlers) ChatGroups(c *gin.Context) {
	v := views.ChatGroups{Q: strings.TrimSpace(c.Query("q")), Notice: h.notice(c)}
	after := c.Query("after")
	list, err := h.chatGroups().Groups(c.Request.Context(), chatgroups.Filter{Q: v.Q, After: after, Limit: pageSize + 1})
	if err != nil {
		h.fail(c, err)
		return
	}
	q := url.Values{"q": {v.Q}}
	if len(list) > pageSize {
		list = list[:pageSize]
		next := url.Values{"q": {v.Q}, "after": {list[len(list)-1].Name}}
		v.Next = withQuery("/chat-groups", next)
	}
	if after != "" {
		v.First = withQuery("/chat-groups", q)
	}
	v.Groups = list
	render(c, http.StatusOK, views.ChatGroupsPage(page(c, tr(c, "chatgroups.title"), "chat_groups"), v))
}

// NewChatGroupForm starts a chat group: @ whoever is on duty, folding on.
func (h *Handlers) NewChatGroupForm(c *gin.Context) {
	h.renderChatGroupForm(c, http.StatusOK, views.ChatGroupForm{Mention: chatgroups.MentionOnDuty, Fold: true}, nil)
}

// EditChatGroupForm shows a chat group to change or delete.
func (h *Handlers) EditChatGroupForm(c *gin.Context) {
	g, err := h.chatGroups().Group(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "chatgroups.no_group"))
		return
	}
	f := views.ChatGroupForm{Original: g.Name, Name: g.Name, Account: g.Account, ChatID: g.ChatID, Mention: g.Mention, Fold: g.Fold, Note: g.Note}
	h.renderChatGroupForm(c, http.StatusOK, f, nil)
}

// CreateChatGroup saves a new chat group.
func (h *Handlers) CreateChatGroup(c *gin.Context) {
	f := chatGroupFormOf(c, "")
	if _, err := h.chatGroups().Create(c.Request.Context(), actor(c), chatGroupInputOf(f)); err != nil {
		h.chatGroupFormFailed(c, f, err)
		return
	}
	h.redirectNotice(c, "/chat-groups", "created", f.Name)
}

// UpdateChatGroup saves a chat group's changes.
func (h *Handlers) UpdateChatGroup(c *gin.Context) {
	svc := h.chatGroups()
	old, err := svc.Group(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "chatgroups.no_group"))
		return
	}
	f := chatGroupFormOf(c, old.Name)
	if _, err := svc.Update(c.Request.Context(), actor(c), old, chatGroupInputOf(f)); err != nil {
		h.chatGroupFormFailed(c, f, err)
		return
	}
	h.redirectNotice(c, "/chat-groups", "saved", f.Name)
}

// DeleteChatGroup removes a chat group; posts made to it stay.
func (h *Handlers) DeleteChatGroup(c *gin.Context) {
	svc := h.chatGroups()
	g, err := svc.Group(c.Request.Context(), c.Param("name"))
	if err == nil {
		err = svc.Delete(c.Request.Context(), actor(c), g)
	}
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "chatgroups.no_group"))
		return
	}
	h.redirectNotice(c, "/chat-groups", "deleted", g.Name)
}

// chatGroupFormOf reads the chat group form; original names the group edited.
func chatGroupFormOf(c *gin.Context, original string) views.ChatGroupForm {
	return views.ChatGroupForm{Original: original, Name: strings.TrimSpace(c.PostForm("name")), Account: c.PostForm("account"),
		ChatID: strings.TrimSpace(c.PostForm("chat_id")), Mention: c.PostForm("mention"), Fold: c.PostForm("fold") != "",
		Note: strings.TrimSpace(c.PostForm("note"))}
}

func chatGroupInputOf(f views.ChatGroupForm) chatgroups.Input {
	fold := f.Fold
	return chatgroups.Input{Name: f.Name, Account: f.Account, ChatID: f.ChatID, Mention: f.Mention, Fold: &fold, Note: f.Note}
}

// chatGroupFormFields are the fields the form shows an error beside.
var chatGroupFormFields = regexp.MustCompile(`^(name|account|chat_id|mention|note)$`)

// chatGroupFormFailed shows the form again with err beside its field.
func (h *Handlers) chatGroupFormFailed(c *gin.Context, f views.ChatGroupForm, err error) {
	h.failOr(c, err, func(a answer) {
		field := a.Field
		if !chatGroupFormFields.MatchString(field) {
			field = ""
		}
		h.renderChatGroupForm(c, a.Status, f, map[string]string{field: a.Message})
	}, saying(kernel.ErrNotFound, "chatgroups.no_group"))
}

// renderChatGroupForm shows the form with the accounts that can post to groups.
func (h *Handlers) renderChatGroupForm(c *gin.Context, status int, f views.ChatGroupForm, errs map[string]string) {
	accounts, err := h.Store.Sending().Accounts(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	var choices []views.ChatGroupAccount
	for _, a := range accounts {
		for _, p := range channels.GroupPlatforms() {
			if a.Platform == p {
				choices = append(choices, views.ChatGroupAccount{Name: a.Name, Platform: a.Platform, Robot: channels.IsRobot(p)})
			}
		}
	}
	title := tr(c, "chatgroups.new")
	if f.Original != "" {
		title = tr(c, "chatgroups.edit_title", "Name", f.Original)
	}
	render(c, status, views.ChatGroupFormPage(page(c, title, "chat_groups"), f, choices, errs))
}
