package models

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"herald/internal/states"
)

// everyMove lists every move a table allows, as "from → move", by the table's states and
// then in the order moves gives.
func everyMove[S, M comparable](tbl *states.Table[S, M], moves []M) []string {
	var out []string
	for _, from := range tbl.States() {
		for _, m := range moves {
			if tbl.Allowed(from, m) {
				out = append(out, fmt.Sprintf("%v → %v", from, m))
			}
		}
	}
	return out
}

// The alert lifecycle (models/alerts.go): open → acknowledged → resolved, open →
// resolved, open → exhausted; its compare-and-set lists follow from it.
func TestAlertStates(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want []string
	}{
		{"moves", everyMove(alertTable, AlertStates), []string{
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
		{"moves", everyMove(approvalTable, approvalStates), []string{
			"awaiting_approval → approved", "awaiting_approval → rejected", "awaiting_approval → expired"}},
		{"decidable", approvalDecidable, []string{ApprovalAwaiting}},
		{"rejectable", approvalTable.From(ApprovalRejected), []string{ApprovalAwaiting}},
		{"expirable", approvalExpirable, []string{RecallAwaiting}},
	} {
		if diff := cmp.Diff(tt.want, tt.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	// The stored words stay what they were: the recall's expiry is "expired", and a
	// recall request's other states are the batch's.
	if RecallExpired != "expired" || RecallAwaiting != "awaiting_approval" || ApprovalExpired != "approval_expired" {
		t.Error("a stored approval word changed")
	}
}

// A silence's stored lifecycle (models/silence_stages.go) and the stages each of its
// compare-and-set updates conditions on.
func TestSilenceStages(t *testing.T) {
	moves := []silenceMove{silenceApprove, silenceRefuse, silenceEdit, silenceExpire, silenceEnd}
	if diff := cmp.Diff([]string{
		"awaiting → approve", "awaiting → refuse", "awaiting → edit", "awaiting → expire", "awaiting → end",
		"live → edit", "live → expire", "live → end",
		"expired_early → end",
	}, everyMove(silenceTable, moves)); diff != "" {
		t.Errorf("moves (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		name      string
		got, want []silenceStage
	}{
		{"approvable", silenceTable.From(silenceApprove), []silenceStage{silenceAwaiting}},
		{"refusable", silenceTable.From(silenceRefuse), []silenceStage{silenceAwaiting}},
		{"editable", silenceEditable, []silenceStage{silenceAwaiting, silenceLive}},
		{"open", silenceOpen, []silenceStage{silenceAwaiting, silenceLive}},
		{"endable", silenceEndable, []silenceStage{silenceAwaiting, silenceLive, silenceExpiredEarly}},
	} {
		if diff := cmp.Diff(tt.want, tt.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// The condition of a set of stages reads only the columns that tell its stages from the
// others, so the queries keep the index on ended_at and select what the conditions
// written out by hand did.
func TestSilenceWhere(t *testing.T) {
	for _, tt := range []struct {
		name   string
		table  string
		stages []silenceStage
		want   string
		args   []any
	}{
		{"none", "", nil, "1 = 0", nil},
		{"awaiting", "", []silenceStage{silenceAwaiting},
			"ended_at IS NULL AND expired_at IS NULL AND approval IN ?", []any{[]string{ApprovalAwaiting}}},
		{"live", "", []silenceStage{silenceLive},
			"ended_at IS NULL AND expired_at IS NULL AND approval IN ?", []any{[]string{"", ApprovalApproved}}},
		{"open", "", silenceOpen, "ended_at IS NULL AND expired_at IS NULL", nil},
		{"endable", "s.", silenceEndable, "s.ended_at IS NULL", nil},
		{"ended or live", "", []silenceStage{silenceLive, silenceEnded},
			"((ended_at IS NOT NULL) OR (ended_at IS NULL AND expired_at IS NULL AND approval IN ?))", []any{[]string{"", ApprovalApproved}}},
		{"expired or awaiting", "", []silenceStage{silenceExpiredEarly, silenceAwaiting},
			"ended_at IS NULL AND ((expired_at IS NOT NULL) OR (expired_at IS NULL AND approval IN ?))", []any{[]string{ApprovalAwaiting}}},
	} {
		got := silenceWhere(tt.table, tt.stages)
		if diff := cmp.Diff(tt.want, got.SQL); diff != "" {
			t.Errorf("%s: SQL (-want +got):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(tt.args, got.Vars); diff != "" {
			t.Errorf("%s: args (-want +got):\n%s", tt.name, diff)
		}
	}
}
