package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSQLiteStore(t *testing.T) {
	for _, path := range []string{":memory:", filepath.Join(t.TempDir(), "a?b#c%d.db")} {
		t.Run(path, func(t *testing.T) {
			ctx := context.Background()
			s, err := OpenSQLite(ctx, path)
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
					if err != nil || rec != (Record{ID: id, Email: "a@b", Realm: "localhost", Hash: "h4"}) {
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
			if err := s.SetToken(ctx, 99, "x"); !errors.Is(err, ErrNoRecord) {
				t.Errorf("SetToken(99) = %v", err)
			}
			if _, err := s.ByID(ctx, 99); !errors.Is(err, ErrNoRecord) {
				t.Errorf("ByID(99) = %v", err)
			}
			if _, err := s.ByEmail(ctx, "a@b", "nowhere"); !errors.Is(err, ErrNoRecord) {
				t.Errorf("ByEmail in another realm = %v", err)
			}
			if ok, err := s.ClearToken(ctx, id, "other"); ok || err != nil {
				t.Errorf("ClearToken(other) = %v, %v", ok, err)
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

func TestSQLiteWAL(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "reso.db")
	s, err := OpenSQLite(ctx, path)
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

// TestRestart checks that records and tokens survive closing and reopening
// the database with the same secret.
func TestRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dbPath, secretPath := filepath.Join(dir, "reso.db"), filepath.Join(dir, "secret")

	start := func() (*Authenticator, *SQLiteStore, *fixture) {
		secret, err := LoadSecret(secretPath)
		if err != nil {
			t.Fatal(err)
		}
		st, err := OpenSQLite(ctx, dbPath)
		if err != nil {
			t.Fatal(err)
		}
		a, err := New(Config{Store: st, Secret: secret})
		if err != nil {
			t.Fatal(err)
		}
		f := &fixture{a: a, store: st}
		f.srv = newServer(t, f.handler())
		return a, st, f
	}

	a, st, f := start()
	id, err := a.Register(ctx, testEmail, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	r := f.get(t, "/", basic(testEmail, testPassword))
	tok := wantSession(t, r, id)
	hash := f.stored(t, id).Hash
	f.srv.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	a2, st2, f2 := start()
	defer st2.Close()
	// The server registers its -login user at every start: same password,
	// same session.
	if id2, err := a2.Register(ctx, testEmail, testPassword); err != nil || id2 != id {
		t.Fatalf("register after restart: %d, %v", id2, err)
	}
	rec := f2.stored(t, id)
	if rec.Email != testEmail || rec.Token != tok || rec.Hash != hash {
		t.Fatalf("record after restart %+v", rec)
	}
	if r := f2.get(t, "/", cookies(fmt.Sprint(id), tok)); r.status != "200 OK" {
		t.Errorf("cookie session after restart: %q", r.status)
	}
	if r := f2.get(t, "/u/"+fmt.Sprint(id)+"/"+tok); r.status != "200 OK" {
		t.Errorf("route token after restart: %q", r.status)
	}
	if r := f2.get(t, "/", basic(testEmail, testPassword)); r.status != "200 OK" {
		t.Errorf("Basic after restart: %q", r.status)
	}
	if r := f2.get(t, "/e/admin/"+AdminToken(f2.a.secret)); r.status != "200 OK" {
		t.Errorf("administrator after restart: %q", r.status)
	}
}

// TestConcurrentLogins runs 100 concurrent Basic logins against a real
// SQLite file, each by its own user, with a cold cache: no busy errors, and
// every issued token is stored.
func TestConcurrentLogins(t *testing.T) {
	const n = 100
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "reso.db")
	st, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	a, err := New(Config{Store: st, Secret: testSecret, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	// Registration itself, concurrently.
	ids := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id, err := a.Register(ctx, fmt.Sprintf("u%d@example.com", i), fmt.Sprint("pw", i))
			if err != nil {
				t.Errorf("register %d: %v", i, err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	st.Close()

	// A new process: new store, empty cache, a later second.
	st, err = OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clk.Advance(time.Second)
	a, err = New(Config{Store: st, Secret: testSecret, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{a: a, store: st, clock: clk}
	f.srv = newServer(t, f.handler())
	f.srv.Client().Transport.(interface{ CloseIdleConnections() }).CloseIdleConnections()

	tokens := make([]string, n)
	for i := range n {
		wg.Go(func() {
			r := f.get(t, "/", basic(fmt.Sprintf("u%d@example.com", i), fmt.Sprint("pw", i)))
			if r.status != "200 OK" {
				t.Errorf("login %d: %q %q", i, r.status, r.body)
				return
			}
			if c := r.cookie(CookieToken); c != nil {
				tokens[i] = c.Value
			}
		})
	}
	wg.Wait()

	// Read back through a separate connection to the file.
	check, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	seen := map[int64]bool{}
	for i, id := range ids {
		if seen[id] {
			t.Errorf("id %d given twice", id)
		}
		seen[id] = true
		rec, err := check.ByID(ctx, id)
		if err != nil || rec.Token != tokens[i] || !validToken(testSecret, id, rec.Token) {
			t.Errorf("user %d: stored %+v, %v; cookie token %q", i, rec, err, tokens[i])
		}
	}
}

// TestConcurrentSessions hammers one user with logins, logouts and cookie
// checks at once (run with -race); afterwards memory and the database agree.
func TestConcurrentSessions(t *testing.T) {
	ctx := context.Background()
	st, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "reso.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clk := newClock()
	a, err := New(Config{Store: st, Secret: testSecret, Now: clk.Now, MaxCached: 4})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{a: a, store: st, clock: clk}
	f.srv = newServer(t, f.handler())
	var ids []int64
	for i := range 8 {
		id, err := a.Register(ctx, fmt.Sprintf("u%d@example.com", i), "pw")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 20 {
				u := (g + i) % len(ids)
				email := fmt.Sprintf("u%d@example.com", u)
				switch i % 4 {
				case 0:
					clk.Advance(time.Second)
					f.get(t, "/", basic(email, "pw"))
				case 1:
					tok, _ := st.ByID(ctx, ids[u])
					f.get(t, "/", cookies(fmt.Sprint(ids[u]), tok.Token))
				case 2:
					tok, _ := st.ByID(ctx, ids[u])
					f.get(t, "/logout", cookies(fmt.Sprint(ids[u]), tok.Token))
				case 3:
					if _, err := a.Register(ctx, email, "pw"); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		db, _ := st.ByID(ctx, id)
		if mem, ok := a.cache.id(id); ok && mem != db {
			t.Errorf("memory %+v, database %+v", mem, db)
		}
	}
	if len(a.cache.byID) > 4 || len(a.cache.byEmail) > 4 {
		t.Errorf("cache holds %d records, %d e-mails; want at most 4", len(a.cache.byID), len(a.cache.byEmail))
	}
}

func TestOpenSQLiteError(t *testing.T) {
	_, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"))
	if err == nil || !strings.HasPrefix(err.Error(), "auth: ") {
		t.Errorf("OpenSQLite in a missing directory: %v", err)
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

// TestOpenSQLiteErrors checks that the errors of OpenSQLite name the
// problem in words.
func TestOpenSQLiteErrors(t *testing.T) {
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
		s, err := OpenSQLite(ctx, ro)
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
		s, err = OpenSQLite(ctx, lockedDB)
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
			s, err := OpenSQLite(ctx, tt.path)
			if err == nil {
				s.Close()
				t.Fatalf("OpenSQLite(%q): no error", tt.path)
			}
			t.Logf("%v", err)
			if !strings.HasPrefix(err.Error(), "auth: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("OpenSQLite(%q) = %q, want it to say %q", tt.path, err, tt.want)
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

// TestOpenSQLiteEmptyFile: an empty file is an empty database.
func TestOpenSQLiteEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Register(context.Background(), "a@b", "localhost", "h"); err != nil {
		t.Fatal(err)
	}
}
