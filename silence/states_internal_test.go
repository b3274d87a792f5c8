package silence

import (
	"herald/models"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A silence's stored lifecycle (silence_stages.go) and the stages each of its
// compare-and-set updates conditions on.
func TestSilenceStages(t *testing.T) {
	moves := []silenceMove{silenceApprove, silenceRefuse, silenceEdit, silenceExpire, silenceEnd}
	if diff := cmp.Diff([]string{
		"awaiting → approve", "awaiting → refuse", "awaiting → edit", "awaiting → expire", "awaiting → end",
		"live → edit", "live → expire", "live → end",
		"expired_early → end",
	}, silenceTable.Moves(moves)); diff != "" {
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
			"ended_at IS NULL AND expired_at IS NULL AND approval IN ?", []any{[]string{models.ApprovalAwaiting}}},
		{"live", "", []silenceStage{silenceLive},
			"ended_at IS NULL AND expired_at IS NULL AND approval IN ?", []any{[]string{"", models.ApprovalApproved}}},
		{"open", "", silenceOpen, "ended_at IS NULL AND expired_at IS NULL", nil},
		{"endable", "s.", silenceEndable, "s.ended_at IS NULL", nil},
		{"ended or live", "", []silenceStage{silenceLive, silenceEnded},
			"((ended_at IS NOT NULL) OR (ended_at IS NULL AND expired_at IS NULL AND approval IN ?))", []any{[]string{"", models.ApprovalApproved}}},
		{"expired or awaiting", "", []silenceStage{silenceExpiredEarly, silenceAwaiting},
			"ended_at IS NULL AND ((expired_at IS NOT NULL) OR (expired_at IS NULL AND approval IN ?))", []any{[]string{models.ApprovalAwaiting}}},
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
