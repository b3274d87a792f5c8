package models

import (
	"strings"

	"gorm.io/gorm"
)

// likeMatch says where in a column the searched text must appear.
type likeMatch int

const (
	likeContains likeMatch = iota
	likePrefix
)

// likeEscaper makes text literal inside a LIKE pattern escaped with '!'. Not the
// backslash: MySQL escapes with it by default and SQLite has no default, and inside a
// SQL string literal the two read a backslash differently, so neither could spell the
// same ESCAPE clause.
var likeEscaper = strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")

// whereLike narrows q to rows where any of columns holds text literally: a person's
// search for "a_b" or "50%" must not turn _ and % into wildcards. Every LIKE in the
// store goes through here so that it matches the same on SQLite and MySQL.
func whereLike(q *gorm.DB, match likeMatch, text string, columns ...string) *gorm.DB {
	pattern := likeEscaper.Replace(text) + "%"
	if match == likeContains {
		pattern = "%" + pattern
	}
	conds := make([]string, len(columns))
	args := make([]any, len(columns))
	for i, column := range columns {
		conds[i] = column + " LIKE ? ESCAPE '!'"
		args[i] = pattern
	}
	return q.Where("("+strings.Join(conds, " OR ")+")", args...)
}
