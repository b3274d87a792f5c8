package directory_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"herald/directory"
	"herald/internal/testenv"
	"herald/models"
)

// TestChineseStaffSearchAndOrder: staff with Chinese names, branches and departments are
// found by any substring of them and by their names in pinyin, and listed in the same
// order on SQLite and MySQL.
//
// "Sensible" order here means deterministic and identical on both dialects, not pinyin:
//   - SQLite compares text as bytes (BINARY), which for UTF-8 is Unicode code point order.
//   - MySQL's utf8mb4_unicode_ci (UCA 4.0.0) gives CJK ideographs implicit weights that
//     follow their code points too, and puts Latin letters (case-insensitively) before
//     them.
//
// So both list Latin names first, then Chinese ones by code point: 张 (U+5F20) before
// 李 (U+674E), where a pinyin order would put Li before Zhang. That is acceptable for a
// console list; a pinyin or stroke order would need a collation neither dialect has by
// default (and the Go code sorting rosters, strings.Compare, is code point order too).
//
// A search is matched in Go (PersonMatches), not by the database's collation, so
// it finds the same people on both.
func TestChineseStaffSearchAndOrder(t *testing.T) {
	t.Parallel()
	testenv.OnBothDialects(t, func(t *testing.T, s *models.Store) {
		ctx := context.Background()
		people := []directory.Recipient{
			{ExternalID: "C001", Name: "张伟", OrgType: directory.HeadOffice, Branch: "总行营业部", Department: "运营管理部"},
			{ExternalID: "C002", Name: "李娜", OrgType: directory.HeadOffice, Branch: "总行营业部", Department: "风险管理部"},
			{ExternalID: "C003", Name: "王芳", OrgType: directory.Branch, Branch: "浦东分行", Department: "营业部"},
			{ExternalID: "C004", Name: "Zhang Wei", OrgType: directory.HeadOffice, Branch: "Head Office", Department: "IT"},
			{ExternalID: "C005", Name: "li na", OrgType: directory.HeadOffice, Branch: "Head Office", Department: "IT"},
		}
		for i := range people {
			people[i].Active = true
			if err := directory.ValidateRecipient(&people[i]); err != nil {
				t.Fatal(err)
			}
			if err := s.Directory().CreateRecipient(ctx, &people[i]); err != nil {
				t.Fatal(err)
			}
		}

		// Substrings of a name, a branch and a department; the list is by external id.
		for _, tt := range []struct {
			query string
			want  []string
		}{
			{"张", []string{"张伟"}},
			{"伟", []string{"张伟"}},
			{"李娜", []string{"李娜"}},
			{"总行", []string{"张伟", "李娜"}},
			{"营业部", []string{"张伟", "李娜", "王芳"}}, // 总行营业部 (branch) and 营业部 (department)
			{"管理部", []string{"张伟", "李娜"}},
			{"浦东", []string{"王芳"}},
			{"分行", []string{"王芳"}},
			{"赵", nil},
			// In pinyin, as the compose form's people picker finds them: initials, whole
			// names and the start of a given name, in any case.
			{"zw", []string{"张伟", "Zhang Wei"}},
			{"LN", []string{"李娜", "li na"}},
			{"zhangwei", []string{"张伟", "Zhang Wei"}},
			{"wangf", []string{"王芳"}},
			{"fang", []string{"王芳"}},
			{"wz", nil},
		} {
			got := searchNames(t, s, tt.query)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("search %q (-want +got):\n%s", tt.query, diff)
			}
		}

		// Ordered as every picker of people lists them: by name, Chinese names by their
		// pinyin among the Latin ones, alike on both dialects.
		staff, err := s.Directory().HeadOfficeStaff(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range staff {
			names = append(names, r.Name)
		}
		want := []string{"li na", "李娜", "Zhang Wei", "张伟"}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("head-office staff by name (-want +got):\n%s", diff)
		}

		branches, err := s.Directory().Branches(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// 总 U+603B before 浦 U+6D66.
		if diff := cmp.Diff([]string{"Head Office", "总行营业部", "浦东分行"}, branches); diff != "" {
			t.Errorf("branches (-want +got):\n%s", diff)
		}
	})
}
