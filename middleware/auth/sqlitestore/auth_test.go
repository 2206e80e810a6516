package sqlitestore

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/middleware/auth"
)

const (
	testEmail    = "user@example.com"
	testPassword = "pass:with:colons"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

// server is an authenticator over a store behind a real HTTP server: /u/
// and /e/ carry the route groups, everything else needs an identity.
type server struct {
	a   *auth.Authenticator
	srv *httptest.Server
}

func newAuthServer(t testing.TB, st auth.Store, secret []byte, now func() time.Time) *server {
	t.Helper()
	a, err := auth.New(auth.Config{Store: st, Secret: secret, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	private := auth.Required(a)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	rt, err := core.NewRouter([]core.Route{
		{Match: "GET /u/(?P<user_id>[0-9]+)/(?P<token>[0-9a-f]+)", Handler: private},
		{Match: "GET /e/(?P<email>[^/]+)/(?P<token>[^/]+)", Handler: private},
		{Match: "GET /", Handler: private},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rt)
	t.Cleanup(srv.Close)
	return &server{a: a, srv: srv}
}

// get sends a GET to path with an optional Basic login or cookie session
// and returns the status code and the token cookie, if any.
func (s *server) get(t testing.TB, path, email, password, cookie string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", s.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if email != "" {
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(email+":"+password)))
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == auth.CookieToken {
			return resp.StatusCode, c.Value
		}
	}
	return resp.StatusCode, ""
}

// TestRestart checks that records and tokens survive closing and reopening
// the database with the same secret.
func TestRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dbPath, secretPath := filepath.Join(dir, "reso.db"), filepath.Join(dir, "secret")
	start := func() (*server, *Store, []byte) {
		secret, err := auth.LoadSecret(secretPath)
		if err != nil {
			t.Fatal(err)
		}
		st, err := Open(ctx, dbPath)
		if err != nil {
			t.Fatal(err)
		}
		return newAuthServer(t, st, secret, nil), st, secret
	}

	s, st, _ := start()
	id, err := s.a.Register(ctx, testEmail, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	code, tok := s.get(t, "/", testEmail, testPassword, "")
	if code != 200 || tok == "" {
		t.Fatalf("login: %d, token %q", code, tok)
	}
	before, _ := st.ByID(ctx, id)
	s.srv.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	s2, st2, secret := start()
	defer st2.Close()
	// The server registers its -login user at every start: same password,
	// same session.
	if id2, err := s2.a.Register(ctx, testEmail, testPassword); err != nil || id2 != id {
		t.Fatalf("register after restart: %d, %v", id2, err)
	}
	if rec, _ := st2.ByID(ctx, id); rec.Email != testEmail || rec.Token != tok || rec.Hash != before.Hash {
		t.Fatalf("record after restart %+v", rec)
	}
	for _, tt := range []struct{ what, path, email, cookie string }{
		{"cookie session", "/", "", fmt.Sprintf("user_id=%d; token=%s", id, tok)},
		{"route token", fmt.Sprintf("/u/%d/%s", id, tok), "", ""},
		{"Basic", "/", testEmail, ""},
		{"administrator", "/e/admin/" + auth.AdminToken(secret), "", ""},
	} {
		if code, _ := s2.get(t, tt.path, tt.email, testPassword, tt.cookie); code != 200 {
			t.Errorf("%s after restart: %d", tt.what, code)
		}
	}
}

// TestConcurrentLogins runs 100 concurrent Basic logins against a real
// SQLite file, each by its own user, with a cold cache: no busy errors, and
// every issued token is stored.
func TestConcurrentLogins(t *testing.T) {
	const n = 100
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "reso.db")
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	a, err := auth.New(auth.Config{Store: st, Secret: testSecret, Now: func() time.Time { return now }})
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
	st, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	later := now.Add(time.Second)
	s := newAuthServer(t, st, testSecret, func() time.Time { return later })
	tokens := make([]string, n)
	for i := range n {
		wg.Go(func() {
			code, tok := s.get(t, "/", fmt.Sprintf("u%d@example.com", i), fmt.Sprint("pw", i), "")
			if code != 200 {
				t.Errorf("login %d: %d", i, code)
			}
			tokens[i] = tok
		})
	}
	wg.Wait()

	// Read back through a separate connection to the file.
	check, err := Open(ctx, path)
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
		if err != nil || rec.Token != tokens[i] || len(rec.Token) != 42 {
			t.Errorf("user %d: stored %+v, %v; cookie token %q", i, rec, err, tokens[i])
		}
	}
}
