package models_test

import (
	"context"
	"strings"
	"testing"

	"herald/models"
)

// TestIMAddressesRoundTrip: every user-id field of IMAddresses is validated, stored,
// read back, updated by an upsert and reported in the change record, on both dialects.
func TestIMAddressesRoundTrip(t *testing.T) {
	t.Parallel()
	onBothDialects(t, func(t *testing.T, s *models.Store) {
		ctx := context.Background()
		r := models.Recipient{ExternalID: "A001", Name: "Zhou Min", OrgType: models.Branch, Active: true}
		for _, a := range models.IMAddresses {
			*a.Of(&r) = "id_" + a.Field
		}
		if err := models.ValidateRecipient(&r); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateRecipient(ctx, &r); err != nil {
			t.Fatal(err)
		}
		got, err := s.RecipientByExternalID(ctx, "A001")
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range models.IMAddresses {
			if v := *a.Of(got); v != "id_"+a.Field {
				t.Errorf("%s read back as %q", a.Field, v)
			}
		}

		// A space in any of them is refused, naming that field.
		for _, a := range models.IMAddresses {
			bad := r
			*a.Of(&bad) = "has space"
			err := models.ValidateRecipient(&bad)
			if err == nil || !strings.Contains(err.Error(), a.Field) {
				t.Errorf("%s with a space: %v", a.Field, err)
			}
		}

		// An upsert changing the new fields updates them and names them.
		r.FeishuUserID, r.DingtalkUserid = "ou_new", "dt_new"
		res, err := s.UpsertRecipients(ctx, []models.Recipient{r})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ = s.RecipientByExternalID(ctx, "A001"); got.FeishuUserID != "ou_new" || got.DingtalkUserid != "dt_new" {
			t.Errorf("after upsert: feishu %q, dingtalk %q", got.FeishuUserID, got.DingtalkUserid)
		}
		if changes := strings.Join(res.Changes[0].Fields, ","); changes != "feishu_user_id,dingtalk_userid" {
			t.Errorf("changed fields %q", changes)
		}
	})
}
