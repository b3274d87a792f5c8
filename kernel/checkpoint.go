package kernel

import (
	"database/sql"
	"time"

	"gorm.io/gorm"
)

// The embedded database's write-ahead log is copied into the database file off the
// write path. By default SQLite does that copy (a checkpoint) on the connection that
// commits once the log passes 1,000 pages, and syncs the database file to disk while it
// is at it; with one writer connection, every write waits behind that commit. So the
// writer checkpoints on its own only past sqliteWriterCheckpoint pages, a safety net,
// and a connection of its own checkpoints every checkpointEvery. Its checkpoints are
// PASSIVE: they copy what no reader still needs and wait for neither the writer nor a
// reader. Once the whole log has been copied, the writer's next transaction starts the
// log over from the beginning, as after an automatic checkpoint.

const (
	// checkpointEvery is how often the background connection checkpoints.
	checkpointEvery = 250 * time.Millisecond
	// sqliteWriterCheckpoint is the log size, in pages, at which the writer checkpoints
	// itself: only if the background checkpoints stopped keeping up (256 MiB of 4 KiB
	// pages).
	sqliteWriterCheckpoint = 65536
)

// checkpointer checkpoints the embedded database's log in the background.
type checkpointer struct {
	db   *sql.DB
	stop chan struct{}
	done chan struct{}
}

// startCheckpointer opens a connection of its own to the SQLite file at path and
// checkpoints through it until stopped.
func startCheckpointer(path string, gcfg *gorm.Config) (*checkpointer, error) {
	gdb, err := openSQLite(path, gcfg, 1, cacheSize(checkpointCacheKiB))
	if err != nil {
		return nil, err
	}
	db, _ := gdb.DB()
	c := &checkpointer{db: db, stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c, nil
}

func (c *checkpointer) run() {
	defer close(c.done)
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
			// A checkpoint that fails (the file busy past the busy timeout, say) copies
			// nothing and harms nothing: the next tick tries again, and the writer's own
			// checkpoint is the net under both.
			_, _ = c.db.Exec("PRAGMA wal_checkpoint(PASSIVE)")
		}
	}
}

// close stops the checkpoints and closes the connection.
func (c *checkpointer) close() {
	close(c.stop)
	<-c.done
	c.db.Close()
}
