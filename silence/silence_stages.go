package silence

import (
	"slices"
	"strings"

	"gorm.io/gorm/clause"

	"herald/internal/states"
	"herald/models"
)

// silenceStage is where a silence stands in its stored lifecycle, as its approval,
// expired_at and ended_at columns record it. What its times make of it for people
// (pending, active, expired) is delivery.SilenceState.
type silenceStage string

// The stages of a silence's stored lifecycle, in order.
const (
	// silenceAwaiting: it waits for a second person's approval, and holds nothing.
	silenceAwaiting silenceStage = "awaiting"
	// silenceLive: it needed no approval or was approved, and holds what it matches
	// while its times make it active.
	silenceLive silenceStage = "live"
	// silenceExpiredEarly: a person expired it before its end, or refused its approval;
	// the end pass has yet to send on what it held.
	silenceExpiredEarly silenceStage = "expired_early"
	// silenceEnded: the end pass has run, at its end or after it was expired.
	silenceEnded silenceStage = "ended"
)

// silenceStages lists the stages in lifecycle order.
var silenceStages = []silenceStage{silenceAwaiting, silenceLive, silenceExpiredEarly, silenceEnded}

// silenceMove is a move of a silence's stored lifecycle. An approval and an edit both
// make a silence live, from different stages, so its moves go by name.
type silenceMove string

// The moves of a silence, each a compare-and-set conditioned on the stages that may
// make it.
const (
	// silenceApprove: a second person approves it; it becomes live.
	silenceApprove silenceMove = "approve"
	// silenceRefuse: a second person refuses it; its approval is rejected and it is
	// expired early.
	silenceRefuse silenceMove = "refuse"
	// silenceEdit: its maker changes it; it awaits approval when the change needs it,
	// and is live otherwise.
	silenceEdit silenceMove = "edit"
	// silenceExpire: a person expires it early.
	silenceExpire silenceMove = "expire"
	// silenceEnd: the end pass ends it, once its end has come or it was expired early.
	silenceEnd silenceMove = "end"
)

// silenceTable is the silence's stored lifecycle: the moves a silence may make, by the
// stage it leaves.
var silenceTable = states.New(silenceStages, map[silenceStage][]silenceMove{
	silenceAwaiting:     {silenceApprove, silenceRefuse, silenceEdit, silenceExpire, silenceEnd},
	silenceLive:         {silenceEdit, silenceExpire, silenceEnd},
	silenceExpiredEarly: {silenceEnd},
})

// The compare-and-set lists of silence moves, named for the question.
var (
	// silenceEditable are the stages a silence may be edited in.
	silenceEditable = silenceTable.From(silenceEdit)
	// silenceOpen are the stages of a silence neither ended nor expired: those a
	// person may expire it in, which count against the limit on live silences and may
	// still hold messages.
	silenceOpen = silenceTable.From(silenceExpire)
	// silenceEndable are the stages of a silence not ended yet: those the end pass
	// may end it in, and in which it keeps what it holds.
	silenceEndable = silenceTable.From(silenceEnd)
)

// columnTest is one test of a silence's columns: true of the silences of one stage, or
// of those the tests under it tell apart.
type columnTest struct {
	column, test string
	args         []any
	stage        silenceStage
	under        []columnTest
}

// silenceColumns read a silence's stage from its columns in the order its lifecycle
// sets them: ended_at, then expired_at, then approval.
var silenceColumns = []columnTest{
	{column: "ended_at", test: "IS NOT NULL", stage: silenceEnded},
	{column: "ended_at", test: "IS NULL", under: []columnTest{
		{column: "expired_at", test: "IS NOT NULL", stage: silenceExpiredEarly},
		{column: "expired_at", test: "IS NULL", under: []columnTest{
			{column: "approval", test: "IN ?", args: []any{models.ApprovalDecidable}, stage: silenceAwaiting},
			{column: "approval", test: "IN ?", args: []any{[]string{"", models.ApprovalApproved}}, stage: silenceLive},
		}},
	}},
}

// silenceWhere is the condition that selects the silences in stages, its columns
// qualified by table ("s." in a join, "" alone): the one place a silence's stages
// become SQL. It stops at a test all of whose silences are wanted, so it reads no
// column it need not: silences neither ended nor expired are selected together
// whatever their approval says, as the queries written out by hand did.
func silenceWhere(table string, stages []silenceStage) clause.Expr {
	conds, args, _ := pickStages(silenceColumns, table, stages)
	if len(conds) == 0 {
		return clause.Expr{SQL: "1 = 0"}
	}
	return clause.Expr{SQL: anyOf(conds), Vars: args}
}

// pickStages returns the conditions that select, among the silences tests tell apart,
// those in stages (a silence is selected when any condition holds), and whether those
// are all of them.
func pickStages(tests []columnTest, table string, stages []silenceStage) (conds []string, args []any, all bool) {
	all = true
	for _, t := range tests {
		cond, condArgs := table+t.column+" "+t.test, t.args
		if t.under == nil {
			if !slices.Contains(stages, t.stage) {
				all = false
				continue
			}
		} else {
			sub, subArgs, subAll := pickStages(t.under, table, stages)
			switch {
			case subAll:
				// Every silence the test is true of is wanted: the test alone says so.
			case len(sub) == 0:
				all = false
				continue
			default:
				all = false
				cond += " AND " + anyOf(sub)
				condArgs = append(slices.Clone(t.args), subArgs...)
			}
		}
		conds, args = append(conds, cond), append(args, condArgs...)
	}
	return conds, args, all
}

// anyOf joins conditions with OR, in parentheses when there are several.
func anyOf(conds []string) string {
	if len(conds) == 1 {
		return conds[0]
	}
	return "((" + strings.Join(conds, ") OR (") + "))"
}
