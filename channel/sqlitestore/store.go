// Package sqlitestore keeps the persistent resources of a channel tree
// ([channel.Store]) in an SQLite database through the pure Go driver
// modernc.org/sqlite, in tables of its own (channel_resources and
// channel_meta) that may share the file of the login database. It lives
// apart from package channel so that the tree links no SQL driver.
package sqlitestore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go

	"github.com/reso-project/reso/channel"
)

// busyTimeoutMS is how long a connection waits for a lock held by another
// connection (the login store's, on the same file) before SQLITE_BUSY.
const busyTimeoutMS = 5000

// checkpointPages is the size of the write-ahead log, in pages of 4 KiB,
// past which a commit copies it into the database (SQLite's default is
// 1,000). Under a steady load of writes to many places, the log holds the
// same few pages many times over; a longer one has each copied once per
// checkpoint, with the checkpoint's two fsyncs, for ten times as many
// records: about a fifth less CPU per record saved in batches of 512
// and a tenth of the fsyncs (BenchmarkSave), for a log file of up to
// 40 MiB.
const checkpointPages = 10000

// columnsAdded are the columns a table made by an older reso lacks, added
// at Open: the permissions of a resource (the rule text, and the group as
// a JSON array of e-mails, NULL for none).
var columnsAdded = []struct{ name, def string }{
	{"rule", "rule TEXT NOT NULL DEFAULT ''"},
	{"grp", "grp TEXT"},
}

const schema = `CREATE TABLE IF NOT EXISTS channel_resources (
	path    TEXT PRIMARY KEY,
	type    TEXT NOT NULL DEFAULT '',
	entity  BLOB,
	creator TEXT NOT NULL DEFAULT '',
	created INTEGER NOT NULL,
	rule    TEXT NOT NULL DEFAULT '',
	grp     TEXT
);
CREATE TABLE IF NOT EXISTS channel_meta (
	key   TEXT PRIMARY KEY,
	value INTEGER NOT NULL
)`

// Store is a [channel.Store] in an SQLite database: WAL mode,
// synchronous=NORMAL (or FULL, see [Sync]), a busy timeout, and one
// connection that does every read and write (the tree loads once and then
// only writes, in transactions of one group commit each). Open it with
// [Open] or [OpenSync].
type Store struct {
	db               *sql.DB
	epoch            string // of the history the file keeps (see Epoch)
	put, del, setSeq *sql.Stmt
	errs, busy       atomic.Uint64 // failed operations, and those of them that found the database busy
}

// Sync is SQLite's synchronous setting of the store's connection: what a
// commit waits for before the changes it carries are acknowledged.
type Sync int

const (
	// SyncNormal is synchronous=NORMAL, the default. In WAL mode a commit
	// appends to the write-ahead log without waiting for the disk (fsync
	// happens at checkpoints): a commit survives a crash or kill -9 of the
	// process, but the last ones before a power loss or a crash of the
	// operating system may roll back. The file stays consistent either way.
	SyncNormal Sync = iota
	// SyncFull is synchronous=FULL: every commit waits for the write-ahead
	// log to be on disk (fsync), so it survives a power loss too.
	SyncFull
)

// String returns the setting as SQLite's PRAGMA names it.
func (s Sync) String() string {
	if s == SyncFull {
		return "FULL"
	}
	return "NORMAL"
}

// Open opens (creating when missing) the SQLite database at path and the
// channel's tables in it, with synchronous=NORMAL. The path ":memory:"
// (or "") opens a private in-memory database that keeps nothing after
// Close.
func Open(path string) (*Store, error) { return OpenSync(path, SyncNormal) }

// OpenSync is Open with SQLite's synchronous setting sync (a ":memory:"
// database has no disk to wait for and ignores it).
func OpenSync(path string, sync Sync) (*Store, error) {
	if sync != SyncNormal && sync != SyncFull {
		return nil, fmt.Errorf("sqlitestore: open %q: unknown sync setting %d", path, int(sync))
	}
	ctx := context.Background()
	mem := path == "" || path == ":memory:"
	dsn := ":memory:?_txlock=immediate&_pragma=busy_timeout(" + fmt.Sprint(busyTimeoutMS) + ")"
	if !mem {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: database %q: %w", path, err)
		}
		dsn = "file:" + escapeURIPath(abs) + "?_txlock=immediate" +
			"&_pragma=busy_timeout(" + fmt.Sprint(busyTimeoutMS) + ")" +
			"&_pragma=journal_mode(WAL)&_pragma=synchronous(" + sync.String() + ")" +
			"&_pragma=wal_autocheckpoint(" + fmt.Sprint(checkpointPages) + ")"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %q: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s := &Store{db: db}
	fail := func(err error) (*Store, error) {
		s.Close()
		return nil, fmt.Errorf("sqlitestore: open %q: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return fail(err)
	}
	if err := addColumns(ctx, db); err != nil {
		return fail(err)
	}
	if !mem {
		var mode string
		if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			return fail(err)
		}
		if !strings.EqualFold(mode, "wal") {
			return fail(fmt.Errorf("journal mode %q, want wal", mode))
		}
	}
	if s.put, err = db.PrepareContext(ctx, `INSERT INTO channel_resources (path, type, entity, creator, created, rule, grp)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET
		type = excluded.type, entity = excluded.entity, creator = excluded.creator, created = excluded.created,
		rule = excluded.rule, grp = excluded.grp`); err != nil {
		return fail(err)
	}
	if s.epoch, err = fileEpoch(ctx, db); err != nil {
		return fail(err)
	}
	if s.del, err = db.PrepareContext(ctx, "DELETE FROM channel_resources WHERE path = ?"); err != nil {
		return fail(err)
	}
	if s.setSeq, err = db.PrepareContext(ctx, `INSERT INTO channel_meta (key, value) VALUES ('last_seq', ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`); err != nil {
		return fail(err)
	}
	return s, nil
}

// Synchronous returns SQLite's synchronous setting in effect on the
// store's connection (PRAGMA synchronous). A ":memory:" database answers
// SQLite's default, whatever OpenSync was given.
func (s *Store) Synchronous(ctx context.Context) (Sync, error) {
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&v); err != nil {
		return 0, fmt.Errorf("sqlitestore: synchronous: %w", err)
	}
	switch v {
	case 1:
		return SyncNormal, nil
	case 2:
		return SyncFull, nil
	}
	return 0, fmt.Errorf("sqlitestore: synchronous is %d, neither NORMAL (1) nor FULL (2)", v)
}

// addColumns adds the columns of columnsAdded that channel_resources
// lacks.
func addColumns(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, "SELECT name FROM pragma_table_info('channel_resources')")
	if err != nil {
		return err
	}
	have := make(map[string]bool)
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		have[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, c := range columnsAdded {
		if !have[c.name] {
			if _, err := db.ExecContext(ctx, "ALTER TABLE channel_resources ADD COLUMN "+c.def); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileEpoch returns the epoch the database keeps in channel_meta (key
// 'epoch'), drawing it first when the database has none (a new file, or
// one of a reso from before epochs): 64 random bits, kept as an INTEGER
// and written as 16 lowercase hex digits.
func fileEpoch(ctx context.Context, db *sql.DB) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	fresh := int64(binary.BigEndian.Uint64(b[:]))
	if _, err := db.ExecContext(ctx, `INSERT INTO channel_meta (key, value) VALUES ('epoch', ?)
		ON CONFLICT (key) DO NOTHING`, fresh); err != nil {
		return "", err
	}
	var v int64
	if err := db.QueryRowContext(ctx, "SELECT value FROM channel_meta WHERE key = 'epoch'").Scan(&v); err != nil {
		return "", err
	}
	return fmt.Sprintf("%016x", uint64(v)), nil
}

// Epoch returns the epoch of the history the database keeps
// ([channel.Epocher]): drawn when the database got its channel tables,
// the same at every Open of the file after. A ":memory:" database gets a
// new one at each Open.
func (s *Store) Epoch() string { return s.epoch }

// escapeURIPath escapes the characters that end the path of a file: URI.
func escapeURIPath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(p))
}

// Load returns every record and the last seq saved.
func (s *Store) Load(ctx context.Context) ([]channel.StoredResource, uint64, error) {
	var last uint64
	err := s.db.QueryRowContext(ctx, "SELECT value FROM channel_meta WHERE key = 'last_seq'").Scan(&last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, 0, fmt.Errorf("sqlitestore: load: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, "SELECT path, type, entity, creator, created, rule, grp FROM channel_resources ORDER BY created, path")
	if err != nil {
		return nil, 0, fmt.Errorf("sqlitestore: load: %w", err)
	}
	defer rows.Close()
	var recs []channel.StoredResource
	for rows.Next() {
		var r channel.StoredResource
		var entity []byte
		var grp sql.NullString
		if err := rows.Scan(&r.Path, &r.Type, &entity, &r.Creator, &r.Created, &r.Rule, &grp); err != nil {
			return nil, 0, fmt.Errorf("sqlitestore: load: %w", err)
		}
		if grp.Valid {
			if err := json.Unmarshal([]byte(grp.String), &r.Group); err != nil || r.Group == nil {
				return nil, 0, fmt.Errorf("sqlitestore: load: group of %q: not a JSON array", r.Path)
			}
		}
		if entity != nil {
			r.Entity = entity
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("sqlitestore: load: %w", err)
	}
	return recs, last, nil
}

// Save stores puts, removes deletes and records lastSeq in one
// transaction.
func (s *Store) Save(ctx context.Context, lastSeq uint64, puts []channel.StoredResource, deletes []string) error {
	return s.count(s.save(ctx, lastSeq, puts, deletes))
}

// Ping reports whether the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return s.count(s.db.QueryRowContext(ctx, "SELECT 1").Scan(&one))
}

// Errors returns how many operations failed since Open, and how many of
// them because the database was busy (locked by another connection past
// the busy timeout).
func (s *Store) Errors() (failed, busy uint64) { return s.errs.Load(), s.busy.Load() }

// count counts err, if any, and returns it.
func (s *Store) count(err error) error {
	if err != nil {
		s.errs.Add(1)
		if msg := err.Error(); strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked") {
			s.busy.Add(1)
		}
	}
	return err
}

func (s *Store) save(ctx context.Context, lastSeq uint64, puts []channel.StoredResource, deletes []string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlitestore: begin: %w", err)
	}
	put, del, setSeq := tx.StmtContext(ctx, s.put), tx.StmtContext(ctx, s.del), tx.StmtContext(ctx, s.setSeq)
	for _, r := range puts {
		var entity any // NULL for a node without entity
		if r.Entity != nil {
			entity = r.Entity
		}
		var grp any // NULL for no group
		if r.Group != nil {
			g, err := json.Marshal(r.Group)
			if err != nil {
				tx.Rollback()
				return fmt.Errorf("sqlitestore: save %q: %w", r.Path, err)
			}
			grp = string(g)
		}
		if _, err := put.ExecContext(ctx, r.Path, r.Type, entity, r.Creator, r.Created, r.Rule, grp); err != nil {
			tx.Rollback()
			return fmt.Errorf("sqlitestore: save %q: %w", r.Path, err)
		}
	}
	for _, p := range deletes {
		if _, err := del.ExecContext(ctx, p); err != nil {
			tx.Rollback()
			return fmt.Errorf("sqlitestore: delete %q: %w", p, err)
		}
	}
	if _, err := setSeq.ExecContext(ctx, lastSeq); err != nil {
		tx.Rollback()
		return fmt.Errorf("sqlitestore: save seq: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlitestore: commit: %w", err)
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error {
	for _, st := range []*sql.Stmt{s.put, s.del, s.setSeq} {
		if st != nil {
			st.Close()
		}
	}
	return s.db.Close()
}

var (
	_ channel.Store   = (*Store)(nil)
	_ channel.Epocher = (*Store)(nil)
)
