package main

import (
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqlitePageCaches reads from SQLite's own counters in this process (the embedded
// default's database runs in it) how much memory the connections' page caches hold:
// SQLite keeps them together within the sum of their cache sizes.
func sqlitePageCaches() int64 {
	tls := libc.NewTLS()
	defer tls.Close()
	p := tls.Alloc(8)
	defer tls.Free(8)
	if sqlite3.Xsqlite3_status(tls, sqlite3.SQLITE_STATUS_PAGECACHE_OVERFLOW, p, p+4, 0) != sqlite3.SQLITE_OK {
		return 0
	}
	return int64(*(*int32)(unsafe.Add(unsafe.Pointer(nil), p)))
}
