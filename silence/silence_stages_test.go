package silence_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
	"herald/silence"
)

// gridSilence is a silence written with one combination of the columns its stage is
// read from, and of whether its end has passed.
type gridSilence struct {
	id                         int64
	approval                   string
	expired, ended, endsPassed bool
}

// stage is the stage the lifecycle (silence_stages.go) puts the silence in; "" for the
// combination no code writes, a refused approval on a silence not expired (a refusal
// expires the silence in the same update).
func (g gridSilence) stage() string {
	switch {
	case g.ended:
		return "ended"
	case g.expired:
		return "expired_early"
	case g.approval == models.ApprovalAwaiting:
		return "awaiting"
	case g.approval == "" || g.approval == models.ApprovalApproved:
		return "live"
	}
	return ""
}

// silenceGrid writes one silence for every combination of approval ("", awaiting,
// approved, rejected), expired_at and ended_at (set or not) and its end (passed or
// not) at now.
func silenceGrid(t *testing.T, s *models.Store, now time.Time) []gridSilence {
	t.Helper()
	ctx := context.Background()
	var grid []gridSilence
	for _, approval := range []string{"", models.ApprovalAwaiting, models.ApprovalApproved, models.ApprovalRejected} {
		for _, expired := range []bool{false, true} {
			for _, ended := range []bool{false, true} {
				for _, endsPassed := range []bool{false, true} {
					ends := now.Add(time.Hour)
					if endsPassed {
						ends = now.Add(-time.Hour)
					}
					sil := &silence.Silence{Matchers: silence.Matchers{}, StartsAt: now.Add(-2 * time.Hour), EndsAt: ends,
						OnEnd: "release", CreatedBy: "admin", Approval: approval}
					if err := silence.Of(s).CreateSilence(ctx, sil); err != nil {
						t.Fatal(err)
					}
					var expiredAt, endedAt *time.Time
					if expired {
						at := now.Add(-30 * time.Minute)
						expiredAt = &at
					}
					if ended {
						at := now.Add(-10 * time.Minute)
						endedAt = &at
					}
					if err := silence.Of(s).SetSilenceColumns(ctx, sil.ID, approval, expiredAt, endedAt); err != nil {
						t.Fatal(err)
					}
					grid = append(grid, gridSilence{sil.ID, approval, expired, ended, endsPassed})
				}
			}
		}
	}
	return grid
}

func gridIDs(grid []gridSilence) []int64 {
	ids := make([]int64, len(grid))
	for i, g := range grid {
		ids[i] = g.id
	}
	return ids
}

func silenceIDs(list []silence.Silence) []int64 {
	var ids []int64
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	return ids
}

// The condition of each stage selects the silences in it, alone or joined. The
// combination no code writes is in no stage alone.
func TestSilenceStageConditions(t *testing.T) {
	ctx := context.Background()
	s := testenv.Store(t)
	grid := silenceGrid(t, s, kernel.Now())
	stages := []string{"awaiting", "live", "expired_early", "ended"}
	in := func(stages ...string) []int64 {
		var ids []int64
		for _, g := range grid {
			if slices.Contains(stages, g.stage()) {
				ids = append(ids, g.id)
			}
		}
		return ids
	}
	for _, table := range []string{"", "s."} {
		for _, stage := range stages {
			got, err := silence.Of(s).SilenceIDsIn(ctx, table, stage)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(in(stage), got); diff != "" {
				t.Errorf("stage %s, table %q (-want +got):\n%s", stage, table, diff)
			}
		}
		// Selected with both the awaiting and the live ones: the conditions of silences
		// neither ended nor expired read no approval.
		got, err := silence.Of(s).SilenceIDsIn(ctx, table, "awaiting", "live")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(in("awaiting", "live", ""), got); diff != "" {
			t.Errorf("awaiting and live, table %q (-want +got):\n%s", table, diff)
		}
	}
}

// The silence queries select the same silences as the conditions they were written
// with before the stages, on every combination of the columns, those no code writes
// included.
func TestSilenceQueriesSelectAsBefore(t *testing.T) {
	ctx := context.Background()
	s := testenv.Store(t)
	now := kernel.Now()
	silenceGrid(t, s, now)
	before := func(table, cond string, args ...any) []int64 {
		t.Helper()
		ids, err := silence.Of(s).SilenceIDsWhere(ctx, table, cond, args...)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	live, err := silence.Of(s).LiveSilences(ctx)
	if err != nil {
		t.Fatal(err)
	}
	due, err := silence.Of(s).DueSilenceEnds(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	_, counted, err := silence.Of(s).LiveSilenceCounts(ctx, 0, "nobody")
	if err != nil {
		t.Fatal(err)
	}
	// What FreeHeldMessages and HoldMessages ask of the silences holding a message.
	notEnded, err := silence.Of(s).SilenceIDsIn(ctx, "s.", "awaiting", "live", "expired_early")
	if err != nil {
		t.Fatal(err)
	}
	stillHolding, err := silence.Of(s).SilenceIDsIn(ctx, "", "awaiting", "live")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		got, want []int64
	}{
		{"live silences", silenceIDs(live),
			before("", "ended_at IS NULL AND expired_at IS NULL AND approval IN ?", []string{"", models.ApprovalApproved})},
		{"due ends", silenceIDs(due), before("", "ended_at IS NULL AND (ends_at <= ? OR expired_at <= ?)", now, now)},
		{"free held", notEnded, before("s.", "s.ended_at IS NULL")},
		{"still holding", stillHolding, before("", "ended_at IS NULL AND expired_at IS NULL")},
	} {
		if diff := cmp.Diff(tt.want, tt.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	if want := len(before("", "ended_at IS NULL AND expired_at IS NULL")); counted != want {
		t.Errorf("live silence count = %d, want %d", counted, want)
	}
}

// Each compare-and-set update on a silence moves the silences the condition it was
// written with before the stages selects, and refuses the others.
func TestSilenceMovesAsBefore(t *testing.T) {
	ctx := context.Background()
	s := testenv.Store(t)
	now := kernel.Now()
	open := "ended_at IS NULL AND expired_at IS NULL"
	awaiting := "approval = ? AND ended_at IS NULL AND expired_at IS NULL"
	for _, tt := range []struct {
		name   string
		before string
		args   []any
		move   func(id int64) error
	}{
		{"edit", open, nil, func(id int64) error {
			sil, err := silence.Of(s).SilenceByID(ctx, id)
			if err != nil {
				return err
			}
			return silence.Of(s).UpdateSilence(ctx, sil)
		}},
		{"expire", open, nil, func(id int64) error { return silence.Of(s).ExpireSilence(ctx, id, "ops", now) }},
		{"approve", awaiting, []any{models.ApprovalAwaiting}, func(id int64) error {
			return silence.Of(s).DecideSilence(ctx, id, models.ApprovalApproved, "ops", now)
		}},
		{"refuse", awaiting, []any{models.ApprovalAwaiting}, func(id int64) error {
			return silence.Of(s).DecideSilence(ctx, id, models.ApprovalRejected, "ops", now)
		}},
		{"end", "ended_at IS NULL", nil, func(id int64) error {
			_, err := silence.Of(s).EndSilence(ctx, id, now)
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			grid := silenceGrid(t, s, now)
			want, err := silence.Of(s).SilenceIDsWhere(ctx, "", "id IN ? AND "+tt.before, append([]any{gridIDs(grid)}, tt.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, g := range grid {
				switch err := tt.move(g.id); {
				case err == nil:
					got = append(got, g.id)
				case !errors.Is(err, kernel.ErrStateChanged):
					t.Fatal(err)
				}
			}
			if len(want) == 0 || len(want) == len(grid) {
				t.Fatalf("the condition selects %d of %d silences: the grid tells nothing apart", len(want), len(grid))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("moved (-want +got):\n%s", diff)
			}
		})
	}
}
