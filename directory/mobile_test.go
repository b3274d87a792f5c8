package directory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"herald/directory"
	"herald/i18n"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
)

// TestRecipientMobile: a person's mobile number is validated and stored in one form, a
// mainland number as its 11 digits whichever way it was written, an international one
// as + and its digits; anything else is refused on the field mobile, in both languages.
func TestRecipientMobile(t *testing.T) {
	tests := []struct {
		name, given, want string // want "" with bad: refused
		bad               bool
	}{
		{"none", "", "", false},
		{"only spaces", "   ", "", false},
		{"mainland", "13812341234", "13812341234", false},
		{"mainland starting 19", "19912345678", "19912345678", false},
		{"with +86", "+8613812341234", "13812341234", false},
		{"with 86", "8613812341234", "13812341234", false},
		{"spaces and dashes", "+86 138-1234-1234", "13812341234", false},
		{"grouped with spaces", "138 1234 1234", "13812341234", false},
		{"Hong Kong", "+85291234567", "+85291234567", false},
		{"E.164 with spaces", "+44 7911 123456", "+447911123456", false},
		{"E.164 of 15 digits", "+123456789012345", "+123456789012345", false},
		{"E.164 of 8 digits", "+12345678", "+12345678", false},
		{"mainland landline as E.164", "+861012345678", "+861012345678", false},
		{"12 starts no mainland mobile", "12812341234", "", true},
		{"10 digits", "1381234123", "", true},
		{"12 digits", "138123412345", "", true},
		{"86 before a bad number", "8612812341234", "", true},
		{"E.164 of 7 digits", "+1234567", "", true},
		{"E.164 of 16 digits", "+1234567890123456", "", true},
		{"E.164 with a leading 0", "+0123456789", "", true},
		{"local number without +", "85291234567", "", true},
		{"letters", "138abcd1234", "", true},
		{"parentheses", "(010) 12345678", "", true},
		{"full-width digits", "１３８１２３４１２３４", "", true},
		{"plus alone", "+", "", true},
		{"too long", "+86 138 1234 1234 0000", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := directory.Recipient{ExternalID: "M1", Name: "Zhou Min", OrgType: directory.Branch, Mobile: tt.given}
			err := directory.ValidateRecipient(&r)
			if !tt.bad {
				if err != nil {
					t.Fatalf("%q refused: %v", tt.given, err)
				}
				if r.Mobile != tt.want {
					t.Errorf("%q stored as %q, want %q", tt.given, r.Mobile, tt.want)
				}
				return
			}
			fe, ok := errors.AsType[*kernel.FieldError](err)
			if !ok || fe.Field != "mobile" {
				t.Fatalf("%q: %v, want a problem with mobile", tt.given, err)
			}
			for _, lang := range []string{i18n.English, "zh-CN"} {
				if text := fe.Text(lang); text == "" || text == fe.Key {
					t.Errorf("%q in %s: no catalog message (%q)", tt.given, lang, text)
				}
			}
		})
	}
}

// TestMaskMobile: viewers see the first three and last four digits of a mainland
// number, the country code and last four of an international one, always four stars
// between.
func TestMaskMobile(t *testing.T) {
	tests := []struct{ stored, want string }{
		{"", ""},
		{"13812341234", "138****1234"},
		{"19900005678", "199****5678"},
		{"+14155552671", "+1****2671"},
		{"+79161234567", "+7****4567"},
		{"+447911123456", "+44****3456"},
		{"+8613812341234", "+86****1234"},
		{"+85291234567", "+852****4567"},
		{"+12345678", "+1****5678"},
		{"+35312345", "+353****2345"},
		// Not a stored form (written by other means): its last four at most.
		{"0123456789", "****6789"},
		{"123", "****"},
	}
	for _, tt := range tests {
		if got := directory.MaskMobile(tt.stored); got != tt.want {
			t.Errorf("MaskMobile(%q) = %q, want %q", tt.stored, got, tt.want)
		}
	}
}

// TestRecipientMobileRoundTrip: a mobile number is stored, read back, changed by an
// upsert and named, masked, in the change record, on both dialects.
func TestRecipientMobileRoundTrip(t *testing.T) {
	t.Parallel()
	testenv.OnBothDialects(t, func(t *testing.T, s *models.Store) {
		ctx := context.Background()
		r := directory.Recipient{ExternalID: "M001", Name: "Zhou Min", OrgType: directory.Branch, Active: true, Mobile: "+86 138-1234-1234"}
		if err := directory.ValidateRecipient(&r); err != nil {
			t.Fatal(err)
		}
		if err := s.Directory().CreateRecipient(ctx, &r); err != nil {
			t.Fatal(err)
		}
		intl := directory.Recipient{ExternalID: "M002", Name: "Chan Wai", OrgType: directory.Branch, Active: true, Mobile: "+85291234567"}
		if err := s.Directory().CreateRecipient(ctx, &intl); err != nil {
			t.Fatal(err)
		}
		got, err := s.Directory().RecipientsByExternalIDs(ctx, []string{"M001", "M002"})
		if err != nil {
			t.Fatal(err)
		}
		mobiles := map[string]string{}
		for _, p := range got {
			mobiles[p.ExternalID] = p.Mobile
		}
		if diff := cmp.Diff(map[string]string{"M001": "13812341234", "M002": "+85291234567"}, mobiles); diff != "" {
			t.Errorf("mobiles read back (-want +got):\n%s", diff)
		}

		r.Mobile = "13912345678"
		res, err := s.Directory().UpsertRecipients(ctx, []directory.Recipient{r})
		if err != nil {
			t.Fatal(err)
		}
		if p, _ := s.Directory().RecipientByExternalID(ctx, "M001"); p.Mobile != "13912345678" {
			t.Errorf("after upsert: mobile %q", p.Mobile)
		}
		if len(res.Changes) != 1 || strings.Join(res.Changes[0].Diff, "; ") != "mobile: 138****1234 → 139****5678" {
			t.Errorf("changes %+v, want the mobile named, masked", res.Changes)
		}

		// A number masked alike is still a change.
		r.Mobile = "13900005678"
		if res, err = s.Directory().UpsertRecipients(ctx, []directory.Recipient{r}); err != nil {
			t.Fatal(err)
		}
		if res.Updated != 1 || strings.Join(res.Changes[0].Fields, ",") != "mobile" {
			t.Errorf("a new number masked like the old: %+v", res)
		}

		// Taking the number away stores none.
		r.Mobile = ""
		if _, err = s.Directory().UpsertRecipients(ctx, []directory.Recipient{r}); err != nil {
			t.Fatal(err)
		}
		if p, _ := s.Directory().RecipientByExternalID(ctx, "M001"); p.Mobile != "" {
			t.Errorf("after clearing: mobile %q", p.Mobile)
		}
	})
}
