package directory_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/directory"
	"herald/internal/testenv"
	"herald/models"
	"herald/sending"
)

func names(people []directory.Recipient) []string {
	out := make([]string, len(people))
	for i, p := range people {
		out[i] = p.Name
	}
	return out
}

// TestPinyinNameOrder: Chinese names sort by their pinyin among Latin names (li, wang,
// zhang), not by code point, and a family name read otherwise than its character's
// first reading sorts by the family name's reading.
func TestPinyinNameOrder(t *testing.T) {
	t.Parallel()
	people := []directory.Recipient{
		{ID: 1, Name: "张伟"}, {ID: 2, Name: "Zhao Lei"}, {ID: 3, Name: "王磊"}, {ID: 4, Name: "李娜"},
		{ID: 5, Name: "Chen Jie"}, {ID: 6, Name: "Li Wei"}, {ID: 7, Name: "曾华"}, {ID: 8, Name: "陈杰"},
		{ID: 9, Name: "wang fang"}, {ID: 10, Name: "吕梅"},
	}
	directory.SortRecipientsByName(people)
	want := []string{"Chen Jie", "陈杰", "李娜", "Li Wei", "吕梅", "wang fang", "王磊", "曾华", "张伟", "Zhao Lei"}
	if diff := cmp.Diff(want, names(people)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	for name, key := range map[string]string{"张伟": "zhang wei", "曾华": "zeng hua", "Li Wei": "li wei", "吕梅": "lv mei"} {
		if got := directory.NameSortKey(name); got != key {
			t.Errorf("NameSortKey(%s) = %q, want %q", name, got, key)
		}
	}
	if got := directory.NameInitials("张伟"); got != "zw" {
		t.Errorf("NameInitials(张伟) = %q, want zw", got)
	}
}

// TestFindPeople: a search finds people by name, external id, branch and department,
// ignoring case, and Chinese names by pinyin initials or spelled in pinyin from any
// syllable; it does not find a syllable from its middle.
func TestFindPeople(t *testing.T) {
	t.Parallel()
	people := []directory.Recipient{
		{ID: 1, ExternalID: "C001", Name: "张伟", Branch: "浦东分行", Department: "营业部"},
		{ID: 2, ExternalID: "C002", Name: "王磊", Branch: "总行", Department: "运营管理部"},
		{ID: 3, ExternalID: "C003", Name: "李娜", Branch: "总行", Department: "风险管理部"},
		{ID: 4, ExternalID: "E1001", Name: "Zhang Wei", Branch: "Head Office", Department: "IT"},
		{ID: 5, ExternalID: "E2001", Name: "Liu Yang", Branch: "Pudong Branch", Department: "Counter"},
	}
	for _, tt := range []struct {
		query string
		want  []string
	}{
		{"", []string{"张伟", "王磊", "李娜", "Zhang Wei", "Liu Yang"}},
		{"zw", []string{"张伟", "Zhang Wei"}},
		{"ZW", []string{"张伟", "Zhang Wei"}},
		{"wl", []string{"王磊"}},
		{"zhangw", []string{"张伟", "Zhang Wei"}},
		{"zhang wei", []string{"张伟", "Zhang Wei"}},
		{"lei", []string{"王磊"}},
		{"伟", []string{"张伟"}},
		{"c003", []string{"李娜"}},
		{"浦东", []string{"张伟"}},
		{"管理部", []string{"王磊", "李娜"}},
		{"pudong", []string{"Liu Yang"}},
		{"counter", []string{"Liu Yang"}},
		{"ei", []string{"Zhang Wei"}}, // inside a syllable only in the Latin name
		{"xyz", nil},
	} {
		got := names(directory.FindPeople(people, tt.query))
		if len(got) == 0 {
			got = nil
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("search %q (-want +got):\n%s", tt.query, diff)
		}
	}
}

// TestMessagesByRecipientName: the message list finds messages by part of their
// recipient's name, literally (a % is no wildcard), and pages through them by keyset.
func TestMessagesByRecipientName(t *testing.T) {
	t.Parallel()
	testenv.OnBothDialects(t, func(t *testing.T, s *models.Store) {
		ctx := context.Background()
		acct := &sending.Account{Name: "sb", Platform: "sandbox", Enabled: true, Healthy: true, MaxAttempts: 3}
		if err := s.Sending().CreateAccount(ctx, acct); err != nil {
			t.Fatal(err)
		}
		people := map[string]*directory.Recipient{}
		for i, name := range []string{"张伟", "张伟明", "王磊", "50% Li"} {
			r := &directory.Recipient{ExternalID: "N" + string(rune('0'+i)), Name: name, OrgType: directory.Branch, Active: true}
			if err := s.Directory().CreateRecipient(ctx, r); err != nil {
				t.Fatal(err)
			}
			people[name] = r
		}
		b := &models.Batch{ID: models.NewID(), Source: "console", Actor: "t", Platform: "sandbox", AccountID: acct.ID, Priority: "normal"}
		var msgs []models.Message
		at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
		for i, name := range []string{"张伟", "张伟明", "王磊", "50% Li", "张伟"} {
			p := people[name]
			msgs = append(msgs, models.Message{ID: models.NewID(), BatchID: b.ID, RecipientID: p.ID, AccountID: acct.ID,
				Platform: "sandbox", Address: p.ExternalID, MsgType: "text", Content: "hello " + name, Priority: "normal",
				Status: models.StatusPending, MaxAttempts: 3, SendAt: at, NextAttemptAt: &at, CreatedAt: at.Add(time.Duration(i) * time.Second)})
		}
		b.Accepted = len(msgs)
		if err := s.CreateBatch(ctx, b, msgs, &models.BatchExtras{}); err != nil {
			t.Fatal(err)
		}
		list := func(name string, after *models.MessageCursor, limit int) []models.BatchMessage {
			t.Helper()
			named, err := s.Directory().RecipientIDsByName(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			out, err := s.ListMessages(ctx, models.MessageFilter{Named: named, RecipientName: name}, after, limit)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		who := func(rows []models.BatchMessage) []string {
			out := []string{}
			for _, m := range rows {
				out = append(out, m.RecipientName)
			}
			return out
		}
		if diff := cmp.Diff([]string{"张伟", "张伟明", "张伟"}, who(list("张伟", nil, 10))); diff != "" {
			t.Errorf("name 张伟 (-want +got):\n%s", diff)
		}
		// In pinyin, whole or by initials, as the people picker finds names.
		for _, q := range []string{"zhangwei", "ZW"} {
			if diff := cmp.Diff([]string{"张伟", "张伟明", "张伟"}, who(list(q, nil, 10))); diff != "" {
				t.Errorf("name %s (-want +got):\n%s", q, diff)
			}
		}
		if diff := cmp.Diff([]string{"50% Li"}, who(list("0%", nil, 10))); diff != "" {
			t.Errorf("name 0%% (-want +got):\n%s", diff)
		}
		if got := who(list("%", nil, 10)); len(got) != 1 {
			t.Errorf("%% matched %v, want only the name holding it", got)
		}
		// Two pages of two and one.
		first := list("张", nil, 2)
		if len(first) != 2 {
			t.Fatalf("first page %v", who(first))
		}
		last := first[len(first)-1]
		rest := list("张", &models.MessageCursor{CreatedAt: last.CreatedAt, ID: last.ID}, 2)
		if diff := cmp.Diff([]string{"张伟", "张伟明", "张伟"}, append(who(first), who(rest)...)); diff != "" {
			t.Errorf("pages (-want +got):\n%s", diff)
		}
		if first[0].Content != "hello 张伟" {
			t.Errorf("list content %q, want the message's text", first[0].Content)
		}
		named, err := s.Directory().RecipientIDsByName(ctx, "张伟")
		if err != nil {
			t.Fatal(err)
		}
		n, err := s.CountStopped(ctx, models.MessageFilter{Named: named, Status: models.StatusStopped})
		if err != nil || n != 0 {
			t.Errorf("count stopped by name: %d, %v", n, err)
		}
	})
}
