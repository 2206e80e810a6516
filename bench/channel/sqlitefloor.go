package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the driver reso's store uses
)

// sqliteFloor measures plain SQLite, through the driver and settings of
// reso's store (modernc.org/sqlite, WAL, synchronous=NORMAL), in a new
// file in dir (the disk of reso's -db): prepared INSERTs into a table of
// the store's shape with paths as the writes phases make them (32
// writers, each under its own parent), one transaction each
// (autocommit), then 512 per transaction, for d each. It prints the
// inserts per second and the wall time per insert: the floor of the
// store's cost per persistent write.
func sqliteFloor(w io.Writer, dir string, d time.Duration) error {
	tmp, err := os.MkdirTemp(dir, "sqlitefloor")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "floor.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (path TEXT PRIMARY KEY, type TEXT NOT NULL,
		entity BLOB, creator TEXT NOT NULL, created INTEGER NOT NULL)`); err != nil {
		return err
	}
	ins, err := db.PrepareContext(ctx, "INSERT INTO t (path, type, entity, creator, created) VALUES (?, ?, ?, ?, ?)")
	if err != nil {
		return err
	}
	defer ins.Close()
	var n int64
	insert := func(st *sql.Stmt) error {
		n++
		_, err := st.ExecContext(ctx, fmt.Sprintf("/bench/s/c%d/%d", n%32, n), "application/json", []byte(`{"n":1}`), "", n)
		return err
	}
	for _, batch := range []int{1, 512} {
		start, done := time.Now(), 0
		for time.Since(start) < d {
			if batch == 1 {
				if err := insert(ins); err != nil {
					return err
				}
				done++
				continue
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			st := tx.StmtContext(ctx, ins)
			for range batch {
				if err := insert(st); err != nil {
					tx.Rollback()
					return err
				}
			}
			if err := tx.Commit(); err != nil {
				return err
			}
			done += batch
		}
		el := time.Since(start)
		what := "autocommit"
		if batch > 1 {
			what = fmt.Sprintf("in transactions of %d", batch)
		}
		fmt.Fprintf(w, "  sqlite           %10.0f /s  %.2f µs each  plain SQLite inserts on the same disk, %s (the store's floor)\n",
			float64(done)/el.Seconds(), float64(el.Microseconds())/float64(done), what)
	}
	return nil
}
