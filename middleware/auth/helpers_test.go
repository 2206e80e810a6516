package auth

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
)

// Test fixtures: one user in realm localhost.
const (
	testEmail    = "user@example.com"
	testPassword = "pass:with:colons"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

// clock is a settable clock for Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_700_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixture is an authenticator over an in-memory store with one registered
// user, and a real HTTP server in front of it.
type fixture struct {
	a     *Authenticator
	store Store
	clock *clock
	id    int64
	srv   *httptest.Server
}

// newFixture builds a fixture; edit may change the config first.
func newFixture(t testing.TB, edit func(*Config)) *fixture {
	t.Helper()
	st := newMemStore()
	f := &fixture{store: st, clock: newClock()}
	cfg := Config{Store: st, Secret: testSecret, Now: f.clock.Now}
	if edit != nil {
		edit(&cfg)
	}
	var err error
	if f.a, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	if f.id, err = f.a.Register(context.Background(), testEmail, testPassword); err != nil {
		t.Fatal(err)
	}
	f.srv = newServer(t, f.handler())
	return f
}

// handler is the server of the fixture: /logout logs out, /u/ and /e/ carry
// the route groups, /opt/ takes an identity when there is one, everything
// else needs one.
func (f *fixture) handler() http.Handler {
	private := Required(f.a)(http.HandlerFunc(whoami))
	rt, err := core.NewRouter([]core.Route{
		{Match: "GET /logout", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := f.a.Logout(w, r); err != nil {
				core.WriteError(w, r, err)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})},
		{Match: "GET /u/(?P<user_id>[0-9]+)/(?P<token>[0-9a-f]+)", Handler: private},
		{Match: "GET /e/(?P<email>[^/]+)/(?P<token>[^/]+)", Handler: private},
		{Match: "GET /opt/", Handler: Optional(f.a)(http.HandlerFunc(whoamiOptional))},
		{Match: "GET,POST /", Handler: private},
	})
	if err != nil {
		panic(err)
	}
	return rt
}

// whoami answers with the identity of the request.
func whoami(w http.ResponseWriter, r *http.Request) {
	id := core.IdentityFromContext(r.Context())
	if id == nil {
		http.Error(w, "no identity", http.StatusInternalServerError)
		return
	}
	fmt.Fprintf(w, "%d %s", id.ID, id.Email)
}

// whoamiOptional answers with the identity of the request, or "anonymous".
func whoamiOptional(w http.ResponseWriter, r *http.Request) {
	if id := core.IdentityFromContext(r.Context()); id != nil {
		fmt.Fprintf(w, "%d %s", id.ID, id.Email)
		return
	}
	fmt.Fprint(w, "anonymous")
}

// newServer starts a real HTTP server whose status lines carry the exact
// reason phrases of core.
func newServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = core.Listen(srv.Listener)
	srv.Config.ConnContext = core.ConnContext
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// result is what a test looks at in a response.
type result struct {
	status    string
	body      string
	challenge []string
	cookies   []*http.Cookie
	header    http.Header
}

func (r result) cookie(name string) *http.Cookie {
	for _, c := range r.cookies {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// get sends a GET with the given header lines ("Name: value") to path.
func (f *fixture) get(t testing.TB, path string, header ...string) result {
	t.Helper()
	return do(t, f.srv, "GET", path, header...)
}

func do(t testing.TB, srv *httptest.Server, method, path string, header ...string) result {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range header {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Add(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return result{
		status:    resp.Status,
		body:      string(body),
		challenge: resp.Header.Values("Www-Authenticate"),
		cookies:   resp.Cookies(),
		header:    resp.Header,
	}
}

func basic(email, password string) string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(email+":"+password))
}

func cookies(userID, token string) string {
	return "Cookie: user_id=" + userID + "; token=" + token
}

// stored returns the stored record of id.
func (f *fixture) stored(t testing.TB, id int64) LoginRecord {
	t.Helper()
	rec, err := f.store.ByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

const basicChallenge = `Basic realm="localhost"`

// wantChallenge checks that a 401 carries exactly the Basic challenge.
func wantChallenge(t testing.TB, r result) {
	t.Helper()
	if len(r.challenge) != 1 || r.challenge[0] != basicChallenge {
		t.Errorf("WWW-Authenticate = %q, want [%q]", r.challenge, basicChallenge)
	}
}

// wantSession checks the token and user_id cookies of a new session and
// returns the token.
func wantSession(t testing.TB, r result, id int64) string {
	t.Helper()
	tok, uid := r.cookie(CookieToken), r.cookie(CookieUserID)
	if tok == nil || uid == nil {
		t.Fatalf("cookies %v, want token and user_id", r.cookies)
	}
	for _, c := range []*http.Cookie{tok, uid} {
		if c.Path != "/" || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Secure || c.MaxAge != 0 {
			t.Errorf("cookie %s, want Path=/ HttpOnly SameSite=Lax", c)
		}
	}
	if uid.Value != fmt.Sprint(id) {
		t.Errorf("user_id = %q, want %d", uid.Value, id)
	}
	if len(tok.Value) != tokenLen {
		t.Errorf("token = %q, want %d characters", tok.Value, tokenLen)
	}
	return tok.Value
}

// wantExpired checks that the named cookies are expired with Path=/,
// Max-Age=0 and an Expires in the past, and that no other cookie is set.
func wantExpired(t testing.TB, r result, names ...string) {
	t.Helper()
	if len(r.cookies) != len(names) {
		t.Errorf("cookies %v, want %v expired", r.cookies, names)
	}
	for _, n := range names {
		c := r.cookie(n)
		if c == nil {
			t.Errorf("cookie %s not expired", n)
			continue
		}
		if c.Value != "" || c.Path != "/" || c.MaxAge != -1 || !c.Expires.Before(time.Now()) || c.Expires.IsZero() {
			t.Errorf("cookie %s, want empty, Path=/, Max-Age=0, Expires in the past", c)
		}
	}
}

// login is the check of Required: Check, then the headers of its result on
// w.
func login(a *Authenticator, w http.ResponseWriter, r *http.Request) (*core.Identity, error) {
	res, err := a.Check(r)
	res.Write(w)
	return res.Identity, err
}
