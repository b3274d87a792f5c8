package directory_test

import (
	"context"
	"strings"
	"testing"

	"herald/directory"
	"herald/internal/testenv"
	"herald/models"
)

// TestIMAddressesRoundTrip: every user-id field of IMAddresses is validated, stored,
// read back, updated by an upsert and reported in the change record, on both dialects.
func TestIMAddressesRoundTrip(t *testing.T) {
	t.Parallel()
	testenv.OnBothDialects(t, func(t *testing.T, s *models.Store) {
		ctx := context.Background()
		r := directory.Recipient{ExternalID: "A001", Name: "Zhou Min", OrgType: directory.Branch, Active: true}
		for _, a := range directory.IMAddresses {
			*a.Of(&r) = "id_" + a.Field
		}
		if err := directory.ValidateRecipient(&r); err != nil {
			t.Fatal(err)
		}
		if err := s.Directory().CreateRecipient(ctx, &r); err != nil {
			t.Fatal(err)
		}
		got, err := s.Directory().RecipientByExternalID(ctx, "A001")
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range directory.IMAddresses {
			if v := *a.Of(got); v != "id_"+a.Field {
				t.Errorf("%s read back as %q", a.Field, v)
			}
		}

		// A space in any of them is refused, naming that field.
		for _, a := range directory.IMAddresses {
			bad := r
			*a.Of(&bad) = "has space"
			err := directory.ValidateRecipient(&bad)
			if err == nil || !strings.Contains(err.Error(), a.Field) {
				t.Errorf("%s with a space: %v", a.Field, err)
			}
		}

		// An upsert changing the new fields updates them and names them.
		r.FeishuUserID, r.DingtalkUserid = "ou_new", "dt_new"
		res, err := s.Directory().UpsertRecipients(ctx, []directory.Recipient{r})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ = s.Directory().RecipientByExternalID(ctx, "A001"); got.FeishuUserID != "ou_new" || got.DingtalkUserid != "dt_new" {
			t.Errorf("after upsert: feishu %q, dingtalk %q", got.FeishuUserID, got.DingtalkUserid)
		}
		if changes := strings.Join(res.Changes[0].Fields, ","); changes != "feishu_user_id,dingtalk_userid" {
			t.Errorf("changed fields %q", changes)
		}
	})
}
