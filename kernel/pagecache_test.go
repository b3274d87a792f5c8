package kernel

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// The embedded database's page caches stay within the budget their cache sizes add up
// to, however much of the database the writes touch: SQLite lets the writer's cache take
// what every other connection's cache_size allows, and with SQLite's default on each it
// grew to 12 MB.
func TestPageCachesStayWithinTheirBudget(t *testing.T) {
	db := openEmbedded(t)
	ctx := context.Background()
	// Every connection open first: a connection's cache joins the shared budget when
	// the connection opens.
	if used := pageCachesUsed(t, db); len(used) != 1+sqliteReaders+1 {
		t.Fatalf("measured %d connections, want %d", len(used), 1+sqliteReaders+1)
	}
	w := db.Writer(ctx)
	if err := w.Exec("CREATE TABLE filler (k TEXT, v TEXT)").Error; err != nil {
		t.Fatal(err)
	}
	if err := w.Exec("CREATE INDEX filler_k ON filler (k)").Error; err != nil {
		t.Fatal(err)
	}
	read, _ := db.read.DB()
	readers := make([]*sql.Conn, sqliteReaders)
	for i := range readers {
		r, err := read.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		readers[i] = r
	}
	// About 6 MB of rows, the index keys random: each batch touches pages all over the
	// table's end and the index. Between batches each reader reads the newest rows and
	// leaves their pages in its cache, for the writer's next batch to take.
	for range 12 {
		if err := w.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 1000)
			INSERT INTO filler (k, v) SELECT hex(randomblob(16)), hex(randomblob(250)) FROM n`).Error; err != nil {
			t.Fatal(err)
		}
		for _, r := range readers {
			var n int64
			if err := r.QueryRowContext(ctx, "SELECT sum(length(v)) FROM (SELECT v FROM filler ORDER BY rowid DESC LIMIT 3000)").Scan(&n); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, r := range readers {
		r.Close()
	}
	var total int64
	used := pageCachesUsed(t, db)
	for _, n := range used {
		total += n
	}
	budget := int64(writerCacheKiB+sqliteReaders*readerCacheKiB+checkpointCacheKiB) << 10
	// SQLite's figure counts each page's headers beside the bytes cache_size divides by
	// (a few percent more), and each connection's pager and a page of its own.
	if bound := budget*105/100 + int64(len(used))*16<<10; total > bound {
		t.Fatalf("the page caches hold %d KiB (%v bytes by connection, writer first), want at most the %d KiB budget", total>>10, used, budget>>10)
	}
	if total < budget/2 {
		t.Fatalf("the page caches hold %d KiB after 6 MB written and read, want them filled towards the %d KiB budget: the test no longer fills them", total>>10, budget>>10)
	}
}

// pageCachesUsed reports the memory each of db's SQLite connections holds in its page
// cache (SQLITE_DBSTATUS_CACHE_USED): the writer's, the readers' and the checkpointer's,
// opening any not open yet.
func pageCachesUsed(t *testing.T, db *DB) []int64 {
	t.Helper()
	read, _ := db.read.DB()
	var used []int64
	for _, pool := range []struct {
		db    *sql.DB
		conns int
	}{{db.SQL(), 1}, {read, sqliteReaders}, {db.checkpoints.db, 1}} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var conns []*sql.Conn
		for range pool.conns {
			c, err := pool.db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			conns = append(conns, c)
		}
		for _, c := range conns {
			err := c.Raw(func(dc any) error {
				// The driver's connection keeps the SQLite handle in its first field.
				v := reflect.ValueOf(dc).Elem()
				if f := v.Type().Field(0); f.Name != "db" || f.Type.Kind() != reflect.Uintptr {
					return fmt.Errorf("the driver's connection starts with %s %s, not the handle", f.Name, f.Type)
				}
				handle := *(*uintptr)(v.Addr().UnsafePointer())
				tls := libc.NewTLS()
				defer tls.Close()
				p := tls.Alloc(8)
				defer tls.Free(8)
				if rc := sqlite3.Xsqlite3_db_status(tls, handle, sqlite3.SQLITE_DBSTATUS_CACHE_USED, p, p+4, 0); rc != sqlite3.SQLITE_OK {
					return fmt.Errorf("sqlite3_db_status: %d", rc)
				}
				used = append(used, int64(*(*int32)(unsafe.Add(unsafe.Pointer(nil), p))))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return used
}

// openEmbedded opens the embedded database in a fresh data directory, closed when the
// test ends.
func openEmbedded(t *testing.T) *DB {
	t.Helper()
	db, err := Open(Options{DataDir: t.TempDir(), SecretKey: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
