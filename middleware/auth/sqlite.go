package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
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

// SQLiteStore is a [Store] in an SQLite database, through the pure Go driver
// modernc.org/sqlite. The database runs in WAL mode with synchronous=NORMAL
// and a busy timeout; all writes go through one writer connection in
// BEGIN IMMEDIATE transactions, reads through a small pool of read-only
// connections. Open it with [OpenSQLite].
type SQLiteStore struct {
	w *sql.DB // one connection: every write, BEGIN IMMEDIATE
	r *sql.DB // read-only pool; the same as w for an in-memory database

	byID, byEmail *sql.Stmt
}

// OpenSQLite opens (creating when missing) the SQLite database file at path
// and its login table. The path ":memory:" (or "") opens a private in-memory
// database that keeps nothing after Close.
func OpenSQLite(ctx context.Context, path string) (*SQLiteStore, error) {
	s := &SQLiteStore{}
	mem := path == "" || path == ":memory:"
	var wdsn, rdsn string
	if mem {
		// Every connection to ":memory:" is a database of its own, so the
		// store keeps exactly one connection and reads through it too.
		wdsn = ":memory:?_txlock=immediate&_pragma=busy_timeout(" + fmt.Sprint(busyTimeoutMS) + ")"
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("auth: database %q: %w", path, err)
		}
		uri := "file:" + escapeURIPath(abs)
		wdsn = uri + "?_txlock=immediate" +
			"&_pragma=busy_timeout(" + fmt.Sprint(busyTimeoutMS) + ")" +
			"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
		rdsn = uri + "?_pragma=busy_timeout(" + fmt.Sprint(busyTimeoutMS) + ")&_pragma=query_only(1)"
	}
	w, err := sql.Open("sqlite", wdsn)
	if err != nil {
		return nil, fmt.Errorf("auth: open database %q: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s.w, s.r = w, w
	if _, err := w.ExecContext(ctx, schema); err != nil {
		w.Close()
		return nil, fmt.Errorf("auth: open database %q: %w", path, err)
	}
	if !mem {
		var mode string
		if err := w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || !strings.EqualFold(mode, "wal") {
			w.Close()
			return nil, fmt.Errorf("auth: open database %q: journal mode %q, want wal (%v)", path, mode, err)
		}
		r, err := sql.Open("sqlite", rdsn)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("auth: open database %q: %w", path, err)
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
		s.Close()
		return nil, fmt.Errorf("auth: open database %q: %w", path, err)
	}
	return s, nil
}

// escapeURIPath escapes the characters that end or escape the path of an
// SQLite URI filename.
func escapeURIPath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(p))
}

// write runs fn in a BEGIN IMMEDIATE transaction on the writer connection.
func (s *SQLiteStore) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("auth: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("auth: commit: %w", err)
	}
	return nil
}

// Register implements [Store].
func (s *SQLiteStore) Register(ctx context.Context, email, realm, hash string) (int64, error) {
	var id int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO logins (email, realm, hash) VALUES (?, ?, ?)
			ON CONFLICT (email, realm) DO UPDATE SET hash = excluded.hash RETURNING id`,
			email, realm, hash).Scan(&id)
		if err != nil {
			return fmt.Errorf("auth: register %q: %w", email, err)
		}
		return nil
	})
	return id, err
}

func scanRecord(row *sql.Row) (Record, error) {
	var rec Record
	err := row.Scan(&rec.ID, &rec.Email, &rec.Realm, &rec.Hash, &rec.Token)
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, ErrNoRecord
	}
	if err != nil {
		return Record{}, fmt.Errorf("auth: read login record: %w", err)
	}
	return rec, nil
}

// ByID implements [Store]. A read cut short by ctx returns ctx's error.
func (s *SQLiteStore) ByID(ctx context.Context, id int64) (Record, error) {
	rec, err := scanRecord(s.byID.QueryRowContext(ctx, id))
	return rec, readError(ctx, err)
}

// ByEmail implements [Store]. A read cut short by ctx returns ctx's error.
func (s *SQLiteStore) ByEmail(ctx context.Context, email, realm string) (Record, error) {
	rec, err := scanRecord(s.byEmail.QueryRowContext(ctx, email, realm))
	return rec, readError(ctx, err)
}

// SetToken implements [Store].
func (s *SQLiteStore) SetToken(ctx context.Context, id int64, token string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE logins SET token = ? WHERE id = ?", token, id)
		if err != nil {
			return fmt.Errorf("auth: set token of %d: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return ErrNoRecord
		}
		return nil
	})
}

// ClearToken implements [Store].
func (s *SQLiteStore) ClearToken(ctx context.Context, id int64, token string) (bool, error) {
	var done bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE logins SET token = '' WHERE id = ? AND token = ? AND token <> ''", id, token)
		if err != nil {
			return fmt.Errorf("auth: clear token of %d: %w", id, err)
		}
		n, err := res.RowsAffected()
		done = err == nil && n > 0
		return nil
	})
	return done, err
}

// Close closes the database.
func (s *SQLiteStore) Close() error {
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

var _ Store = (*SQLiteStore)(nil)
