package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reso-project/reso/middleware/auth"
	"github.com/reso-project/reso/middleware/auth/authtest"
)

func TestStore(t *testing.T) {
	for _, path := range []string{":memory:", filepath.Join(t.TempDir(), "a?b#c%d.db")} {
		t.Run(path, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			id, err := s.Register(ctx, "a@b", "localhost", "h1")
			if err != nil || id != 1 {
				t.Fatalf("Register = %d, %v; want 1", id, err)
			}
			id2, _ := s.Register(ctx, "c@d", "localhost", "h2")
			id3, _ := s.Register(ctx, "a@b", "other", "h3")
			if again, _ := s.Register(ctx, "a@b", "localhost", "h4"); again != id || id2 == id || id3 == id || id3 == id2 {
				t.Fatalf("ids %d %d %d %d", id, id2, id3, again)
			}
			// Reads from many goroutines at once: with ":memory:" they must
			// all see the same database.
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(func() {
					rec, err := s.ByEmail(ctx, "a@b", "localhost")
					if err != nil || rec != (auth.LoginRecord{ID: id, Email: "a@b", Realm: "localhost", Hash: "h4"}) {
						t.Errorf("ByEmail = %+v, %v", rec, err)
					}
				})
			}
			wg.Wait()
			if err := s.SetToken(ctx, id, "tok"); err != nil {
				t.Fatal(err)
			}
			if rec, err := s.ByID(ctx, id); err != nil || rec.Token != "tok" || rec.Hash != "h4" {
				t.Errorf("ByID = %+v, %v", rec, err)
			}
			if err := s.SetToken(ctx, 99, "x"); !errors.Is(err, auth.ErrNoRecord) {
				t.Errorf("SetToken(99) = %v", err)
			}
			if _, err := s.ByID(ctx, 99); !errors.Is(err, auth.ErrNoRecord) {
				t.Errorf("ByID(99) = %v", err)
			}
			if _, err := s.ByEmail(ctx, "a@b", "nowhere"); !errors.Is(err, auth.ErrNoRecord) {
				t.Errorf("ByEmail in another realm = %v", err)
			}
			if ok, err := s.ClearToken(ctx, id, "other"); ok || err != nil {
				t.Errorf("ClearToken(other) = %v, %v", ok, err)
			}
			authtest.TokenGuard(t, s, s, id)
			if err := s.SetToken(ctx, id, "tok"); err != nil {
				t.Fatal(err)
			}
			if ok, err := s.ClearToken(ctx, id, "tok"); !ok || err != nil {
				t.Errorf("ClearToken(tok) = %v, %v", ok, err)
			}
			if ok, _ := s.ClearToken(ctx, id, ""); ok {
				t.Error("ClearToken of an empty token reported a change")
			}
			if rec, _ := s.ByID(ctx, id); rec.Token != "" {
				t.Errorf("token %q after ClearToken", rec.Token)
			}
		})
	}
}

// TestSyncFull: OpenSync with SyncFull sets synchronous=FULL (2) on the
// writer connection, in WAL mode still.
func TestSyncFull(t *testing.T) {
	ctx := context.Background()
	s, err := OpenSync(ctx, filepath.Join(t.TempDir(), "reso.db"), SyncFull)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mode string
	var sync int
	s.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
	s.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync)
	if mode != "wal" || sync != 2 {
		t.Errorf("journal_mode %q synchronous %d; want wal, 2 (FULL)", mode, sync)
	}
	if _, err := OpenSync(ctx, filepath.Join(t.TempDir(), "reso.db"), Sync(7)); err == nil {
		t.Error("OpenSync with Sync(7) opened")
	}
}

func TestWAL(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "reso.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mode string
	var sync, busy int
	s.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
	s.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync)
	s.w.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy)
	if mode != "wal" || sync != 1 || busy != busyTimeoutMS {
		t.Errorf("journal_mode %q synchronous %d busy_timeout %d; want wal, 1 (NORMAL), %d", mode, sync, busy, busyTimeoutMS)
	}
	s.r.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy)
	if busy != busyTimeoutMS {
		t.Errorf("reader busy_timeout %d", busy)
	}
	if _, err := s.r.ExecContext(ctx, "UPDATE logins SET token = ''"); err == nil {
		t.Error("the read pool can write")
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Errorf("no WAL file: %v", err)
	}
}

func TestOpenError(t *testing.T) {
	_, err := Open(context.Background(), filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"))
	if err == nil || !strings.HasPrefix(err.Error(), "sqlitestore: ") {
		t.Errorf("Open in a missing directory: %v", err)
	}
}

// rootBypasses reports whether this process ignores file permissions (as
// root does), which makes the permission cases untestable.
func rootBypasses(t *testing.T) bool {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "locked")
	if err := os.Mkdir(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	f, err := os.Create(filepath.Join(dir, "probe"))
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// TestOpenErrors checks that the errors of Open name the
// problem in words.
func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "plain.txt")
	if err := os.WriteFile(file, []byte("hello, this is not an SQLite database at all\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("SQLite"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An SQLite database of another application, and one with a table
	// logins of another shape.
	other, shape := filepath.Join(dir, "other.db"), filepath.Join(dir, "shape.db")
	for _, tt := range []struct{ path, ddl string }{
		{other, "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)"},
		{shape, "CREATE TABLE logins (id INTEGER PRIMARY KEY, name TEXT)"},
	} {
		db, err := sql.Open("sqlite", tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(tt.ddl); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	cases := []struct {
		name, path, want string
	}{
		{"path under a regular file", filepath.Join(file, "x.db"), "not a directory"},
		{"missing directory", filepath.Join(dir, "no", "such", "x.db"), "no such file or directory"},
		{"a directory", dir, "is a directory"},
		{"not an SQLite file", file, "not a reso database (not an SQLite file)"},
		{"a short file", short, "not a reso database (not an SQLite file)"},
		{"another application's database", other, "not a reso database (it has tables, none of them logins)"},
		{"another table logins", shape, "not a reso database (table logins has no column email)"},
	}
	if rootBypasses(t) {
		t.Log("this process ignores file permissions (root): the permission cases are skipped")
	} else {
		locked := filepath.Join(dir, "locked")
		if err := os.Mkdir(locked, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(locked, 0o755) })
		ro := filepath.Join(dir, "ro.db")
		s, err := Open(ctx, ro)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if err := os.Chmod(ro, 0o444); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(ro, 0o644) })
		// A writable database in a directory that has become read-only:
		// SQLite cannot create its -wal and -shm files beside it.
		lockedDB := filepath.Join(dir, "later", "reso.db")
		os.Mkdir(filepath.Dir(lockedDB), 0o755)
		s, err = Open(ctx, lockedDB)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		for _, p := range []string{lockedDB + "-wal", lockedDB + "-shm"} {
			os.Remove(p)
		}
		if err := os.Chmod(filepath.Dir(lockedDB), 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(filepath.Dir(lockedDB), 0o755) })
		noread := filepath.Join(dir, "noread.db")
		if err := os.WriteFile(noread, nil, 0); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, []struct{ name, path, want string }{
			{"directory without write permission", filepath.Join(locked, "x.db"), "permission denied"},
			{"read-only file", ro, "is read-only"},
			{"unreadable file", noread, "permission denied"},
			{"database in a directory without write permission", lockedDB, "permission denied"},
		}...)
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(ctx, tt.path)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q): no error", tt.path)
			}
			t.Logf("%v", err)
			if !strings.HasPrefix(err.Error(), "sqlitestore: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open(%q) = %q, want it to say %q", tt.path, err, tt.want)
			}
		})
	}
	// The refused files are left as they were.
	if b, _ := os.ReadFile(file); !strings.HasPrefix(string(b), "hello") {
		t.Errorf("%s changed: %q", file, b)
	}
	for _, p := range []string{other, shape} {
		db, err := sql.Open("sqlite", p)
		if err != nil {
			t.Fatal(err)
		}
		var mode string
		db.QueryRow("PRAGMA journal_mode").Scan(&mode)
		db.Close()
		if mode != "delete" {
			t.Errorf("%s: journal mode %q after a refused open, want it untouched (delete)", p, mode)
		}
	}
}

// TestOpenEmptyFile: an empty file is an empty database.
func TestOpenEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Register(context.Background(), "a@b", "localhost", "h"); err != nil {
		t.Fatal(err)
	}
}
