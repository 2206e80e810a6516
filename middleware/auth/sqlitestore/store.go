// Package sqlitestore keeps the login records of package auth in an SQLite
// database through the pure Go driver modernc.org/sqlite. It lives apart
// from package auth so that a program that embeds the authenticator with a
// store of its own does not link SQLite.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go

	"github.com/reso-project/reso/middleware/auth"
)

// busyTimeoutMS is how long a connection waits for a lock held by another
// connection or process before it reports SQLITE_BUSY.
const busyTimeoutMS = 5000

const schema = `CREATE TABLE IF NOT EXISTS logins (
	id    INTEGER PRIMARY KEY AUTOINCREMENT,
	email TEXT NOT NULL,
	realm TEXT NOT NULL,
	hash  TEXT NOT NULL,
	token TEXT NOT NULL DEFAULT '',
	UNIQUE (email, realm)
)`

// Store is an [auth.Store] in an SQLite database, through the pure Go driver
// modernc.org/sqlite. The database runs in WAL mode with synchronous=NORMAL
// (or FULL, see [Sync]) and a busy timeout; all writes go through one
// writer connection in BEGIN IMMEDIATE transactions, reads through a small
// pool of read-only connections. It also implements [auth.Lister] and [auth.Remover]. Open it
// with [Open] or [OpenSync].
type Store struct {
	w *sql.DB // one connection: every write, BEGIN IMMEDIATE
	r *sql.DB // read-only pool; the same as w for an in-memory database

	byID, byEmail *sql.Stmt
}

// Sync is SQLite's synchronous setting of the store's writer connection:
// what a commit waits for.
type Sync int

const (
	// SyncNormal is synchronous=NORMAL, the default: in WAL mode a commit
	// survives a crash of the process, but the last ones before a power
	// loss may roll back.
	SyncNormal Sync = iota
	// SyncFull is synchronous=FULL: every commit waits until the
	// write-ahead log is on disk (fsync), and survives a power loss.
	SyncFull
)

// String returns the setting as SQLite's PRAGMA names it.
func (s Sync) String() string {
	if s == SyncFull {
		return "FULL"
	}
	return "NORMAL"
}

// Open opens (creating when missing) the SQLite database file at path
// and its login table, with synchronous=NORMAL. The path ":memory:" (or
// "") opens a private in-memory database that keeps nothing after Close.
//
// Errors name the problem in words: "permission denied" (the file, or the
// directory where SQLite keeps its -wal and -shm files beside it, may not
// be written), "read-only" (a file that may be read but not written, or a
// read-only file system), "not a reso database" (a file that is not an
// SQLite database, or one whose tables are not reso's), and the text of the
// system error otherwise ("not a directory", "no such file or directory").
func Open(ctx context.Context, path string) (*Store, error) {
	return OpenSync(ctx, path, SyncNormal)
}

// OpenSync is Open with SQLite's synchronous setting sync on the writer
// connection (a ":memory:" database ignores it).
func OpenSync(ctx context.Context, path string, sync Sync) (*Store, error) {
	if sync != SyncNormal && sync != SyncFull {
		return nil, fmt.Errorf("sqlitestore: open %q: unknown sync setting %d", path, int(sync))
	}
	s := &Store{}
	mem := path == "" || path == ":memory:"
	var wdsn, rdsn, abs string
	if mem {
		// Every connection to ":memory:" is a database of its own, so the
		// store keeps exactly one connection and reads through it too.
		wdsn = ":memory:?_txlock=immediate&_pragma=busy_timeout(" + fmt.Sprint(busyTimeoutMS) + ")"
	} else {
		var err error
		if abs, err = filepath.Abs(path); err != nil {
			return nil, fmt.Errorf("sqlitestore: database %q: %w", path, err)
		}
		nonEmpty, err := checkFile(path, abs)
		if err != nil {
			return nil, err
		}
		uri := "file:" + escapeURIPath(abs)
		if nonEmpty {
			// Look before the writer's pragmas (WAL) change anything.
			if err := checkShapeRO(ctx, uri); err != nil {
				return nil, openError(path, abs, err)
			}
		}
		wdsn = uri + "?_txlock=immediate" +
			"&_pragma=busy_timeout(" + fmt.Sprint(busyTimeoutMS) + ")" +
			"&_pragma=journal_mode(WAL)&_pragma=synchronous(" + sync.String() + ")"
		rdsn = uri + "?_pragma=busy_timeout(" + fmt.Sprint(busyTimeoutMS) + ")&_pragma=query_only(1)"
	}
	fail := func(err error) (*Store, error) {
		s.Close()
		return nil, openError(path, abs, err)
	}
	w, err := sql.Open("sqlite", wdsn)
	if err != nil {
		return nil, openError(path, abs, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s.w, s.r = w, w
	if err := checkShape(ctx, w); err != nil {
		return fail(err)
	}
	if _, err := w.ExecContext(ctx, schema); err != nil {
		return fail(err)
	}
	if _, err := w.ExecContext(ctx, changesSchema); err != nil {
		return fail(err)
	}
	if !mem {
		var mode string
		if err := w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			return fail(err)
		}
		if !strings.EqualFold(mode, "wal") {
			return fail(fmt.Errorf("journal mode %q, want wal", mode))
		}
		r, err := sql.Open("sqlite", rdsn)
		if err != nil {
			return fail(err)
		}
		n := max(4, runtime.GOMAXPROCS(0))
		r.SetMaxOpenConns(n)
		r.SetMaxIdleConns(n)
		s.r = r
	}
	if s.byID, err = s.r.PrepareContext(ctx, "SELECT id, email, realm, hash, token FROM logins WHERE id = ?"); err == nil {
		s.byEmail, err = s.r.PrepareContext(ctx, "SELECT id, email, realm, hash, token FROM logins WHERE email = ? AND realm = ?")
	}
	if err != nil {
		return fail(err)
	}
	return s, nil
}

// sqliteMagic starts every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// Primary SQLite result codes that Open names in words.
const (
	sqliteReadOnly = 8  // SQLITE_READONLY
	sqliteCantOpen = 14 // SQLITE_CANTOPEN
	sqliteNotADB   = 26 // SQLITE_NOTADB
)

// errNotReso marks a file that is not a reso database.
var errNotReso = errors.New("not a reso database")

// checkFile checks, before SQLite opens it, that the database file at abs
// can be read and written and is an SQLite file (or empty, or missing: then
// SQLite creates it). It reports whether the file has content.
func checkFile(path, abs string) (nonEmpty bool, err error) {
	f, err := os.OpenFile(abs, os.O_RDWR, 0)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		return false, nil // created by SQLite; openError names a directory problem
	case errors.Is(err, syscall.EROFS):
		return false, fmt.Errorf("sqlitestore: database %q is read-only: on a read-only file system", path)
	case errors.Is(err, fs.ErrPermission):
		if g, rerr := os.Open(abs); rerr == nil {
			g.Close()
			return false, fmt.Errorf("sqlitestore: database %q is read-only: the file may be read but not written (permission denied)", path)
		}
		return false, fmt.Errorf("sqlitestore: database %q: %w", path, err)
	default:
		return false, fmt.Errorf("sqlitestore: database %q: %w", path, err)
	}
	defer f.Close()
	var head [len(sqliteMagic)]byte
	n, err := io.ReadFull(f, head[:])
	switch {
	case n == 0 && (err == io.EOF || err == nil):
		return false, nil // an empty file is an empty database
	case err != nil && err != io.ErrUnexpectedEOF:
		return false, fmt.Errorf("sqlitestore: database %q: %w", path, err)
	case string(head[:n]) != sqliteMagic:
		return false, fmt.Errorf("sqlitestore: database %q: %w (not an SQLite file)", path, errNotReso)
	}
	return true, nil
}

// checkShapeRO runs checkShape on a read-only connection to the database
// file at the SQLite URI uri.
func checkShapeRO(ctx context.Context, uri string) error {
	db, err := sql.Open("sqlite", uri+"?mode=ro&_pragma=busy_timeout("+fmt.Sprint(busyTimeoutMS)+")")
	if err != nil {
		return err
	}
	defer db.Close()
	return checkShape(ctx, db)
}

// loginColumns are the columns of reso's table logins.
var loginColumns = []string{"id", "email", "realm", "hash", "token"}

// checkShape checks that the database is empty or holds reso's table
// logins (or only the resource channel's tables), so that reso never writes into another application's database.
func checkShape(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
	if err != nil {
		return err
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, name)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	if len(tables) == 0 {
		return nil
	}
	found, channelOnly := false, true
	for _, t := range tables {
		found = found || t == "logins"
		channelOnly = channelOnly && strings.HasPrefix(t, "channel_")
	}
	if channelOnly {
		// Only the resource channel's tables (package
		// channel/sqlitestore): reso's file, without logins yet.
		return nil
	}
	if !found {
		return fmt.Errorf("%w (it has tables, none of them logins)", errNotReso)
	}
	cols := map[string]bool{}
	rows, err = db.QueryContext(ctx, "SELECT name FROM pragma_table_info('logins')")
	if err != nil {
		return err
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		cols[name] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	for _, c := range loginColumns {
		if !cols[c] {
			return fmt.Errorf("%w (table logins has no column %s)", errNotReso, c)
		}
	}
	return nil
}

// openError names the error err of opening the database at path (absolute:
// abs, "" in memory) in words.
func openError(path, abs string, err error) error {
	var se interface{ Code() int }
	code := -1
	if errors.As(err, &se) {
		code = se.Code() & 0xff
	}
	switch {
	case errors.Is(err, errNotReso):
		return fmt.Errorf("sqlitestore: database %q: %w", path, err)
	case code == sqliteNotADB:
		return fmt.Errorf("sqlitestore: database %q: %w (%v)", path, errNotReso, err)
	case abs != "" && (code == sqliteCantOpen || code == sqliteReadOnly):
		// SQLite creates the database, its -wal and its -shm files in the
		// directory of the file: find out whether it may.
		dir := filepath.Dir(abs)
		if _, serr := os.Stat(dir); serr != nil {
			return fmt.Errorf("sqlitestore: database %q: directory: %w", path, serr)
		}
		probe, perr := os.CreateTemp(dir, ".reso-probe-*")
		if perr == nil {
			probe.Close()
			os.Remove(probe.Name())
		} else if errors.Is(perr, syscall.EROFS) {
			return fmt.Errorf("sqlitestore: database %q is read-only: on a read-only file system (%v)", path, err)
		} else {
			var pe *fs.PathError
			if errors.As(perr, &pe) {
				perr = pe.Err // the probe's name says nothing
			}
			return fmt.Errorf("sqlitestore: database %q: directory %q may not be written (SQLite keeps its -wal and -shm files there): %w", path, dir, perr)
		}
		if code == sqliteReadOnly {
			return fmt.Errorf("sqlitestore: database %q is read-only: %w", path, err)
		}
	case code == sqliteReadOnly:
		return fmt.Errorf("sqlitestore: database %q is read-only: %w", path, err)
	}
	return fmt.Errorf("sqlitestore: open database %q: %w", path, err)
}

// escapeURIPath escapes the characters that end or escape the path of an
// SQLite URI filename.
func escapeURIPath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(p))
}

// write runs fn in a BEGIN IMMEDIATE transaction on the writer connection.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlitestore: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlitestore: commit: %w", err)
	}
	return nil
}

// Register implements [auth.Store].
func (s *Store) Register(ctx context.Context, email, realm, hash string) (int64, error) {
	var id int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO logins (email, realm, hash) VALUES (?, ?, ?)
			ON CONFLICT (email, realm) DO UPDATE SET hash = excluded.hash,
				token = CASE WHEN hash = excluded.hash THEN token ELSE '' END RETURNING id`,
			email, realm, hash).Scan(&id)
		if err != nil {
			return fmt.Errorf("sqlitestore: register %q: %w", email, err)
		}
		return nil
	})
	return id, err
}

func scanRecord(row *sql.Row) (auth.LoginRecord, error) {
	var rec auth.LoginRecord
	err := row.Scan(&rec.ID, &rec.Email, &rec.Realm, &rec.Hash, &rec.Token)
	if errors.Is(err, sql.ErrNoRows) {
		return auth.LoginRecord{}, auth.ErrNoRecord
	}
	if err != nil {
		return auth.LoginRecord{}, fmt.Errorf("sqlitestore: read login record: %w", err)
	}
	return rec, nil
}

// ByID implements [auth.Store]. A read cut short by ctx returns ctx's error.
func (s *Store) ByID(ctx context.Context, id int64) (auth.LoginRecord, error) {
	rec, err := scanRecord(s.byID.QueryRowContext(ctx, id))
	return rec, readError(ctx, err)
}

// ByEmail implements [auth.Store]. A read cut short by ctx returns ctx's error.
func (s *Store) ByEmail(ctx context.Context, email, realm string) (auth.LoginRecord, error) {
	rec, err := scanRecord(s.byEmail.QueryRowContext(ctx, email, realm))
	return rec, readError(ctx, err)
}

// SetToken implements [auth.Store].
func (s *Store) SetToken(ctx context.Context, id int64, token string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE logins SET token = ? WHERE id = ?", token, id)
		if err != nil {
			return fmt.Errorf("sqlitestore: set token of %d: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return auth.ErrNoRecord
		}
		return nil
	})
}

// SetTokenIfHash implements [auth.TokenGuard].
func (s *Store) SetTokenIfHash(ctx context.Context, id int64, hash, token string) (bool, error) {
	var set bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		var cur string
		err := tx.QueryRowContext(ctx, "SELECT hash FROM logins WHERE id = ?", id).Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) {
			return auth.ErrNoRecord
		}
		if err != nil {
			return fmt.Errorf("sqlitestore: set token of %d: %w", id, err)
		}
		if cur != hash {
			return nil
		}
		if _, err := tx.ExecContext(ctx, "UPDATE logins SET token = ? WHERE id = ?", token, id); err != nil {
			return fmt.Errorf("sqlitestore: set token of %d: %w", id, err)
		}
		set = true
		return nil
	})
	return set, err
}

// ClearToken implements [auth.Store].
func (s *Store) ClearToken(ctx context.Context, id int64, token string) (bool, error) {
	var done bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE logins SET token = '' WHERE id = ? AND token = ? AND token <> ''", id, token)
		if err != nil {
			return fmt.Errorf("sqlitestore: clear token of %d: %w", id, err)
		}
		n, err := res.RowsAffected()
		done = err == nil && n > 0
		return nil
	})
	return done, err
}

// Close closes the database.
func (s *Store) Close() error {
	for _, st := range []*sql.Stmt{s.byID, s.byEmail} {
		if st != nil {
			st.Close()
		}
	}
	var err error
	if s.r != s.w {
		err = s.r.Close()
	}
	return errors.Join(err, s.w.Close())
}

// readError returns the error of a read: the context's own error when ctx
// ended (the client went away; no server failure), else err.
func readError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, auth.ErrNoRecord) {
		return cerr
	}
	return err
}

var (
	_ auth.Store      = (*Store)(nil)
	_ auth.TokenGuard = (*Store)(nil)
)
