package silence

import (
	"context"
	"strings"
	"time"

	"gorm.io/gorm/clause"
)

// SilenceIDsIn lists, in id order, the silences the condition of the stages named
// selects, its columns qualified by table as silenceWhere's are.
func (s *Holds) SilenceIDsIn(ctx context.Context, table string, stages ...string) ([]int64, error) {
	list := make([]silenceStage, len(stages))
	for i, st := range stages {
		list[i] = silenceStage(st)
	}
	return s.silenceIDs(ctx, table, silenceWhere(table, list))
}

// SilenceIDsWhere lists, in id order, the silences a condition written out selects,
// its columns qualified by table.
func (s *Holds) SilenceIDsWhere(ctx context.Context, table, cond string, args ...any) ([]int64, error) {
	return s.silenceIDs(ctx, table, clause.Expr{SQL: cond, Vars: args})
}

func (s *Holds) silenceIDs(ctx context.Context, table string, cond clause.Expr) ([]int64, error) {
	from := "silences"
	if table != "" {
		from += " AS " + strings.TrimSuffix(table, ".")
	}
	var ids []int64
	err := s.k.Writer(ctx).Table(from).Where(cond).Order(table+"id").Pluck(table+"id", &ids).Error
	return ids, err
}

// SetSilenceColumns sets the columns a silence's stage is read from, to any values,
// those no code writes included.
func (s *Holds) SetSilenceColumns(ctx context.Context, id int64, approval string, expiredAt, endedAt *time.Time) error {
	return s.k.Writer(ctx).Model(&Silence{}).Where("id = ?", id).
		Updates(map[string]any{"approval": approval, "expired_at": expiredAt, "ended_at": endedAt}).Error
}
