package models

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// One approval lifecycle for batches, recall requests and silences: awaiting →
// approved, rejected or expired, each decided once.
func TestApprovalStates(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want []string
	}{
		{"moves", approvalTable.Moves(approvalStates), []string{
			"awaiting_approval → approved", "awaiting_approval → rejected", "awaiting_approval → expired"}},
		{"decidable", ApprovalDecidable, []string{ApprovalAwaiting}},
		{"rejectable", approvalTable.From(ApprovalRejected), []string{ApprovalAwaiting}},
		{"expirable", ApprovalExpirable, []string{ApprovalAwaiting}},
	} {
		if diff := cmp.Diff(tt.want, tt.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	// The stored words stay what they were: the recall's expiry is "expired", and a
	// recall request's other states are the batch's.
	if RecallExpired != "expired" || ApprovalAwaiting != "awaiting_approval" || ApprovalExpired != "approval_expired" {
		t.Error("a stored approval word changed")
	}
}
