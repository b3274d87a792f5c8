package views

import (
	"context"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"time"

	"herald/audit"
	"herald/channels"
	"herald/i18n"
)

// An audit entry keeps its values as the code wrote them: codes (tianyuan, admin,
// workdays), weekday numbers, UTC times, external ids. The page shows each in the
// reader's language: a code by its catalog name, a time in Herald's time zone, a person
// as 王芳（E3002）. Names and ids the people chose stay as they were given.

// AuditPeople are the names of the staff an audit page's entries name, by external id.
type AuditPeople map[string]string

// auditWords translates one kind of value.
type auditWords func(ctx context.Context, people AuditPeople, v string) string

// auditValueKinds say how each named value reads, by its name. Values a sentence
// compares with a code ({{if eq .on_end "cancel"}}) are left out: the sentence reads them.
var auditValueKinds = map[string]auditWords{
	"platform": each(" → ", named("platform")), "role": named("role"), "old_role": named("role"),
	"weekday": weekdayName, "as_weekday": weekdayName, "before_as_weekday": weekdayName,
	"language": named("audit.word.language"), "old_language": named("audit.word.language"),
	"msg_type": named("templates.msg_type"), "old_status": named("status"), "error_class": named("class"),
	"interval": durationWords, "grace": durationWords, "days": named("audit.word.days"),
	"scopes":          each(",", named("audit.word.scope")),
	"secrets_entered": each(", ", settingName), "secrets_cleared": each(", ", settingName),
	"fields": each(", ", fieldName), "recipient": person, "a": person, "b": person, "by": person,
	"members": each(", ", person), "targets": each(", ", target), "steps": each("; ", step),
	"matchers": each(", ", matcher), "covers": covers, "limits": each(", ", limit),
	"destination": each(" → ", each(", ", destination)), "quiet_hours": each(" → ", dash),
	"max_attempts": each(" → ", dash), "time": dash, "before_time": dash,
	"browser": named("people.browser"), "system": named("people.system"),
	"mention": named("audit.word.mention"), "fold": named("audit.word.fold"), "person": person,
	"report": named("reports.name"), "period": named("reports.period"),
	"before_report": named("reports.name"), "before_period": named("reports.period"),
}

// auditActionValues translate the values whose reading depends on the action.
var auditActionValues = map[string]map[string]auditWords{
	"alert.step":           {"reason": named("audit.word.skip")},
	"alert.policy.update":  {"before": each("; ", step)},
	"duty.rotation.update": {"before": rotationBefore},
	"settings.update":      {"name": named("audit.word.setting")},
	"duty.week.replace":    {"changes": each("; ", weekChange)},
	"template.update":      {"changed": each(", ", fieldName)},
	"recipient.update":     {"changes": each("; ", fieldChange)},
	"recipient.activate":   {"changes": each("; ", fieldChange)},
	"recipient.deactivate": {"changes": each("; ", fieldChange)},
	"account.test":         {"summary": func(ctx context.Context, _ AuditPeople, v string) string { return storedNote(ctx, v) }},
	"user.language":        {"language": named("audit.word.language"), "old_language": named("audit.word.language")},
	"chat_group.update":    {"changed": each(", ", chatGroupChange)},
	"alert.inhibit_end":    {"state": named("alerts.state")},
}

// auditArgs are an entry's named values as its sentence shows them.
func auditArgs(ctx context.Context, e audit.Entry, people AuditPeople) []any {
	p := e.ParamMap()
	// An entry that names a person keeps their name as it was then: it reads even
	// after they have left the directory.
	named := map[string]string{p["recipient"]: p["name"], p["a"]: p["a_name"], p["b"]: p["b_name"], p["by_id"]: p["by"]}
	if p["by_id"] != "" {
		p["by"] = p["by_id"] // an acknowledgment's person, shown by name and id
	}
	for id, name := range named {
		if id != "" && name != "" && people[id] == "" {
			people = maps.Clone(people)
			if people == nil {
				people = AuditPeople{}
			}
			people[id] = name
		}
	}
	args := make([]any, 0, 2*len(p))
	for k, v := range p {
		words := auditActionValues[e.Action][k]
		if words == nil {
			words = auditValueKinds[k]
		}
		switch {
		case words != nil:
			v = words(ctx, people, v)
		case isStoredTime(v):
			v = timeWords(ctx, v)
		}
		args = append(args, k, v)
	}
	return args
}

// AuditActor is who acted, as the page shows them: a console user by name, an API key
// as such, Herald's own jobs by what they are (升级, 静默, 命令行 …).
func AuditActor(ctx context.Context, e audit.Entry) string {
	kind, name, found := strings.Cut(e.Actor, ":")
	switch {
	case e.ActorType == audit.ActorAPIKey && found:
		return i18n.T(ctx, "audit.word.actor_api_key", "Name", name)
	case e.ActorType != audit.ActorSystem:
		return e.Actor
	case found:
		return i18n.T(ctx, "audit.word.actor_job", "Job", i18n.Name(ctx, "audit.actor", kind), "Name", name)
	}
	return i18n.Name(ctx, "audit.actor", e.Actor)
}

// named translates a code by its catalog group.
func named(group string) auditWords {
	return func(ctx context.Context, _ AuditPeople, v string) string { return i18n.Name(ctx, group, v) }
}

// each translates every part of a list.
func each(sep string, words auditWords) auditWords {
	return func(ctx context.Context, people AuditPeople, v string) string {
		parts := strings.Split(v, sep)
		for i, part := range parts {
			parts[i] = words(ctx, people, strings.TrimSpace(part))
		}
		return strings.Join(parts, sep)
	}
}

// dash reads an empty setting ("-", "none") as none.
func dash(ctx context.Context, _ AuditPeople, v string) string {
	if v == "-" || v == "—" || v == "none" || v == "" {
		return i18n.T(ctx, "common.none")
	}
	return v
}

func weekdayName(ctx context.Context, _ AuditPeople, v string) string {
	if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= 7 {
		return i18n.Weekday(ctx, n)
	}
	return v
}

func durationWords(ctx context.Context, _ AuditPeople, v string) string {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return v
	case d > 0 && d%time.Hour == 0:
		return i18n.T(ctx, "audit.word.hours", "N", int(d.Hours()))
	case d > 0 && d%time.Minute == 0:
		return i18n.T(ctx, "audit.word.minutes", "N", int(d.Minutes()))
	}
	return humanDuration(ctx, d)
}

// person is an external id as 王芳（E3002）, when the directory knows it.
func person(ctx context.Context, people AuditPeople, v string) string {
	if name := people[v]; name != "" {
		return PersonName(ctx, name, v)
	}
	return dash(ctx, people, v)
}

// target is an escalation target: on_duty, rotation:<name>[+1], department:<name>,
// group:<name> or a person.
func target(ctx context.Context, people AuditPeople, v string) string {
	if v == "on_duty" {
		return i18n.T(ctx, "audit.word.target.on_duty")
	}
	kind, name, found := strings.Cut(v, ":")
	if !found {
		return person(ctx, people, v)
	}
	if base, ok := strings.CutSuffix(name, "+1"); ok && kind == "rotation" {
		return i18n.T(ctx, "audit.word.target.rotation_next", "Name", base)
	}
	return i18n.T(ctx, "audit.word.target.named", "Kind", i18n.Name(ctx, "audit.word.target", kind), "Name", name)
}

// step is an escalation step as written for the log: "targets / wait".
func step(ctx context.Context, people AuditPeople, v string) string {
	targets, wait, _ := strings.Cut(v, " / ")
	list := strings.Fields(targets)
	for i, t := range list {
		list[i] = target(ctx, people, t)
	}
	return i18n.T(ctx, "audit.word.step", "Targets", strings.Join(list, "、"), "Wait", durationWords(ctx, people, wait))
}

// matcher is a silence matcher: name, operator, quoted value.
var matcherParts = regexp.MustCompile(`^([a-z_]+)(=~|!~|!=|=)(.*)$`)

func matcher(ctx context.Context, _ AuditPeople, v string) string {
	m := matcherParts.FindStringSubmatch(v)
	if m == nil {
		return v
	}
	value := m[3]
	if unq, err := strconv.Unquote(value); err == nil {
		value = unq
	}
	if m[1] == "platform" {
		value = i18n.Name(ctx, "platform", value)
	}
	return i18n.T(ctx, "audit.word.matcher."+map[string]string{"=": "eq", "!=": "ne", "=~": "re", "!~": "nre"}[m[2]],
		"Field", i18n.Name(ctx, "audit.word.field", m[1]), "Value", value)
}

// covers is the days a rotation covers: every_day, workdays, or "weekdays 1,3,5".
func covers(ctx context.Context, people AuditPeople, v string) string {
	kind, days, found := strings.Cut(v, " ")
	if !found {
		return i18n.Name(ctx, "audit.word.days", v)
	}
	list := strings.Split(days, ",")
	for i, d := range list {
		list[i] = weekdayName(ctx, people, d)
	}
	return i18n.Name(ctx, "audit.word.days", kind) + " " + strings.Join(list, "、")
}

// rotationBefore is a rotation as it was: "members; start; turn days; covers".
func rotationBefore(ctx context.Context, people AuditPeople, v string) string {
	parts := strings.Split(v, "; ")
	if len(parts) != 4 {
		return v
	}
	return i18n.T(ctx, "audit.word.rotation", "Members", each(", ", person)(ctx, people, parts[0]), "Start", parts[1],
		"TurnDays", parts[2], "Covers", covers(ctx, people, parts[3]))
}

// limit is a limit window and its value (or change): "per_second 5", "per_day 0 → 100".
func limit(ctx context.Context, people AuditPeople, v string) string {
	name, value, found := strings.Cut(v, " ")
	if !found {
		return dash(ctx, people, v)
	}
	return i18n.Name(ctx, "accounts.limit", name) + " " + value
}

// destination is an account setting that says where it connects: "base_url http://…".
func destination(ctx context.Context, people AuditPeople, v string) string {
	if v == "no destination settings" {
		return i18n.T(ctx, "audit.word.no_destination")
	}
	key, value, found := strings.Cut(v, " ")
	if !found {
		return v
	}
	return settingName(ctx, people, key) + " " + value
}

// settingName is an account setting's label on the account form.
func settingName(ctx context.Context, _ AuditPeople, key string) string {
	for _, p := range channels.Platforms {
		for _, f := range channels.Fields(p) {
			if f.Key == key && f.Label != "" {
				return i18n.T(ctx, f.Label)
			}
		}
	}
	return key
}

func fieldName(ctx context.Context, _ AuditPeople, v string) string {
	return i18n.Name(ctx, "audit.word.field", v)
}

// chatGroupChange is one setting of a chat group changed: "mention none → on_duty".
func chatGroupChange(ctx context.Context, people AuditPeople, v string) string {
	field, change, found := strings.Cut(v, " ")
	if !found {
		return v
	}
	if words := auditValueKinds[field]; words != nil {
		change = each(" → ", words)(ctx, people, change)
	}
	return fieldName(ctx, people, field) + " " + change
}

// fieldChange is one field of a person's record changed: "name: old → new".
func fieldChange(ctx context.Context, people AuditPeople, v string) string {
	field, change, found := strings.Cut(v, ": ")
	if !found {
		return v
	}
	if field == "active" || field == "org_type" {
		change = each(" → ", named("audit.word.value"))(ctx, people, change)
	}
	return fieldName(ctx, people, field) + "：" + change
}

// weekChange is one weekday of the weekly roster changed: "5: E1001 → E1002, E1003".
func weekChange(ctx context.Context, people AuditPeople, v string) string {
	day, change, found := strings.Cut(v, ": ")
	if !found {
		return v
	}
	return weekdayName(ctx, people, day) + "：" + each(" → ", each(", ", person))(ctx, people, change)
}

// isStoredTime says v is a time as entries store it (RFC 3339).
func isStoredTime(v string) bool {
	_, err := time.Parse(time.RFC3339, v)
	return err == nil
}

// timeWords is a stored time in Herald's time zone.
func timeWords(ctx context.Context, v string) string {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return v
	}
	return fmtTime(ctx, t)
}

// AuditPeopleIDs are the external ids an entry's values may name, for the page to look
// their names up.
func AuditPeopleIDs(e audit.Entry) []string {
	var ids []string
	for k, v := range e.ParamMap() {
		switch k {
		case "recipient", "a", "b", "by":
			ids = append(ids, v)
		case "members", "targets", "steps", "changes":
			for _, f := range strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(" ,;:/→", r) }) {
				ids = append(ids, f)
			}
		}
	}
	return ids
}
