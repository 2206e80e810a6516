package auth

import (
	"context"
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
