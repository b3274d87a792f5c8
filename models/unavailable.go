package models

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net"

	mysqldriver "github.com/go-sql-driver/mysql"
)

// Unavailable reports whether err means the database did not answer in time or the
// connection to it broke (a stalled or unreachable server), rather than that the
// request was wrong: callers answer 503 and ask to retry instead of 500.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, mysqldriver.ErrInvalidConn) || errors.Is(err, sql.ErrConnDone) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}
