package views

import (
	"context"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"

	"herald/audit"
	"herald/i18n"
)

// auditSample are values of every name an audit sentence uses, as the code records
// them: codes, weekday numbers, UTC times, external ids, lists as the services join them.
var auditSample = audit.Params{
	"name": "ops-daily", "id": "42", "username": "wangfang", "platform": "wecom", "note": "年终结算", "version": "3",
	"from": "2026-11-30T01:00:00Z", "until": "2026-11-30T09:30:00Z", "to": "2026-12-01", "request": "POST /monitoring/api/queues/default:pause",
	"recipient": "E3002", "skipped": "1", "targets": "on_duty, rotation:夜班, rotation:夜班+1, department:运营部, group:值班群, E3003",
	"status": "200", "prefix": "ab12", "policy": "核心系统", "people": "3", "old_url": "https://hooks.example/old",
	"old_name": "旧名", "matchers": `template="task-overdue", platform!="wecom", priority=~"hi.*"`, "maker": "ada",
	"external_id": "E3002", "display_name": "逾期提醒", "date": "2026-11-30", "changed": "name, body, msg_type", "cancelled": "2",
	"batch": "01JD3Q8WBATCH", "requested_by": "ada", "new": "5", "error_class": "transient",
	"destination": "base_url http://10.0.0.1:8080, corp_id ww1234 → no destination settings", "count": "3", "weekday": "5",
	"variables": "task, due", "updated": "1", "unchanged": "4", "turn_days": "7", "template": "task-overdue",
	"steps": "on_duty rotation:夜班 / 10m; E3003 / 1h0m0s", "starts": "2026-11-30T01:00:00Z", "start": "2026-11-30",
	"secrets_entered": "secret, token", "secrets_cleared": "password", "routes": "2", "role": "operator", "retry_after": "30",
	"repeat": "1", "remaining": "0", "released": "3", "recipient_id": "17", "quiet_hours": "22:00–07:00 → -",
	"old_status": "pending", "new_name": "新名", "members": "E3002, E3003", "max_recipients": "100", "max_attempts": "3 → 5",
	"limits": "per_second 5 → 10, per_day 0 → 100", "interval": "5m0s", "grace": "1m0s", "expires_at": "2026-11-30T03:00:00Z",
	"expires": "2026-12-30T00:00:00Z", "ends": "2026-11-30T05:00:00Z", "days": "workdays", "created": "2", "covers": "weekdays 1,3,5",
	"by": "E3002", "before_name": "国庆节", "b_name": "李雷", "b_date": "2026-12-02", "b": "E3003", "as_weekday": "6",
	"approved_by": "otto", "account_id": "3", "a_name": "王芳", "a_date": "2026-12-01", "a": "E3002", "window_passed": "0",
	"url": "https://hooks.example/cb", "unsupported": "1", "time": "08:30", "scopes": "send,read,admin", "rows": "7", "round": "1",
	"resent": "2", "rejected": "0", "recalled": "2", "private_network": "true", "old_role": "viewer", "old_language": "-",
	"old": "10", "n": "2", "msg_type": "markdown", "message": "01JD3Q8WMSG", "language": "zh-CN", "hours": "24", "held": "3",
	"format": "alertmanager", "failed": "0", "event": "message.sent", "before_time": "09:00", "before_template": "task-overdue",
	"before_as_weekday": "7", "before_account": "ty-main", "account": "ty-main", "accepted": "5", "fields": "name, mobile, active",
	"reasons": "over_threshold", "person": "E3002", "keys": "1", "mention": "on_duty", "fold": "true", "browser": "wechat", "system": "ios", "ip": "10.1.2.3", "must_change": "true",
	"report": "interruptions", "period": "weekly", "send_to": "E3002, 运营部, 值班群", "on_duty": "true", "last_period": "2026-11-30", "failed_period": "2026-11-23",
	"before_report": "duty", "before_period": "monthly", "before_send_to": "E3003", "before_on_duty": "false",
	"summary": `{"en":"WeCom issued an access token","zh-CN":"企业微信签发了访问令牌"}`,
}

// auditVariants are the values sentences compare with a code, one set per branch.
var auditVariants = []audit.Params{
	{"on_end": "cancel", "approval": "awaiting_approval", "action": "remove", "before": "remove", "kind": "workday", "before_kind": "workday",
		"source": "national", "enabled": "on", "before_enabled": "off", "via": "link", "outcome": "ok", "reason": "recall_unsupported", "notify_on_ack": "true"},
	{"on_end": "release", "action": "add", "before": "add", "kind": "off", "before_kind": "off", "source": "csv", "enabled": "off",
		"before_enabled": "on", "via": "api", "outcome": "failed", "reason": "recall_window_passed", "notify_on_ack": "false"},
	{"via": "wecom", "reason": "recall_request_awaiting"},
	{"via": "rejection", "reason": "recall_request_rejected"},
	{"via": "recall", "reason": "other"},
	{"via": ""},
}

// auditActionSamples are values whose code depends on the action.
var auditActionSamples = map[string]audit.Params{
	"alert.step":           {"reason": "none_reachable"},
	"settings.update":      {"name": "approval_threshold"},
	"duty.week.replace":    {"changes": "5: E3002 → E3002, E3003; 6: — → E3003"},
	"recipient.update":     {"changes": "org_type: branch → head_office; active: true → false; name: 王芳 → 王芳芳"},
	"recipient.activate":   {"changes": "active: false → true"},
	"recipient.deactivate": {"changes": "active: true → false"},
	"alert.policy.update":  {"before": "E3003 / 5m"},
	"duty.rotation.update": {"before": "E3003, E3002; 2026-11-01; 1; workdays"},
	"duty.holidays.set":    {"changed": "1"},
	"duty.holidays.import": {"changed": "1"},
	"chat_group.update":    {"changed": "mention none → on_duty, fold true → false, note - → 年终"},
	"alert.flapping":       {"key": "db1::conn2", "told": "true"},
	"incident.join":        {"alert": "43"},
	"incident.open":        {"source": "alertmanager", "key": "job1=db2"},
	"incident.storm":       {"count": "50"},
	"alert.notice_cap":     {"cap": "6"},
	"alert.inhibit":        {"source": "41", "rule": "db-down"},
	"alert.inhibit_end":    {"state": "resolved"},
	"alert.release":        {"source": "41"},
}

// auditVerbatim are what an audit entry shows as it was given: names and ids people
// chose, addresses, request lines and API event codes. Words with a digit are ids or
// numbers; API and CSV are the words Chinese operators use themselves; Markdown is a
// format's own name, ID and Secret are what the platforms call their settings, iOS is a
// system's name.
var auditVerbatim = []string{"ops-daily", "wangfang", "POST /monitoring/api/queues/default:pause", "https://hooks.example/old",
	"https://hooks.example/cb", "http://10.0.0.1:8080", "task-overdue", "hi.*", "ada", "otto", "ty-main", "alertmanager", "message.sent",
	"task, due", "API", "CSV", "Markdown", "ID", "Secret", "iOS", "db-down"}

var (
	latinWord = regexp.MustCompile(`[A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*`)
	utcTime   = regexp.MustCompile(`\d{2}:\d{2}(:\d{2})?Z|T\d{2}:\d{2}`)
)

// Every action the audit log records reads, in Chinese, with no Latin word outside
// codes, ids and names, and every time in Herald's time zone: its sentence is rendered
// with sample values of each kind and every branch it takes.
func TestAuditSentencesAreChineseThroughout(t *testing.T) {
	t.Parallel()
	zh := chineseInShanghai(t)
	people := AuditPeople{"E3003": "李雷"}
	for _, action := range audit.Actions {
		for _, lang := range i18n.Languages {
			if !i18n.Has(lang, "audit.event."+strings.ReplaceAll(action, ".", "_")) {
				t.Errorf("%s has no sentence in %s", action, lang)
			}
		}
		for _, variant := range auditVariants {
			p := maps.Clone(auditSample)
			maps.Copy(p, variant)
			maps.Copy(p, auditActionSamples[action])
			e := audit.Entry{Action: action}.WithParams(p)
			got := AuditSentence(zh, e, people)
			if got == action {
				t.Errorf("%s shows its code, not a sentence", action)
				continue
			}
			if w := latinOutsideNames(got); w != "" {
				t.Errorf("%s (%s) reads %q: %q is not Chinese", action, variant["via"], got, w)
			}
			if utcTime.MatchString(got) {
				t.Errorf("%s reads %q: a time in UTC", action, got)
			}
		}
	}
}

// latinOutsideNames is the first Latin word of text that is not a name or id.
func latinOutsideNames(text string) string {
	for _, v := range auditVerbatim {
		text = strings.ReplaceAll(text, v, " ")
	}
	for _, w := range latinWord.FindAllString(text, -1) {
		if !strings.ContainsAny(w, "0123456789") {
			return w
		}
	}
	return ""
}

// People show as 王芳（E3002）, the name kept in the entry when the directory has it no
// more; system actors through the catalogs; a time in Herald's time zone.
func TestAuditWords(t *testing.T) {
	t.Parallel()
	zh := chineseInShanghai(t)
	for _, tc := range []struct {
		e    audit.Entry
		want string
	}{
		{audit.Entry{Action: "duty.slot.add"}.WithParams(audit.Params{"recipient": "E3002", "name": "王芳", "weekday": "5"}), "王芳（E3002） 加入每周值班表的星期五"},
		{audit.Entry{Action: "alert.acknowledge"}.WithParams(audit.Params{"id": "9", "by": "王芳", "by_id": "E3002", "via": "link"}), "告警 9 由 王芳（E3002） 确认接手（通过通知中的链接）"},
		{audit.Entry{Action: "user.role"}.WithParams(audit.Params{"username": "ada", "old_role": "viewer", "role": "admin"}), "ada 的角色由 只读用户 改为 管理员"},
	} {
		if got := AuditSentence(zh, tc.e, nil); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.e.Action, got, tc.want)
		}
	}
	for actor, want := range map[audit.Actor]string{
		audit.System("ack-link"): "确认链接", audit.System("escalation"): "升级", audit.System("silences"): "静默",
		audit.System("first-start"): "首次启动", audit.System("cli"): "命令行", audit.System("integration:zabbix"): "集成 zabbix",
		{Name: "apikey:crm", Type: audit.ActorAPIKey}: "API 密钥 crm", {Name: "ada", Type: audit.ActorUser}: "ada",
	} {
		if got := AuditActor(zh, actor.Entry("x", "", "", nil)); got != want {
			t.Errorf("actor %q: %q, want %q", actor.Name, got, want)
		}
	}
	e := audit.Entry{Action: "silence.create"}.WithParams(audit.Params{"id": "7", "starts": "2026-11-30T01:00:00Z", "ends": "2026-11-30T05:00:00Z", "on_end": "release"})
	if got := AuditSentence(zh, e, nil); !strings.Contains(got, "09:00") || !strings.Contains(got, "13:00") {
		t.Errorf("silence times read %q, want them in Asia/Shanghai (09:00 to 13:00)", got)
	}
}

// chineseInShanghai is a page's context in Chinese, times in Asia/Shanghai.
func chineseInShanghai(t *testing.T) context.Context {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	return WithLocation(i18n.WithLang(context.Background(), i18n.Chinese), loc)
}
