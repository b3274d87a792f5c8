package directory_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"herald/audit"
	"herald/directory"
	"herald/internal/testenv"
	"herald/models"
)

// TestSearchTakesWildcardsLiterally: what a person types into a search box is text, so
// _ and % match themselves, and the same on both dialects.
func TestSearchTakesWildcardsLiterally(t *testing.T) {
	t.Parallel()
	testenv.OnBothDialects(t, func(t *testing.T, s *models.Store) {
		ctx := context.Background()
		for i, name := range []string{"a_b", "axb", "50%", "500", `c\d`, "e!f", "张伟", "李娜"} {
			r := &directory.Recipient{ExternalID: "E" + string(rune('0'+i)), Name: name, OrgType: directory.Branch, Active: true}
			if err := s.Directory().CreateRecipient(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		tests := []struct {
			query string
			want  []string
		}{
			{"a_b", []string{"a_b"}},
			{"50%", []string{"50%"}},
			{"%", []string{"50%"}},
			{"_", []string{"a_b"}},
			{`c\d`, []string{`c\d`}},
			{"e!f", []string{"e!f"}},
			{"x", []string{"axb"}},
			{"张", []string{"张伟"}},
			{"伟", []string{"张伟"}},
		}
		for _, tt := range tests {
			got := searchNames(t, s, tt.query)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("search %q (-want +got):\n%s", tt.query, diff)
			}
		}

		for _, action := range []string{"a_b.create", "axb.create", "a_bc.create"} {
			if err := s.AuditLog().Write(ctx, audit.Entry{Actor: "admin", ActorType: "user", Action: action}); err != nil {
				t.Fatal(err)
			}
		}
		entries, err := s.AuditLog().List(ctx, audit.Filter{Action: "a_b."}, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Action)
		}
		if diff := cmp.Diff([]string{"a_b.create"}, got); diff != "" {
			t.Errorf("audit actions under a_b. (-want +got):\n%s", diff)
		}
	})
}

// searchNames returns the names of the recipients the staff search finds for query, in
// the list's order.
func searchNames(t *testing.T, s *models.Store, query string) []string {
	t.Helper()
	list, err := s.Directory().ListRecipients(context.Background(), directory.RecipientFilter{Query: query})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range list {
		names = append(names, r.Name)
	}
	return names
}
