package web_test

import (
	"context"
	"html"
	"net/http"
	"regexp"
	"slices"
	"testing"
	"time"

	"herald/i18n"
	"herald/models"
	"herald/sending"
)

// getIn is a GET from a browser that asks for lang.
func (cl *client) getIn(lang, path string) (*http.Response, string) {
	cl.t.Helper()
	return cl.do("GET", path, "", nil, map[string]string{"Accept-Language": lang})
}

// A message held by the account's limits or its quiet hours says so in the reader's
// language on the message list, the batch page and the message page, the stored text
// kept beside the sentence; the stored text itself is unchanged for the API.
func TestMessagesLastErrorInChinese(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	msgs := c.send(nil, "E2001", "E2002", "E2003")
	throttled, quiet, stopped := msgs["E2001"], msgs["E2002"], msgs["E2003"]
	soon := time.Now().Add(90 * time.Second).UTC().Truncate(time.Microsecond)
	later := time.Now().Add(8 * time.Hour).UTC().Truncate(time.Microsecond)
	// The stored forms tasks' sender writes (tasks/send.go: admit, quietHours).
	const capacity, quietHours = "waiting for per_minute capacity", "quiet hours of account sandbox until 2031-01-02 08:00"
	c.finish(throttled.ID, models.Outcome{Status: models.StatusPending, ErrorClass: "throttled", Error: capacity, NextAttemptAt: &soon})
	c.finish(quiet.ID, models.Outcome{Status: models.StatusPending, ErrorClass: sending.ErrorClassQuietHours, Error: quietHours, NextAttemptAt: &later})
	c.stop(stopped.ID)
	viewer := c.as(viewerUser)

	capacityZh := "等待账号的每分钟限额腾出余量"
	quietZh := "账号 sandbox 处于免打扰时段：等待至 2031-01-02 08:00"
	for _, page := range []string{"/messages", "/batches/" + throttled.BatchID, "/batches/" + throttled.BatchID + "/progress"} {
		resp, body := viewer.getIn("zh-CN", page)
		wantStatus(t, page, resp, body, http.StatusOK)
		wantContains(t, page+" in Chinese", body, capacityZh, quietZh, "平台拒收此消息",
			`title="`+capacity+`"`, `title="`+quietHours+`"`, `title="recipient rejected"`,
			`data-class="quiet_hours">免打扰时段<`)
		wantNotContains(t, page+" in Chinese", body, ">"+capacity+"<", ">"+quietHours+"<", ">quiet hours<")
	}
	resp, body := viewer.getIn("en", "/messages")
	wantStatus(t, "/messages in English", resp, body, http.StatusOK)
	wantContains(t, "/messages in English", body, "Waiting until the account&#39;s limit per minute allows another message",
		"Quiet hours of account sandbox: waits until 2031-01-02 08:00", `data-class="quiet_hours">Quiet hours<`)

	_, body = viewer.getIn("zh-CN", "/messages/"+quiet.ID)
	wantContains(t, "quiet message's page", body, quietZh, `data-stored-error>`+quietHours+`<`, "免打扰时段，")

	// The API returns the stored text as it is.
	m, err := c.store.MessageByID(context.Background(), quiet.ID)
	if err != nil || m.LastError != quietHours {
		t.Fatalf("stored last error %q, %v; want %q", m.LastError, err, quietHours)
	}
}

var errorClassOption = regexp.MustCompile(`<option value="([a-z_]+)"[^>]*>([^<]*)</option>`)

// The message list's error-class filter offers every class a message can carry, each
// named in the reader's language, and filters by it.
func TestMessagesFilterOffersEveryErrorClass(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	msgs := c.send(nil, "E2001", "E2002")
	later := time.Now().Add(8 * time.Hour).UTC().Truncate(time.Microsecond)
	c.finish(msgs["E2001"].ID, models.Outcome{Status: models.StatusPending, ErrorClass: sending.ErrorClassQuietHours,
		Error: "quiet hours of account sandbox until 2031-01-02 08:00", NextAttemptAt: &later})
	c.stop(msgs["E2002"].ID)
	viewer := c.as(viewerUser)

	// Every class stored anywhere: channels' classification, quiet hours (tasks' sender)
	// and no address (the intake).
	every := []string{"throttled", "rate_limited", "transient", "auth", "permanent", "quiet_hours", "no_address"}
	_, body := viewer.getIn("zh-CN", "/messages")
	m := regexp.MustCompile(`(?s)<select id="error_class".*?</select>`).FindString(body)
	var offered []string
	for _, o := range errorClassOption.FindAllStringSubmatch(m, -1) {
		offered = append(offered, o[1])
		if want := i18n.In(i18n.Chinese, "class."+o[1]); html.UnescapeString(o[2]) != want {
			t.Errorf("option %s reads %q, want %q", o[1], o[2], want)
		}
	}
	for _, class := range every {
		if !slices.Contains(offered, class) {
			t.Errorf("the error-class filter lacks %s; it offers %v", class, offered)
		}
	}
	resp, body := viewer.getIn("zh-CN", "/messages?error_class=quiet_hours")
	wantStatus(t, "filter by quiet hours", resp, body, http.StatusOK)
	if ids := messageIDs(body); len(ids) != 1 || ids[0] != msgs["E2001"].ID {
		t.Errorf("error_class=quiet_hours lists %v, want only %s", ids, msgs["E2001"].ID)
	}
	wantContains(t, "filter by quiet hours", body, `<option value="quiet_hours" selected>`)
}
