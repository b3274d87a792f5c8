package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"golang.org/x/net/html"

	"herald/access"
	"herald/alert"
	"herald/audit"
	"herald/directory"
	"herald/duty"
	"herald/i18n"
	"herald/inbound"
	"herald/models"
	"herald/sending"
	"herald/simulator"
)

// zhPage is one request of the walk through the Chinese console: who sends it, what,
// and what status it must answer. Paths and form values may name the walk's fixtures
// in braces: {batch}, {message} (sent), {stopped}, {cancelled}, {recipient},
// {recipient_id}, {off_duty_id}, {template}, {account}, {account_id}, {other_account},
// {viewer_id}, {key_id} (an API key with a callback), {chain_batch}, {chain_first} and
// {chain_next} (a fallback chain), {tomorrow}, {holiday}, {workday}.
type zhPage struct {
	as     string // "admin", "viewer" or "" (signed out)
	method string
	path   string
	form   url.Values
	hx     bool // an htmx request (HX-Request: true): the answer is a partial
	status int
	// kind says what the answer is: page (a full page, <html lang="zh-CN">),
	// partial (an htmx fragment), data (JSON or CSV: only the status and the
	// catalogs' lookups are checked).
	kind string
	// want are strings the answer must contain besides, e.g. the id of a field error.
	want []string
}

const (
	kindPage    = "page"
	kindPartial = "partial"
	kindData    = "data"
)

// zhText is the Chinese text the walk composes: it must come back intact.
const zhText = "今晚 22:00 系统维护，请提前保存工作。"

// zhWalk is every console page and htmx partial of web/routes.go, in the order the walk
// requests them (some requests set up what a later one shows: a notice after a redirect).
// Adding a route is one line.
var zhWalk = []zhPage{
	// Signed out.
	{as: "", method: "GET", path: "/login", status: 200, kind: kindPage},
	{as: "", method: "POST", path: "/login", form: url.Values{"username": {"admin"}, "password": {"not-the-password"}}, status: 401, kind: kindPage},

	// Viewer routes, as the admin.
	{as: "admin", method: "GET", path: "/", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/dashboard/live", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "GET", path: "/password", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/password", form: url.Values{"current_password": {"wrong"}, "new_password": {"x"}}, status: 422, kind: kindPage, want: []string{`id="error-current_password"`}},
	{as: "admin", method: "POST", path: "/language", form: url.Values{"language": {"fr"}, "next": {"/"}}, status: 422, kind: kindPage},
	{as: "admin", method: "GET", path: "/batches/{batch}", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/batches/{batch}/progress", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "GET", path: "/messages", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/messages?status=cancelled&priority=high", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/messages?from=not-a-date", status: 422, kind: kindPage},
	{as: "admin", method: "GET", path: "/messages/{message}", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/messages/{cancelled}", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/messages/{stopped}", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/batches/{chain_batch}", status: 200, kind: kindPage, want: []string{`id="batch-reached"`}},
	{as: "admin", method: "GET", path: "/messages/{chain_first}", status: 200, kind: kindPage, want: []string{"data-fallback-next"}},
	{as: "admin", method: "GET", path: "/messages/{chain_next}", status: 200, kind: kindPage, want: []string{"data-fallback-of"}},
	{as: "admin", method: "GET", path: "/messages?status=stopped&error_class=permanent", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/recipients", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/recipients?q=E1&org_type=head_office&active=true", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/recipients/export.csv", status: 200, kind: kindData},
	{as: "admin", method: "GET", path: "/templates", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/templates/{template}/edit", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/duty", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/duty/roster", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "GET", path: "/duty/roster?date={holiday}", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "GET", path: "/duty/roster?date={workday}", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "GET", path: "/audit", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/audit?actor=admin&from=2020-01-01", status: 200, kind: kindPage},

	// Operator routes.
	{as: "admin", method: "GET", path: "/compose", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/compose/content?template={template}", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "GET", path: "/compose/content?template=", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "POST", path: "/compose/preview", hx: true, status: 200, kind: kindPartial,
		form: url.Values{"account": {"{account_id}"}, "recipient": {"{recipient_id}", "{off_duty_id}"}, "content.text": {zhText}, "priority": {"normal"}}},
	{as: "admin", method: "POST", path: "/compose/preview", hx: true, status: 200, kind: kindPartial,
		form: url.Values{"account": {"{account_id}"}, "to_on_duty": {"true"}, "template": {"{template}"}, "variables.task": {"核对总账"}, "send_at": {"{tomorrow}T09:00"}}},
	{as: "admin", method: "POST", path: "/compose/preview", hx: true, status: 422, kind: kindPartial,
		form: url.Values{"account": {"{account_id}"}, "content.text": {""}}},
	{as: "admin", method: "POST", path: "/compose", status: 422, kind: kindPage,
		form: url.Values{"account": {"{account_id}"}, "content.text": {zhText}, "priority": {"normal"}}},
	{as: "admin", method: "POST", path: "/compose", status: 422, kind: kindPage,
		form: url.Values{"account": {"{account_id}"}, "recipient": {"{recipient_id}"}, "content.text": {zhText}, "send_at": {"tomorrow"}}},
	{as: "admin", method: "GET", path: "/messages/resend?status=cancelled", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/messages/resend?status=failed", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/messages/resend?status=stopped", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/messages/{stopped}/retry", status: 303, kind: kindData},
	{as: "admin", method: "GET", path: "/messages/{stopped}", status: 200, kind: kindPage}, // with the notice "retried"
	{as: "admin", method: "GET", path: "/silences/new", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/silences/preview", hx: true, status: 200, kind: kindPartial,
		form: url.Values{"name_0": {"department"}, "value_0": {"营业部"}}},
	{as: "admin", method: "POST", path: "/silences/preview", hx: true, status: 422, kind: kindPartial,
		form: url.Values{"name_0": {"template"}, "value_0": {"disk-("}, "regex_0": {"1"}}},
	{as: "admin", method: "POST", path: "/silences", status: 422, kind: kindPage, want: []string{`id="error-ends_at"`},
		form: url.Values{"name_0": {"department"}, "value_0": {"营业部"}, "comment": {"核心系统升级"}}},
	{as: "admin", method: "POST", path: "/silences", status: 303, kind: kindData,
		form: url.Values{"name_0": {"department"}, "value_0": {"营业部"}, "ends_at": {"{tomorrow}T09:00"}, "comment": {"核心系统升级"}, "on_end": {"release"}}},
	{as: "admin", method: "GET", path: "/silences", status: 200, kind: kindPage}, // with the notice "saved"
	{as: "admin", method: "GET", path: "/recipients/new", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/recipients", status: 422, kind: kindPage, want: []string{`id="error-name"`},
		form: url.Values{"external_id": {"E9001"}, "name": {""}, "org_type": {"branch"}, "active": {"true"}}},
	{as: "admin", method: "POST", path: "/recipients", status: 303, kind: kindData,
		form: url.Values{"external_id": {"E9001"}, "name": {"周杰"}, "org_type": {"branch"}, "branch": {"徐汇支行"}, "department": {"柜面"}, "active": {"true"}}},
	{as: "admin", method: "GET", path: "/recipients", status: 200, kind: kindPage}, // with the notice "created"
	{as: "admin", method: "GET", path: "/recipients/import", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/recipients/import", status: 200, kind: kindPage,
		form: url.Values{"mode": {"preview"}, "csv": {"external_id,name,org_type,branch,department\nE9101,钱多多,branch,浦东支行,信贷\nE1001,Li Wei,head_office,,Operations\n"}}},
	{as: "admin", method: "POST", path: "/recipients/import", status: 422, kind: kindPage,
		form: url.Values{"mode": {"preview"}, "csv": {"external_id,name,org_type\nE9102,,branch\nE9103,孙悟空,space\n"}}},
	{as: "admin", method: "GET", path: "/recipients/{recipient}/edit", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/recipients/{recipient}/edit", status: 422, kind: kindPage, want: []string{`id="error-name"`},
		form: url.Values{"external_id": {"{recipient}"}, "name": {""}, "org_type": {"branch"}, "active": {"true"}}},
	{as: "admin", method: "GET", path: "/recipients/NOPE/edit", status: 404, kind: kindPage},
	{as: "admin", method: "GET", path: "/templates/new", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/templates/preview", hx: true, status: 200, kind: kindPartial,
		form: url.Values{"name": {"maintenance"}, "msg_type": {"text"}, "subject": {"系统维护"}, "body": {"{{.time}} 系统维护：{{.system}}"}, "variables": {"time, system"}, "samples": {"time=22:00\nextra=1"}}},
	{as: "admin", method: "POST", path: "/templates/preview", hx: true, status: 200, kind: kindPartial,
		form: url.Values{"name": {"broken"}, "msg_type": {"text"}, "body": {"{{.task"}, "variables": {"task"}}},
	{as: "admin", method: "POST", path: "/templates", status: 422, kind: kindPage,
		form: url.Values{"name": {"Bad Name"}, "msg_type": {"text"}, "body": {""}}},
	{as: "admin", method: "POST", path: "/templates/{template}/edit", status: 422, kind: kindPage,
		form: url.Values{"name": {"{template}"}, "msg_type": {"text"}, "body": {"{{.task"}, "variables": {"task"}}},
	{as: "admin", method: "POST", path: "/templates/{template}/test", status: 422, kind: kindPage,
		form: url.Values{"name": {"{template}"}, "msg_type": {"text"}, "body": {"x"}, "samples": {"task=核对总账"}}},
	{as: "admin", method: "POST", path: "/duty/slots", status: 422, kind: kindPage,
		form: url.Values{"weekday": {"1"}, "recipient": {"E2001"}}},
	{as: "admin", method: "GET", path: "/duty/holidays/import", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/duty/holidays/import", status: 200, kind: kindPage,
		form: url.Values{"mode": {"preview"}, "csv": {"date,kind,as_weekday,name\n2031-10-01,off,,国庆节\n2031-10-12,workday,7,国庆调休\n"}}},
	{as: "admin", method: "POST", path: "/duty/holidays/import", status: 422, kind: kindPage,
		form: url.Values{"mode": {"preview"}, "csv": {"date,kind,as_weekday,name\n2031-13-01,off,,坏日期\n2031-10-12,workday,x,坏\n"}}},
	{as: "admin", method: "POST", path: "/duty/overrides", status: 422, kind: kindPage,
		form: url.Values{"date": {"not-a-date"}, "recipient": {"E1001"}, "action": {"add"}}},
	{as: "admin", method: "POST", path: "/duty/holidays", status: 422, kind: kindPage,
		form: url.Values{"date": {"2031-01-01"}, "kind": {"workday"}, "name": {"元旦"}}},
	{as: "admin", method: "GET", path: "/duty/calendar", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/duty/calendar?month=2026-10", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/duty/feeds", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/duty/rotations/new", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/duty/rotations", status: 422, kind: kindPage, want: []string{`id="error-members[1]"`},
		form: url.Values{"name": {"白班"}, "turn.0.at": {"1"}, "turn.0.member": {"E1001"}, "turn.1.at": {"1"}, "turn.1.member": {"E2001"}, "start": {"2031-01-01"}, "turn_days": {"1"}, "covers": {"workdays"}}},
	{as: "admin", method: "GET", path: "/duty/rotations/NOPE/edit", status: 404, kind: kindPage},
	{as: "admin", method: "GET", path: "/duty/swaps/new", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/duty/swaps", status: 422, kind: kindPage, want: []string{`id="error-b"`},
		form: url.Values{"a": {"E1001"}, "a_date": {"2031-01-06"}, "b": {"E1001"}, "b_date": {"2031-01-08"}}},
	{as: "admin", method: "GET", path: "/duty/holidays/national", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/duty/holidays/national", status: 200, kind: kindPage, form: url.Values{"mode": {"preview"}, "builtin": {"2026"}}},
	{as: "admin", method: "POST", path: "/duty/holidays/national", status: 422, kind: kindPage, want: []string{`id="error-text"`},
		form: url.Values{"mode": {"preview"}, "text": {"2031-01-01 休 元旦\n2031-13-01 休"}}},
	{as: "admin", method: "POST", path: "/duty/reminder", status: 422, kind: kindPage, want: []string{`id="error-time"`},
		form: url.Values{"enabled": {"1"}, "time": {"晚上"}}},

	// Admin routes.
	{as: "admin", method: "GET", path: "/accounts", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/accounts/usage", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "GET", path: "/accounts/config-fields?platform=tianyuan", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "GET", path: "/accounts/config-fields?platform=zhaohu", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "GET", path: "/accounts/config-fields?platform=wecom", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "GET", path: "/accounts/config-fields?platform=email", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "GET", path: "/accounts/config-fields?platform=webhook", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "GET", path: "/accounts/config-fields?platform=sandbox", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "GET", path: "/accounts/config-fields?platform=tianyuan&account={other_account}", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "GET", path: "/accounts/new", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/accounts", status: 422, kind: kindPage,
		form: url.Values{"name": {"Has Spaces"}, "platform": {"tianyuan"}, "config.base_url": {"ftp://x"}, "limits.per_hour": {"lots"}, "max_attempts": {"50"}}},
	{as: "admin", method: "GET", path: "/accounts/{account}/edit", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/accounts/{other_account}/edit", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/accounts/{account}/edit", status: 422, kind: kindPage,
		form: url.Values{"name": {"{account}"}, "platform": {"sandbox"}, "enabled": {"true"}, "max_attempts": {"50"}, "retry_policy.transient.delay_seconds": {"soon"}}},
	{as: "admin", method: "POST", path: "/accounts/{account}/test", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "POST", path: "/accounts/{other_account}/test", hx: true, status: 200, kind: kindPartial},
	{as: "admin", method: "GET", path: "/accounts/{account}/usage", status: 200, kind: kindData},
	{as: "admin", method: "GET", path: "/users", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/users", status: 422, kind: kindPage,
		form: url.Values{"username": {"x"}, "password": {"short"}, "role": {"viewer"}}},
	{as: "admin", method: "POST", path: "/users/{viewer_id}/password", status: 422, kind: kindPage, form: url.Values{"password": {"short"}}},
	{as: "admin", method: "GET", path: "/api-keys", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/api-keys", status: 422, kind: kindPage, form: url.Values{"name": {""}}},
	{as: "admin", method: "POST", path: "/api-keys", status: 201, kind: kindPage,
		form: url.Values{"name": {"核心系统"}, "scopes": {"send", "read"}}},
	{as: "admin", method: "GET", path: "/api-keys/{key_id}/callback", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/api-keys/{key_id}/callback?state=delivered", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/api-keys/{key_id}/callback", status: 422, kind: kindPage, form: url.Values{"url": {"ftp://example.com/x"}}},
	{as: "admin", method: "POST", path: "/api-keys/{key_id}/callback", status: 200, kind: kindPage,
		form: url.Values{"url": {"http://127.0.0.1:1/events"}, "allow_private_network": {"true"}}},
	{as: "admin", method: "GET", path: "/integrations", status: 200, kind: kindPage}, // none yet
	{as: "admin", method: "GET", path: "/integrations/new", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/integrations", status: 200, kind: kindPage, want: []string{`name="routes[1].policy"`},
		form: url.Values{"name": {"zabbix-zh"}, "format": {"zabbix"}, "route_rows": {"1"}, "more": {"route"}}},
	{as: "admin", method: "POST", path: "/integrations", status: 422, kind: kindPage, want: []string{`id="error-routes[0].policy"`},
		form: url.Values{"name": {"zabbix-zh"}, "format": {"zabbix"}, "route_rows": {"1"}, "routes[0].matcher_rows": {"1"},
			"routes[0].matchers[0].name": {"label:host"}, "routes[0].matchers[0].value": {"核心库"}, "routes[0].platform": {"sandbox"}}},
	{as: "admin", method: "POST", path: "/integrations", status: 422, kind: kindPage, want: []string{`id="error-mapping"`},
		form: url.Values{"name": {"custom-zh"}, "format": {"custom"}, "mapping": {"{"}}},
	{as: "admin", method: "POST", path: "/integrations", status: 201, kind: kindPage, want: []string{`id="zabbix-parameters"`},
		form: url.Values{"name": {"zabbix-zh"}, "format": {"zabbix"}, "notify_on_resolve": {"1"}}},
	{as: "admin", method: "GET", path: "/integrations", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/integrations/zabbix-zh", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/integrations/zabbix-zh/edit", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/integrations/zabbix-zh/edit", status: 303, kind: kindData, form: url.Values{"notify_on_resolve": {""}}},
	{as: "admin", method: "GET", path: "/integrations/zabbix-zh", status: 200, kind: kindPage}, // with the notice "saved"
	{as: "admin", method: "POST", path: "/integrations/zabbix-zh/token", status: 200, kind: kindPage},
	{as: "admin", method: "GET", path: "/heartbeats", status: 200, kind: kindPage}, // one missed, its alert linked
	{as: "admin", method: "GET", path: "/heartbeats/new", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/heartbeats", status: 422, kind: kindPage, want: []string{`id="error-interval"`},
		form: url.Values{"name": {"eod-zh"}, "interval": {"10s"}, "route.policy": {"night-zh"}, "route.platform": {"sandbox"}}},
	{as: "admin", method: "POST", path: "/heartbeats", status: 422, kind: kindPage, want: []string{`id="error-route.policy"`},
		form: url.Values{"name": {"eod-zh"}, "interval": {"24h"}, "route.platform": {"sandbox"}}},
	{as: "admin", method: "POST", path: "/heartbeats", status: 201, kind: kindPage, want: []string{`id="heartbeat-token"`},
		form: url.Values{"name": {"eod-zh"}, "interval": {"24h"}, "grace": {"10m"}, "days": {"workdays"}, "route.policy": {"night-zh"}, "route.platform": {"sandbox"}}},
	{as: "admin", method: "GET", path: "/heartbeats", status: 200, kind: kindPage, want: []string{"等待报到", "已错过", "工作日"}},
	{as: "admin", method: "GET", path: "/heartbeats/eod-zh/edit", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/heartbeats/eod-zh/edit", status: 303, kind: kindData,
		form: url.Values{"interval": {"12h"}, "route.policy": {"night-zh"}, "route.platform": {"sandbox"}}},
	{as: "admin", method: "GET", path: "/heartbeats", status: 200, kind: kindPage}, // with the notice "saved"
	{as: "admin", method: "POST", path: "/heartbeats/eod-zh/token", status: 200, kind: kindPage},
	{as: "admin", method: "POST", path: "/heartbeats/eod-zh/delete", status: 303, kind: kindData},
	{as: "admin", method: "GET", path: "/heartbeats", status: 200, kind: kindPage}, // with the notice "deleted"

	// Error pages.
	{as: "admin", method: "GET", path: "/no-such-page", status: 404, kind: kindPage},
	{as: "admin", method: "GET", path: "/batches/no-such-batch", status: 404, kind: kindPage},
	{as: "admin", method: "GET", path: "/messages/no-such-message", status: 404, kind: kindPage},
	{as: "admin", method: "GET", path: "/templates/no-such-template/edit", status: 404, kind: kindPage},
	{as: "admin", method: "GET", path: "/accounts/no-such-account/edit", status: 404, kind: kindPage},
	{as: "admin", method: "GET", path: "/integrations/no-such-integration", status: 404, kind: kindPage},
	{as: "admin", method: "GET", path: "/heartbeats/no-such-heartbeat/edit", status: 404, kind: kindPage},
	{as: "viewer", method: "GET", path: "/accounts", status: 403, kind: kindPage},
	{as: "viewer", method: "GET", path: "/compose", status: 403, kind: kindPage},
	{as: "viewer", method: "GET", path: "/", status: 200, kind: kindPage},
}

// zhFixtures are the stored things the walk's paths name.
type zhFixtures map[string]string

func (f zhFixtures) fill(s string) string {
	for k, v := range f {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return s
}

// TestConsoleInChineseHasNoEnglishLeft signs in with a Chinese browser and requests every
// console page and htmx partial: each answers as expected, no catalog lookup fails, and
// no English text of the catalogs is left in what a person reads.
func TestConsoleInChineseHasNoEnglishLeft(t *testing.T) {
	t.Parallel()
	catalog := watchCatalog()
	env := testEnv(t)
	env["HERALD_DEFAULT_LANGUAGE"] = i18n.Chinese
	env["HERALD_DEMO"] = "true"
	h := startHerald(t, env)
	ctx := context.Background()
	store := h.App.Store
	fx := zhFixtures{}

	// Fixtures: a viewer, a second account (with a limit that can never be reached, and
	// nothing listening at its address), a holiday and a make-up workday, an API key,
	// a delivered batch with a skipped person, a message the platform refused (stopped)
	// and a cancelled scheduled message.
	vera, err := store.Access().CreateUser(ctx, "vera", "viewer-password-zh", access.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	fx["viewer_id"] = fmt.Sprint(vera.ID)
	other := &sending.Account{Name: "ty-main", Platform: "tianyuan", Enabled: true, AllowPrivateNetwork: true, MaxAttempts: 3,
		Config: map[string]string{"base_url": "http://127.0.0.1:1/api", "token": "zh-walk-token"},
		Limits: sending.Limits{PerSecond: 20, PerMinute: 10}}
	if err := store.Sending().SaveAccount(ctx, other); err != nil {
		t.Fatal(err)
	}
	sandbox, err := store.Sending().AccountByName(ctx, models.SandboxAccountName)
	if err != nil {
		t.Fatalf("demo sandbox account: %v", err)
	}
	fx["account"], fx["account_id"], fx["other_account"] = sandbox.Name, fmt.Sprint(sandbox.ID), other.Name
	loc := h.App.Config.Location
	now := time.Now().In(loc)
	fx["today"] = now.Format(time.DateOnly)
	fx["tomorrow"] = now.AddDate(0, 0, 1).Format(time.DateOnly)
	holiday, workday := now.AddDate(0, 0, 3).Format(time.DateOnly), now.AddDate(0, 0, 4).Format(time.DateOnly)
	fx["holiday"], fx["workday"] = holiday, workday
	six := 6
	if err := store.Duty().SetHolidays(ctx, []duty.Holiday{
		{Date: holiday, Kind: duty.HolidayOff, Name: "测试假日"},
		{Date: workday, Kind: duty.HolidayWorkday, AsWeekday: &six, Name: "测试补班"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Access().CreateAPIKey(ctx, "ERP 对接", "send,read", "admin"); err != nil {
		t.Fatal(err)
	}
	// An escalation policy for the heartbeats' routes, and a heartbeat whose ping was missed.
	if err := alert.Of(store).CreatePolicy(ctx, &alert.EscalationPolicy{Name: "night-zh",
		Steps: []alert.PolicyStep{{Targets: []string{"E2001"}, Wait: "10m"}}}); err != nil {
		t.Fatal(err)
	}
	beats := h.App.Dispatch.Inbound()
	if _, _, err := beats.CreateHeartbeat(ctx, audit.Actor{Name: "admin", Type: audit.ActorUser}, inbound.HeartbeatInput{Name: "missed-zh",
		Interval: "10m", Route: inbound.Route{Policy: "night-zh", Platform: "sandbox"}}); err != nil {
		t.Fatal(err)
	}
	if n, err := beats.CheckHeartbeats(ctx, time.Now().Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("missed heartbeat: %d alerts, %v", n, err)
	}
	people, err := store.Directory().RecipientsByExternalIDs(ctx, []string{"E2001", "E1002"})
	if err != nil || len(people) != 2 {
		t.Fatalf("demo staff: %v %v", people, err)
	}
	byExt := map[string]directory.Recipient{}
	for _, p := range people {
		byExt[p.ExternalID] = p
	}
	fx["recipient"], fx["recipient_id"] = "E2001", fmt.Sprint(byExt["E2001"].ID)
	fx["off_duty_id"] = fmt.Sprint(byExt["E1002"].ID)
	fx["template"] = "task-overdue"
	// E1002 is off duty today, whatever weekday today is.
	today, _ := duty.DateOf(time.Now(), loc)
	if err := store.Duty().SetOverride(ctx, &duty.DutyOverride{Date: today, RecipientID: byExt["E1002"].ID, Action: duty.OverrideRemove, Note: "调休"}); err != nil {
		t.Fatal(err)
	}

	admin, viewer, anon := newBrowser(t, h.URL), newBrowser(t, h.URL), newBrowser(t, h.URL)
	zh := map[string]string{"Accept-Language": "zh-CN,zh;q=0.9"}
	loginAs := func(b *browser, user, password string) {
		t.Helper()
		resp, body := b.Do("POST", "/login", url.Values{"username": {user}, "password": {password}}, zh)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign in as %s: %d\n%s", user, resp.StatusCode, body)
		}
	}
	loginAs(admin, "admin", testAdminPassword)
	loginAs(viewer, "vera", "viewer-password-zh")

	// A batch composed through the console: E2001 receives, E1002 is skipped.
	resp, body := admin.Do("POST", "/compose", url.Values{"account": {fx["account_id"]}, "content.text": {zhText}, "priority": {"normal"},
		"recipient": {fx["recipient_id"], fx["off_duty_id"]}}, zh)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("compose: %d\n%s", resp.StatusCode, body)
	}
	fx["batch"] = strings.TrimPrefix(resp.Header.Get("Location"), "/batches/")
	deadline := time.Now().Add(20 * time.Second)
	for {
		msgs, err := store.MessagesOfBatch(ctx, fx["batch"], 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 1 && msgs[0].Status == models.StatusSent {
			fx["message"] = msgs[0].ID
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %s not sent after 20s: %+v", fx["batch"], msgs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	api := newAPIKey(t, h, "send,read")
	// The key reports its messages' outcomes to a receiver that is not there: its events
	// wait, with the error of the last try.
	cbKey, err := store.Access().LiveAPIKeyByName(ctx, "test-send-read")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Access().SetCallback(ctx, cbKey.ID, &access.CallbackSetting{URL: "http://127.0.0.1:1/events", AllowPrivate: true},
		audit.Entry{Actor: "test", ActorType: "system", Action: "apikey.callback.set"}); err != nil {
		t.Fatal(err)
	}
	fx["key_id"] = fmt.Sprint(cbKey.ID)
	// A message the platform refuses: stopped at once, with its attempt.
	h.App.Sim.SetFaults(simulator.Faults{RejectRate: 1})
	status, sent, _ := api.Call("POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2003"],"content":{"text":"平台拒收"}}`)
	if status != http.StatusAccepted {
		t.Fatalf("send: %d %s", status, sent["_raw"])
	}
	fx["stopped"] = sent["messages"].([]any)[0].(map[string]any)["id"].(string)
	for deadline := time.Now().Add(20 * time.Second); ; {
		m, err := store.MessageByID(ctx, fx["stopped"])
		if err != nil {
			t.Fatal(err)
		}
		if m.Status == models.StatusStopped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %s is %s after 20s, want stopped", m.ID, m.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.App.Sim.SetFaults(simulator.Faults{})
	// A scheduled message, cancelled through the API.
	at := time.Now().Add(2 * time.Hour).Format(time.RFC3339)
	status, sent, _ = api.Call("POST", "/api/v1/messages", `{"platform":"sandbox","priority":"high","recipients":["E2002"],"content":{"text":"稍后发送"},"send_at":"`+at+`"}`)
	if status != http.StatusAccepted {
		t.Fatalf("schedule: %d %s", status, sent["_raw"])
	}
	fx["cancelled"] = sent["messages"].([]any)[0].(map[string]any)["id"].(string)
	if status, body, _ := api.Call("POST", "/api/v1/messages/"+fx["cancelled"]+"/cancel", ""); status != http.StatusOK {
		t.Fatalf("cancel: %d %s", status, body["_raw"])
	}

	// A fallback chain: someone without a Tianyuan address falls back to the sandbox.
	if _, err := store.Directory().UpsertRecipients(ctx, []directory.Recipient{{ExternalID: "E9101", Name: "备用测试", OrgType: directory.Branch,
		Branch: "上海分行", Active: true}}); err != nil {
		t.Fatal(err)
	}
	status, sent, _ = api.Call("POST", "/api/v1/messages", `{"account":"ty-main","recipients":["E9101"],"content":{"text":"备用渠道"},"fallback":["sandbox"]}`)
	if status != http.StatusAccepted {
		t.Fatalf("send with a fallback: %d %s", status, sent["_raw"])
	}
	fx["chain_batch"] = sent["batch_id"].(string)
	fx["chain_first"] = sent["messages"].([]any)[0].(map[string]any)["id"].(string)
	for deadline := time.Now().Add(20 * time.Second); ; {
		m, err := store.MessageByID(ctx, fx["chain_first"])
		if err != nil {
			t.Fatal(err)
		}
		if m.FallbackNext != nil {
			if next, err := store.MessageByID(ctx, *m.FallbackNext); err == nil && next.Status == models.StatusSent {
				fx["chain_next"] = next.ID
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %s has not fallen back to a sent message after 20s", m.ID)
		}
		time.Sleep(100 * time.Millisecond)
	}

	phrases := englishCatalogPhrases(t)
	if m := i18n.MissingSince(catalog); len(m) > 0 {
		t.Errorf("catalog lookups failed while setting up:\n  %s", strings.Join(m, "\n  "))
	}

	type finding struct{ page, what string }
	var english, missing, statuses, problems []finding
	suspects := map[string][]string{}
	for i, p := range zhWalk {
		b := map[string]*browser{"admin": admin, "viewer": viewer, "": anon}[p.as]
		path := fx.fill(p.path)
		var form url.Values
		if p.form != nil {
			form = url.Values{}
			for k, vs := range p.form {
				for _, v := range vs {
					form.Add(k, fx.fill(v))
				}
			}
		}
		header := map[string]string{"Accept-Language": "zh-CN,zh;q=0.9"}
		if p.hx {
			header["HX-Request"] = "true"
		}
		name := p.method + " " + path
		if p.as != "admin" {
			name += " (" + map[string]string{"viewer": "viewer", "": "signed out"}[p.as] + ")"
		}
		mark := i18n.MissingMark()
		resp, body := b.Do(p.method, path, form, header)
		var notFound []string
		for _, m := range i18n.MissingSince(mark) {
			// "zh-CN some.key: message "some.key" not found in language "zh-CN"" is said
			// once for all the keys of a page; other failures as they are.
			lang, rest, _ := strings.Cut(m, " ")
			key, why, _ := strings.Cut(rest, ": ")
			if why == fmt.Sprintf("message %q not found in language %q", key, lang) {
				notFound = append(notFound, key)
				continue
			}
			missing = append(missing, finding{name, m})
		}
		if len(notFound) > 0 {
			missing = append(missing, finding{name, "not in the zh-CN catalogs: " + strings.Join(notFound, ", ")})
		}
		if resp.StatusCode != p.status {
			statuses = append(statuses, finding{name, fmt.Sprintf("status %d, want %d", resp.StatusCode, p.status)})
			continue
		}
		for _, w := range p.want {
			if !strings.Contains(body, w) {
				problems = append(problems, finding{name, "lacks " + w})
			}
		}
		if dir := os.Getenv("HERALD_ZH_DUMP"); dir != "" {
			// HERALD_ZH_DUMP=/tmp/pages keeps every answer, to look at what a finding names.
			file := strings.Trim(regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(name, "_"), "_")
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("%03d-%s.html", i, file)), []byte(body), 0o644)
		}
		if p.kind == kindData {
			continue
		}
		if p.kind == kindPage && !strings.Contains(body, `<html lang="zh-CN">`) {
			problems = append(problems, finding{name, `not <html lang="zh-CN">`})
		}
		if p.kind == kindPartial && strings.Contains(body, "<html") {
			problems = append(problems, finding{name, "an htmx partial answered a whole page"})
		}
		for _, msg := range fieldErrorTexts(body) {
			if !strings.ContainsFunc(msg, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
				problems = append(problems, finding{name, "a field error not in Chinese: " + msg})
			}
		}
		chunks, userData := visibleText(body), zhUserData(t, h)
		for _, hit := range englishIn(chunks, phrases, userData) {
			english = append(english, finding{name, hit})
		}
		suspects[name] = latinLeftovers(chunks, userData)
	}

	report := func(title string, list []finding) {
		if len(list) == 0 {
			return
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "%s (%d):", title, len(list))
		last := ""
		for _, f := range list {
			if f.page != last {
				fmt.Fprintf(&sb, "\n  %s", f.page)
				last = f.page
			}
			fmt.Fprintf(&sb, "\n      %s", f.what)
		}
		t.Error(sb.String())
	}
	report("unexpected answers", statuses)
	report("catalog lookups that failed (i18n.MissingSince)", missing)
	report("English text of the catalogs on Chinese pages: page → English (catalog key) in «text»", english)
	report("other problems", problems)

	// English that is in no catalog cannot be told from user data for sure: it is listed
	// for a person to judge, and does not fail the test.
	var sb strings.Builder
	keys := make([]string, 0, len(suspects))
	for k, v := range suspects {
		if len(v) > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&sb, "\n  %s\n      %s", k, strings.Join(suspects[k], " | "))
	}
	if sb.Len() > 0 {
		t.Logf("Latin-script text on Chinese pages that is in no catalog (hard-coded English? user data?):%s", sb.String())
	}
}

// englishPhrase is a text an English catalog message shows: the whole message, or a
// literal part of it around its {{ }} actions.
type englishPhrase struct {
	key, text string
	// exact: a short message ("Queue", "Ready") found only as the whole of a text.
	exact bool
}

var templateAction = regexp.MustCompile(`\{\{.*?\}\}`)

// englishCatalogPhrases returns the English catalog texts a Chinese page must not show:
// every message of i18n.Keys(i18n.English) (both plural forms), split around its
// template actions, each part of at least two words or eight characters, with letters,
// and not kept as it is by any Chinese message (product names, protocol words, field
// names, which the Chinese catalogs keep too). Shorter messages without actions
// ("Queue", "Ready") are looked for as the whole of a text only.
func englishCatalogPhrases(t *testing.T) []englishPhrase {
	t.Helper()
	en, zh := catalogSources(t, "en"), catalogSources(t, i18n.Chinese)
	var zhAll []string
	for _, forms := range zh {
		zhAll = append(zhAll, forms...)
	}
	for _, k := range i18n.Keys(i18n.Chinese) {
		zhAll = append(zhAll, i18n.In(i18n.Chinese, k))
	}
	// The language switch names each language in itself, on every page: English as
	// "English" (which the English catalog also says, naming the language).
	for _, name := range i18n.LanguageName {
		zhAll = append(zhAll, name)
	}
	keptInChinese := func(s string) bool {
		for _, z := range zhAll {
			if strings.Contains(z, s) {
				return true
			}
		}
		return false
	}
	seen := map[string]int{}
	var out []englishPhrase
	for _, key := range i18n.Keys(i18n.English) {
		forms, ok := en[key]
		if !ok {
			// Not in the files on disk (an edit since the test was built): the rendered
			// message is the best we have.
			forms = []string{i18n.In(i18n.English, key)}
		}
		for _, form := range forms {
			for _, part := range templateAction.Split(form, -1) {
				part = trimPhrase(part)
				if i, dup := seen[part]; dup {
					// The same English in several messages: name a few of them.
					if k := out[i].key; !strings.Contains(k, key) && strings.Count(k, ",") < 2 {
						out[i].key = k + ", " + key
					} else if !strings.HasSuffix(k, "…") && strings.Count(k, ",") >= 2 {
						out[i].key = k + ", …"
					}
					continue
				}
				exact := !phraseWorthChecking(part)
				if exact && (part != trimPhrase(form) || !twoLetters(part)) || keptInChinese(part) {
					continue
				}
				seen[part] = len(out)
				out = append(out, englishPhrase{key, part, exact})
			}
		}
	}
	// Longest first: a page showing "Sign in to Herald" is reported for that, not also
	// for "Sign in".
	slices.SortStableFunc(out, func(a, b englishPhrase) int { return len(b.text) - len(a.text) })
	if len(out) < 20 {
		t.Fatalf("only %d English catalog phrases to look for: the catalogs did not load", len(out))
	}
	return out
}

// catalogSources reads the message sources of one language's catalog files: id → its
// text, or its plural forms.
func catalogSources(t *testing.T, lang string) map[string][]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot, "i18n", "locales", "*."+lang+".toml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no %s catalogs in i18n/locales: %v", lang, err)
	}
	out := map[string][]string{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		if isPluralTable(m) {
			for _, form := range []string{"zero", "one", "two", "few", "many", "other"} {
				if s, ok := m[form].(string); ok {
					out[prefix] = append(out[prefix], s)
				}
			}
			return
		}
		for k, v := range m {
			id := k
			if prefix != "" {
				id = prefix + "." + k
			}
			switch v := v.(type) {
			case string:
				out[id] = []string{v}
			case map[string]any:
				walk(id, v)
			}
		}
	}
	for _, p := range paths {
		buf, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := toml.Unmarshal(buf, &m); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		walk("", m)
	}
	return out
}

func isPluralTable(m map[string]any) bool {
	if len(m) == 0 {
		return false
	}
	for k, v := range m {
		if _, ok := v.(string); !ok {
			return false
		}
		switch k {
		case "zero", "one", "two", "few", "many", "other":
		default:
			return false
		}
	}
	return true
}

// trimPhrase collapses white space and trims the punctuation a part of a message
// starts or ends with next to a {{ }} action.
func trimPhrase(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.TrimFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(`.,;:!?()[]"'“”‘’«»–—-·/…`, r)
	})
}

// phraseWorthChecking: two words or eight characters at least, with a letter. Shorter
// texts ("Save", "sent") are too likely to be a value, a name or part of an identifier.
func phraseWorthChecking(s string) bool {
	hasLetter := strings.IndexFunc(s, func(r rune) bool { return r < utf8.RuneSelf && unicode.IsLetter(r) }) >= 0
	if !hasLetter {
		return false
	}
	return len(strings.Fields(s)) >= 2 || utf8.RuneCountInString(s) >= 8
}

var fieldErrorDiv = regexp.MustCompile(`(?s)<div class="field-error"[^>]*>(.*?)</div>`)

// fieldErrorTexts returns the validation messages shown beside form fields.
func fieldErrorTexts(body string) []string {
	var out []string
	for _, m := range fieldErrorDiv.FindAllStringSubmatch(body, -1) {
		out = append(out, html.UnescapeString(strings.TrimSpace(m[1])))
	}
	return out
}

// twoLetters reports whether s has two Latin letters at least.
func twoLetters(s string) bool {
	n := 0
	for _, r := range s {
		if r < utf8.RuneSelf && unicode.IsLetter(r) {
			n++
		}
	}
	return n >= 2
}

// visibleText returns what a person reads on a page or partial: its text nodes and the
// attributes shown as text (placeholder, title, aria-label, alt, data-confirm,
// hx-confirm, and the value of buttons), each as one chunk with its white space
// collapsed. Left out: script and style; textarea (its content is the user's); code,
// kbd, samp, pre and class="mono" (technical values: field names, addresses, raw
// errors, code samples); and chunks that are one identifier.
func visibleText(body string) []string {
	doc, err := html.ParseWithOptions(strings.NewReader(body), html.ParseOptionEnableScripting(false))
	if err != nil {
		return []string{body}
	}
	var out []string
	add := func(s string) {
		s = strings.Join(strings.Fields(s), " ")
		if s == "" || !strings.Contains(s, " ") && strings.ContainsAny(s, "._:/=@") {
			return // empty, or one identifier: template., per_second, apikey:erp
		}
		out = append(out, s)
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			add(n.Data)
		case html.ElementNode:
			switch n.Data {
			case "script", "style", "textarea", "code", "kbd", "samp", "pre":
				return
			}
			for _, a := range n.Attr {
				if a.Key == "class" && slices.Contains(strings.Fields(a.Val), "mono") {
					return // a technical value: an address, a field name, a raw error
				}
			}
			button := n.Data == "input" && slices.ContainsFunc(n.Attr, func(a html.Attribute) bool {
				return a.Key == "type" && (a.Val == "submit" || a.Val == "button" || a.Val == "reset")
			})
			for _, a := range n.Attr {
				switch a.Key {
				case "placeholder", "title", "aria-label", "alt", "data-confirm", "hx-confirm":
					add(a.Val)
				case "value":
					if button {
						add(a.Val)
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

// identChar reports whether r continues a word or an identifier (per_second,
// message.cancel, task-overdue, /accounts/new): a phrase next to one is not shown as
// English text but is part of something else.
func identChar(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// containsPhrase finds phrase in s as whole words: not inside a longer word or an
// identifier.
func containsPhrase(s, phrase string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], phrase)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(phrase)
		before, _ := utf8.DecodeLastRuneInString(s[:start])
		after, _ := utf8.DecodeRuneInString(s[end:])
		okBefore := start == 0 || !(identChar(before) || before == '.' || before == '/' || before == '-')
		okAfter := end == len(s) || !identChar(after)
		if okAfter && end < len(s) && strings.ContainsRune("./-", after) {
			next, _ := utf8.DecodeRuneInString(s[end+1:])
			okAfter = end+1 == len(s) || !identChar(next)
		}
		if okBefore && okAfter {
			return true
		}
		i = start + 1
	}
}

// withoutUserData blanks the stored values (names, departments, template texts…) out
// of a chunk of text: whatever language they are in, they are not the console's.
func withoutUserData(s string, userData []string) string {
	for _, u := range userData {
		if strings.Contains(s, u) {
			s = replacePhrase(s, u)
		}
	}
	return s
}

func replacePhrase(s, phrase string) string {
	var sb strings.Builder
	for {
		i := strings.Index(s, phrase)
		if i < 0 {
			sb.WriteString(s)
			return sb.String()
		}
		end := i + len(phrase)
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[end:])
		if (i == 0 || !identChar(before)) && (end == len(s) || !identChar(after)) {
			sb.WriteString(s[:i] + " ")
		} else {
			sb.WriteString(s[:end])
		}
		s = s[end:]
	}
}

// englishIn lists the English catalog phrases the chunks show, longest first, each once
// with the chunk it was found in.
func englishIn(chunks []string, phrases []englishPhrase, userData []string) []string {
	var out []string
	for _, chunk := range chunks {
		text := withoutUserData(chunk, userData)
		for _, p := range phrases {
			if p.exact && trimPhrase(text) != p.text || !p.exact && !containsPhrase(text, p.text) {
				continue
			}
			out = append(out, fmt.Sprintf("%q (%s) in «%s»", p.text, p.key, clip(chunk, 120)))
			// Report the longest phrase of a text once, not each shorter one inside it.
			text = replacePhrase(text, p.text)
		}
	}
	return out
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// latinWords are Latin-script words a Chinese page shows on purpose: product and
// platform names, protocol words, units.
var latinWords = map[string]bool{
	"Herald": true, "Asynqmon": true, "Tianyuan": true, "Zhaohu": true, "WeCom": true, "Webhook": true, "webhook": true,
	"API": true, "CSV": true, "JSON": true, "HTTP": true, "HTTPS": true, "URL": true, "SMTP": true, "TLS": true,
	"STARTTLS": true, "SSL": true, "ID": true, "IDs": true, "UTC": true, "Redis": true, "MySQL": true, "SQLite": true,
	"HMAC": true, "SHA": true, "Bearer": true, "Authorization": true, "HEAD": true, "POST": true, "GET": true,
	"PUT": true, "DELETE": true, "UTF": true, "Excel": true, "English": true, "Asia": true, "Shanghai": true,
	"MB": true, "KB": true, "ms": true, "IP": true, "hk": true, "sandbox": true, "CST": true, "Sandbox": true,
}

var latinRun = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])([A-Za-z][A-Za-z0-9_.'’/@:-]*(?:[ ,]+[A-Za-z][A-Za-z0-9_.'’/@:-]*)*)`)

// latinLeftovers lists the runs of Latin-script words of the chunks that are neither user
// data, identifiers, nor latinWords: hard-coded English a catalog does not know.
func latinLeftovers(chunks []string, userData []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, chunk := range chunks {
		text := withoutUserData(chunk, userData)
		for _, m := range latinRun.FindAllStringSubmatch(text, -1) {
			run := m[1]
			var words []string
			for _, w := range strings.FieldsFunc(run, func(r rune) bool { return r == ' ' || r == ',' }) {
				w = strings.TrimRight(w, ".:'’")
				if w == "" || latinWords[w] || strings.ContainsAny(w, "_./@:0123456789") || (strings.Contains(w, "-") && strings.ToLower(w) == w) {
					continue
				}
				words = append(words, w)
			}
			if len(words) == 0 {
				continue
			}
			s := strings.Join(words, " ")
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// zhUserData returns the stored values the pages show that are not the console's text:
// people, departments, branches, templates, accounts, users, API keys, audit details.
func zhUserData(t *testing.T, h *running) []string {
	t.Helper()
	db := h.App.Store.SQL()
	var out []string
	for _, q := range []string{
		"SELECT name FROM recipients", "SELECT external_id FROM recipients", "SELECT branch FROM recipients",
		"SELECT department FROM recipients", "SELECT name FROM templates", "SELECT subject FROM templates",
		"SELECT body FROM templates", "SELECT name FROM accounts", "SELECT username FROM console_users", "SELECT name FROM api_keys",
		"SELECT detail FROM audit_log", "SELECT action FROM audit_log", "SELECT actor FROM audit_log", "SELECT target_id FROM audit_log", "SELECT name FROM holidays",
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Logf("user data %q: %v", q, err)
			continue
		}
		for rows.Next() {
			var s *string
			if err := rows.Scan(&s); err == nil && s != nil && strings.TrimSpace(*s) != "" {
				out = append(out, strings.Join(strings.Fields(*s), " "))
			}
		}
		rows.Close()
	}
	// Values the walk itself types in.
	out = append(out, "Li Wei", "Operations", "Bad Name", "Has Spaces", "ftp://x", "lots", "not-a-date", "tomorrow")
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}
