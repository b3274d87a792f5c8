package models

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The alert lifecycle (models/alerts.go): open → acknowledged → resolved, open →
// resolved, open → exhausted; its compare-and-set lists follow from it.
func TestAlertStates(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want []string
	}{
		{"moves", alertTable.Moves(AlertStates), []string{
			"open → acknowledged", "open → resolved", "open → exhausted", "acknowledged → resolved"}},
		{"acknowledgeable", AlertAcknowledgeable, []string{AlertOpen}},
		{"resolvable", AlertResolvable, []string{AlertOpen, AlertAcknowledged}},
		{"escalating", AlertEscalating, []string{AlertOpen}},
	} {
		if diff := cmp.Diff(tt.want, tt.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	for _, tt := range []struct {
		state                            string
		canAck, canResolve, isEscalating bool
	}{
		{AlertOpen, true, true, true},
		{AlertAcknowledged, false, true, false},
		{AlertResolved, false, false, false},
		{AlertExhausted, false, false, false},
	} {
		a := &Alert{State: tt.state}
		if got := [3]bool{a.CanMoveTo(AlertAcknowledged), a.CanMoveTo(AlertResolved), a.Escalating()}; got != [3]bool{tt.canAck, tt.canResolve, tt.isEscalating} {
			t.Errorf("%s: may acknowledge, may resolve, escalating = %v, want %v", tt.state, got, [3]bool{tt.canAck, tt.canResolve, tt.isEscalating})
		}
	}
}

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
