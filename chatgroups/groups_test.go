package chatgroups_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"herald/audit"
	"herald/channels"
	"herald/chatgroups"
	"herald/duty"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
	"herald/sending"
)

// fixture is a chat groups' service on a fresh database with the demo staff and duty
// week, a WeCom application, a DingTalk robot and a sandbox account.
type fixture struct {
	store *models.Store
	svc   *chatgroups.Moderator
	by    audit.Actor
	now   time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	s := testenv.Store(t)
	if err := s.SeedDemo(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range []*sending.Account{
		{Name: "wecom-app", Platform: "wecom", Enabled: true, Config: map[string]string{"corp_id": "c", "agent_id": "1", "secret": "s"}},
		{Name: "ding-robot", Platform: channels.DingTalkBot, Enabled: true, Config: map[string]string{}},
		{Name: "feishu-robot", Platform: channels.FeishuBot, Enabled: true, Config: map[string]string{}},
		{Name: "sandbox-one", Platform: "sandbox", Enabled: true, Config: map[string]string{}},
	} {
		if err := s.Sending().CreateAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{store: s, by: audit.Actor{Name: "admin1", Type: audit.ActorUser, Person: "admin1"}}
	planner := duty.NewService(s.Duty(), time.UTC, func() time.Time { return f.now }, slog.New(slog.DiscardHandler), nil)
	f.svc = chatgroups.NewService(chatgroups.NewStore(s.DB()), s.Sending(), s.Directory(), planner)
	return f
}

// entries counts the audit entries of action.
func (f *fixture) entries(t *testing.T, action string) int {
	t.Helper()
	list, err := f.store.AuditLog().List(context.Background(), audit.Filter{Action: action}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

// rows counts the chat groups stored.
func (f *fixture) rows(t *testing.T) int {
	t.Helper()
	list, err := f.svc.Groups(context.Background(), chatgroups.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

func fieldOf(err error) string {
	if fe, ok := errors.AsType[*kernel.FieldError](err); ok {
		return fe.Field
	}
	return ""
}

func TestChatGroupChangesAreValidatedAndAudited(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	off := false
	good := chatgroups.Input{Name: "ops-core", Account: "wecom-app", ChatID: "wrOpsCore", Mention: "on_duty", Note: "operations"}
	with := func(change func(*chatgroups.Input)) chatgroups.Input {
		in := good
		change(&in)
		return in
	}
	for _, tc := range []struct {
		name  string
		in    chatgroups.Input
		field string
	}{
		{"unknown account", with(func(in *chatgroups.Input) { in.Account = "nope" }), "account"},
		{"no account", with(func(in *chatgroups.Input) { in.Account = "" }), "account"},
		{"account that cannot post to groups", with(func(in *chatgroups.Input) { in.Account = "sandbox-one" }), "account"},
		{"app chat without chat id", with(func(in *chatgroups.Input) { in.ChatID = "" }), "chat_id"},
		{"bad name", with(func(in *chatgroups.Input) { in.Name = "Ops Core" }), "name"},
		{"bad mention", with(func(in *chatgroups.Input) { in.Mention = "everyone" }), "mention"},
		{"control character in note", with(func(in *chatgroups.Input) { in.Note = "a\x00b" }), "note"},
	} {
		_, err := f.svc.Create(ctx, f.by, tc.in)
		if got := fieldOf(err); got != tc.field {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.field)
		}
	}
	if n := f.rows(t); n != 0 {
		t.Fatalf("refused creates wrote %d groups", n)
	}
	if n := f.entries(t, "chat_group.create"); n != 0 {
		t.Fatalf("refused creates wrote %d audit entries", n)
	}

	g, err := f.svc.Create(ctx, f.by, good)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Fold || g.Platform != "wecom" || g.Address() != "wrOpsCore" {
		t.Errorf("created %+v", g)
	}
	if _, err := f.svc.Create(ctx, f.by, good); fieldOf(err) != "name" {
		t.Errorf("a second group of the same name: %v", err)
	}
	robot, err := f.svc.Create(ctx, f.by, chatgroups.Input{Name: "dba", Account: "ding-robot", ChatID: "ignored", Fold: &off})
	if err != nil {
		t.Fatal(err)
	}
	if robot.ChatID != "" || robot.Address() != "dba" || robot.Fold || robot.Mention != chatgroups.MentionNone {
		t.Errorf("robot group %+v", robot)
	}
	if n := f.entries(t, "chat_group.create"); n != 2 {
		t.Errorf("%d create entries, want 2", n)
	}

	read, err := f.svc.Group(ctx, "ops-core")
	if err != nil {
		t.Fatal(err)
	}
	if read.Account != "wecom-app" || read.Note != "operations" || read.Version != 1 {
		t.Errorf("read back %+v", read)
	}
	if _, err := f.svc.Update(ctx, f.by, read, with(func(in *chatgroups.Input) { in.Account = "nope" })); fieldOf(err) != "account" {
		t.Errorf("update to an unknown account: %v", err)
	}
	if _, err := f.svc.Update(ctx, f.by, read, with(func(in *chatgroups.Input) { in.Mention = "none"; in.Fold = &off })); err != nil {
		t.Fatal(err)
	}
	// The same read again: the group changed since, so nothing is written.
	if _, err := f.svc.Update(ctx, f.by, read, with(func(in *chatgroups.Input) { in.Note = "stale" })); !errors.Is(err, kernel.ErrStateChanged) {
		t.Errorf("update from a stale read: %v", err)
	}
	if err := f.svc.Delete(ctx, f.by, read); !errors.Is(err, kernel.ErrStateChanged) {
		t.Errorf("delete from a stale read: %v", err)
	}
	now, err := f.svc.Group(ctx, "ops-core")
	if err != nil {
		t.Fatal(err)
	}
	if now.Mention != "none" || now.Fold || now.Note != "operations" || now.Version != 2 {
		t.Errorf("after the update %+v", now)
	}
	entries, err := f.store.AuditLog().List(ctx, audit.Filter{Action: "chat_group.update"}, 10)
	if err != nil || len(entries) != 1 {
		t.Fatalf("update entries %v, %v", entries, err)
	}
	if p := entries[0].ParamMap(); p["changed"] != "mention on_duty → none, fold true → false" {
		t.Errorf("update entry %v", p)
	}
	if err := f.svc.Delete(ctx, f.by, now); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Group(ctx, "ops-core"); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
	if n := f.entries(t, "chat_group.delete"); n != 1 {
		t.Errorf("%d delete entries", n)
	}
	list, err := f.svc.Groups(ctx, chatgroups.Filter{Q: "db"})
	if err != nil || len(list) != 1 || list[0].Name != "dba" {
		t.Errorf("search: %v, %v", list, err)
	}
}
