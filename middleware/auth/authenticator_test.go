package auth

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
)

// TestBasic covers the Authorization check (step 1 of
// docs/wire.md#check-order) with Basic credentials: a login issues a new
// token and sets the session cookies, and its failures are answered as the
// Basic rows of docs/wire.md#authentication-failures.
func TestBasic(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		name, header string
		status       string
	}{
		{"success", basic(testEmail, testPassword), "200 OK"},
		{"lower-case scheme", "Authorization: basic " + strings.TrimPrefix(basic(testEmail, testPassword), "Authorization: Basic "), "200 OK"},
		{"unknown e-mail", basic("nobody@example.com", testPassword), "401 Not Found"},
		{"wrong password", basic(testEmail, "wrong"), "401 Unauthorized"},
		{"password prefix", basic(testEmail, "pass"), "401 Unauthorized"},
		{"empty password", basic(testEmail, ""), "401 Unauthorized"},
		{"bad base64", "Authorization: Basic !!!notbase64", "401 Unauthorized"},
		{"no colon", "Authorization: Basic " + "dXNlckBleGFtcGxlLmNvbQ==", "401 Unauthorized"},
		{"no credentials", "Authorization: Basic", "401 Unauthorized"},
		{"other scheme", "Authorization: Bearer abc", "401 Unauthorized"},
		{"digest not enabled", `Authorization: Digest username="user@example.com", realm="localhost", nonce="x", uri="/", response="y"`, "401 Unauthorized"},
		{"scheme only", "Authorization: Negotiate", "401 Unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.clock.Advance(time.Second)
			before := f.stored(t, f.id).Token
			r := f.get(t, "/private/x", tt.header)
			if r.status != tt.status {
				t.Fatalf("status %q, want %q (body %q)", r.status, tt.status, r.body)
			}
			after := f.stored(t, f.id).Token
			if tt.status != "200 OK" {
				wantChallenge(t, r)
				if len(r.cookies) != 0 {
					t.Errorf("cookies %v on a failure", r.cookies)
				}
				if want := tt.status + "\n"; r.body != want {
					t.Errorf("body %q, want %q", r.body, want)
				}
				if after != before {
					t.Errorf("token changed on a failure")
				}
				return
			}
			if r.body != fmt.Sprintf("%d %s", f.id, testEmail) {
				t.Errorf("body %q", r.body)
			}
			tok := wantSession(t, r, f.id)
			if tok != after || tok == before {
				t.Errorf("cookie token %q, stored %q, before %q: want a new stored token", tok, after, before)
			}
			if len(r.challenge) != 0 {
				t.Errorf("WWW-Authenticate %q on success", r.challenge)
			}
		})
	}
}

// TestBasicPrecedence checks that the Authorization header is step 1: it
// wins over route groups and cookies, and a failing or unchecked header
// never falls through to them.
func TestBasicPrecedence(t *testing.T) {
	f := newFixture(t, nil)
	tok := f.stored(t, f.id).Token
	good := cookies(fmt.Sprint(f.id), tok)
	if r := f.get(t, "/", "Authorization: Bearer x", good); r.status != "401 Unauthorized" {
		t.Errorf("unchecked scheme with a valid cookie: %q", r.status)
	}
	if r := f.get(t, fmt.Sprintf("/u/%d/%s", f.id, tok), basic(testEmail, "bad")); r.status != "401 Unauthorized" {
		t.Errorf("bad Basic with a valid route token: %q", r.status)
	}
}

// TestCookieSession covers the cookie check (step 3 of
// docs/wire.md#check-order): a valid session passes, an invalid one expires
// both cookies, and failures are answered as the cookie rows of
// docs/wire.md#authentication-failures.
func TestCookieSession(t *testing.T) {
	f := newFixture(t, nil)
	r := f.get(t, "/", basic(testEmail, testPassword))
	tok := wantSession(t, r, f.id)
	uid := fmt.Sprint(f.id)
	other := makeToken(testSecret, f.id, f.clock.Now().Add(-time.Hour))
	admin := AdminToken(testSecret)
	tests := []struct {
		name, header string
		status, body string
		expired      bool
	}{
		{"valid session", cookies(uid, tok), "200 OK", uid + " " + testEmail, false},
		{"quoted values", `Cookie: user_id="` + uid + `"; token="` + tok + `"`, "200 OK", uid + " " + testEmail, false},
		{"among other cookies", "Cookie: a=b; token=" + tok + "; c=d; user_id=" + uid, "200 OK", uid + " " + testEmail, false},
		{"older token of the user", cookies(uid, other), "401 Unauthorized", "", true},
		{"token of another id", cookies("2", tok), "401 Unauthorized", "", true},
		{"malformed token", cookies(uid, "xyz"), "401 Unauthorized", "", true},
		{"upper-case token", cookies(uid, strings.ToUpper(tok)), "401 Unauthorized", "", true},
		{"hash as cookie token", cookies(uid, HashPassword(testEmail, "localhost", testPassword)), "401 Unauthorized", "", true},
		{"non-numeric id", cookies("x1", tok), "401 Unauthorized", "", true},
		{"administrator", cookies("0", admin), "200 OK", "0 admin", false},
		{"administrator, wrong token", cookies("0", tok), "401 Not Authorized as Admin", "", false},
		{"token only", "Cookie: token=" + tok, "401 Unauthorized", "", false},
		{"user_id only", "Cookie: user_id=" + uid, "401 Unauthorized", "", false},
		{"no credentials", "", "401 Unauthorized", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r result
			if tt.header == "" {
				r = f.get(t, "/private/x")
			} else {
				r = f.get(t, "/private/x", tt.header)
			}
			if r.status != tt.status {
				t.Fatalf("status %q, want %q (body %q)", r.status, tt.status, r.body)
			}
			if strings.HasPrefix(tt.status, "200") {
				if r.body != tt.body {
					t.Errorf("body %q, want %q", r.body, tt.body)
				}
				if len(r.cookies) != 0 {
					t.Errorf("a valid session sent cookies %v", r.cookies)
				}
				return
			}
			wantChallenge(t, r)
			if tt.expired {
				wantExpired(t, r, CookieToken, CookieUserID)
			} else if len(r.cookies) != 0 {
				t.Errorf("cookies %v, want none", r.cookies)
			}
		})
	}
	if got := f.stored(t, f.id).Token; got != tok {
		t.Errorf("stored token changed by cookie checks: %q, want %q", got, tok)
	}
}

// TestLogout covers logout (docs/wire.md#logout): with both cookies it
// expires the token cookie and, when the id is not 0, clears the stored
// token that equals the cookie's.
func TestLogout(t *testing.T) {
	f := newFixture(t, nil)
	uid := fmt.Sprint(f.id)
	login := func() string {
		f.clock.Advance(time.Second)
		return wantSession(t, f.get(t, "/", basic(testEmail, testPassword)), f.id)
	}

	t.Run("clears the stored token", func(t *testing.T) {
		tok := login()
		r := f.get(t, "/logout", cookies(uid, tok))
		if r.status != "204 No Content" {
			t.Fatalf("status %q", r.status)
		}
		wantExpired(t, r, CookieToken)
		if got := f.stored(t, f.id).Token; got != "" {
			t.Errorf("stored token %q after logout, want empty", got)
		}
		// The logout is seen at once by the next cookie check.
		r = f.get(t, "/", cookies(uid, tok))
		if r.status != "401 Unauthorized" {
			t.Errorf("session after logout: %q", r.status)
		}
		wantExpired(t, r, CookieToken, CookieUserID)
		// A route token is no good either; the hash still logs in.
		if r := f.get(t, "/u/"+uid+"/"+tok); r.status != "401 Unauthorized" {
			t.Errorf("route token after logout: %q", r.status)
		}
	})
	t.Run("token differs from the stored one", func(t *testing.T) {
		old := login()
		tok := login()
		r := f.get(t, "/logout", cookies(uid, old))
		wantExpired(t, r, CookieToken)
		if got := f.stored(t, f.id).Token; got != tok {
			t.Errorf("stored token %q, want %q kept", got, tok)
		}
		if r := f.get(t, "/", cookies(uid, tok)); r.status != "200 OK" {
			t.Errorf("current session after a stale logout: %q", r.status)
		}
	})
	t.Run("administrator", func(t *testing.T) {
		tok := login()
		r := f.get(t, "/logout", cookies("0", AdminToken(testSecret)))
		wantExpired(t, r, CookieToken)
		if got := f.stored(t, f.id).Token; got != tok {
			t.Errorf("stored token %q, want %q kept", got, tok)
		}
	})
	t.Run("one cookie only", func(t *testing.T) {
		tok := login()
		r := f.get(t, "/logout", "Cookie: token="+tok)
		if len(r.cookies) != 0 {
			t.Errorf("cookies %v, want none", r.cookies)
		}
		if got := f.stored(t, f.id).Token; got != tok {
			t.Errorf("stored token %q, want %q kept", got, tok)
		}
	})
	t.Run("login again", func(t *testing.T) {
		tok := login()
		f.get(t, "/logout", cookies(uid, tok))
		tok = login()
		if r := f.get(t, "/", cookies(uid, tok)); r.status != "200 OK" {
			t.Errorf("new session after logout: %q", r.status)
		}
	})
}

// TestNoCredentials is a request without credentials (step 4 of
// docs/wire.md#check-order): 401 Unauthorized with the Basic challenge.
func TestNoCredentials(t *testing.T) {
	f := newFixture(t, nil)
	for _, method := range []string{"GET", "POST"} {
		r := do(t, f.srv, method, "/private/x")
		if r.status != "401 Unauthorized" || r.body != "401 Unauthorized\n" {
			t.Errorf("%s: %q %q", method, r.status, r.body)
		}
		wantChallenge(t, r)
		if ct := r.header.Get("Content-Type"); ct != "text/plain" {
			t.Errorf("Content-Type %q", ct)
		}
	}
}

// TestRegister covers registration, which stores a record with a first
// token and returns its new id, and the record rules of
// docs/wire.md#login-records.
func TestRegister(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	rec := f.stored(t, f.id)
	if f.id < 1 || rec.Email != testEmail || rec.Realm != "localhost" ||
		rec.Hash != HashPassword(testEmail, "localhost", testPassword) || !validToken(testSecret, f.id, rec.Token) {
		t.Fatalf("record %+v", rec)
	}
	if rec.Hash != md5hex(testEmail+":localhost:"+testPassword) {
		t.Errorf("hash %q is not MD5 of email:realm:password", rec.Hash)
	}

	// Registering the same e-mail with the same password changes nothing.
	f.clock.Advance(time.Second)
	if id, err := f.a.Register(ctx, testEmail, testPassword); err != nil || id != f.id {
		t.Fatalf("re-register: %d, %v; want %d", id, err, f.id)
	}
	if got := f.stored(t, f.id); got != rec {
		t.Errorf("same password: record %+v, want %+v", got, rec)
	}
	// With another password it updates the hash, keeps the id and issues a
	// new token: the old session ends.
	id, err := f.a.Register(ctx, testEmail, "new password")
	if err != nil || id != f.id {
		t.Fatalf("re-register: %d, %v; want %d", id, err, f.id)
	}
	if got := f.stored(t, f.id); got.Token == rec.Token || !validToken(testSecret, f.id, got.Token) {
		t.Errorf("new password: token %q, want a new one", got.Token)
	}
	if r := f.get(t, "/", cookies(fmt.Sprint(f.id), rec.Token)); r.status != "401 Unauthorized" {
		t.Errorf("session of the old password: %q", r.status)
	}
	if r := f.get(t, "/", basic(testEmail, testPassword)); r.status != "401 Unauthorized" {
		t.Errorf("old password: %q", r.status)
	}
	if r := f.get(t, "/", basic(testEmail, "new password")); r.status != "200 OK" {
		t.Errorf("new password: %q", r.status)
	}

	// The empty password is the default.
	id2, err := f.a.Register(ctx, "empty@example.com", "")
	if err != nil || id2 == f.id {
		t.Fatalf("register: %d, %v", id2, err)
	}
	if r := f.get(t, "/", basic("empty@example.com", "")); r.status != "200 OK" {
		t.Errorf("empty password: %q", r.status)
	}

	// A precomputed hash, in either case.
	hash := strings.ToUpper(md5hex("hash@example.com:localhost:secret"))
	id3, err := f.a.RegisterHash(ctx, "hash@example.com", hash)
	if err != nil {
		t.Fatal(err)
	}
	if r := f.get(t, "/", basic("hash@example.com", "secret")); r.status != "200 OK" || r.body != fmt.Sprint(id3)+" hash@example.com" {
		t.Errorf("precomputed hash: %q %q", r.status, r.body)
	}

	for _, bad := range []struct{ email, hash string }{
		{"", hash},
		{"admin", hash},
		{"a:b", hash},
		{"a\nb", hash},
		{"x@example.com", "abc"},
		{"x@example.com", strings.Repeat("g", 32)},
	} {
		if _, err := f.a.RegisterHash(ctx, bad.email, bad.hash); err == nil || !strings.HasPrefix(err.Error(), "auth: ") {
			t.Errorf("RegisterHash(%q, %q): %v, want an auth: error", bad.email, bad.hash, err)
		}
	}
}

// TestSecureCookies checks the Secure attribute over TLS.
func TestSecureCookies(t *testing.T) {
	f := newFixture(t, nil)
	req := httptest.NewRequest("GET", "https://localhost/", nil)
	req.TLS = &tls.ConnectionState{}
	req.SetBasicAuth(testEmail, testPassword)
	w := httptest.NewRecorder()
	if _, err := login(f.a, w, req); err != nil {
		t.Fatal(err)
	}
	cs := w.Result().Cookies()
	if len(cs) != 2 {
		t.Fatalf("cookies %v", cs)
	}
	for _, c := range cs {
		if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" {
			t.Errorf("cookie %s, want Secure HttpOnly SameSite=Lax Path=/", c)
		}
	}
}

// TestSignedCookies checks -signed-cookies: values are signed, round-trip,
// and a forged or altered cookie is simply unauthenticated.
func TestSignedCookies(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.SignedCookies = true })
	r := f.get(t, "/", basic(testEmail, testPassword))
	if r.status != "200 OK" {
		t.Fatal(r.status)
	}
	tok, uid := r.cookie(CookieToken), r.cookie(CookieUserID)
	if tok == nil || uid == nil || uid.Value == fmt.Sprint(f.id) || len(tok.Value) == tokenLen {
		t.Fatalf("cookies %v, want signed values", r.cookies)
	}
	if r := f.get(t, "/", cookies(uid.Value, tok.Value)); r.status != "200 OK" || len(r.cookies) != 0 {
		t.Errorf("signed session: %q %v", r.status, r.cookies)
	}
	plain := f.stored(t, f.id).Token
	altered := []byte(tok.Value)
	altered[10] ^= 1
	for name, h := range map[string]string{
		"plain values":  cookies(fmt.Sprint(f.id), plain),
		"altered token": cookies(uid.Value, string(altered)),
		"swapped":       cookies(tok.Value, uid.Value),
		"garbage":       cookies("a", "b"),
	} {
		r := f.get(t, "/", h)
		if r.status != "401 Unauthorized" || len(r.cookies) != 0 {
			t.Errorf("%s: %q, cookies %v; want 401 Unauthorized and no cookies", name, r.status, r.cookies)
		}
		wantChallenge(t, r)
	}
	// Logout reads signed cookies too.
	f.get(t, "/logout", cookies(uid.Value, tok.Value))
	if got := f.stored(t, f.id).Token; got != "" {
		t.Errorf("stored token %q after logout", got)
	}
}

// TestRequiredContext checks that Required passes the identity on in the
// request's context, its one home, and that the core router's request
// context agrees with it.
func TestRequiredContext(t *testing.T) {
	f := newFixture(t, nil)
	var got, routed *core.Identity
	h := Required(f.a)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = core.IdentityFromContext(r.Context())
		if req := core.FromContext(r.Context()); req != nil {
			routed = req.Identity
		}
	}))
	rt, err := core.NewRouter([]core.Route{{Match: "GET /", Handler: h}})
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, rt)
	if r := do(t, srv, "GET", "/", basic(testEmail, testPassword)); r.status != "200 OK" {
		t.Fatal(r.status)
	}
	if got == nil || got.ID != f.id || got.Email != testEmail {
		t.Errorf("identity %+v", got)
	}
	if routed != got {
		t.Errorf("the router's request has identity %+v, the context %+v", routed, got)
	}
}

func TestNewConfig(t *testing.T) {
	st := newMemStore()
	for name, cfg := range map[string]Config{
		"no store":       {Secret: testSecret},
		"no secret":      {Store: st},
		"bad realm":      {Store: st, Secret: testSecret, Realm: "a\nb"},
		"negative nonce": {Store: st, Secret: testSecret, NonceLifetime: -1},
		"negative cache": {Store: st, Secret: testSecret, MaxCached: -1},
	} {
		if _, err := New(cfg); err == nil || !strings.HasPrefix(err.Error(), "auth: ") {
			t.Errorf("%s: %v, want an auth: error", name, err)
		}
	}
	a, err := New(Config{Store: st, Secret: testSecret})
	if err != nil || a.Realm() != "localhost" {
		t.Fatalf("defaults: %v %v", a, err)
	}
}

func TestParseLogin(t *testing.T) {
	for _, tt := range []struct{ in, email, password string }{
		{"a@b:pw", "a@b", "pw"},
		{"a@b:p:w:", "a@b", "p:w:"},
		{"a@b:", "a@b", ""},
	} {
		e, p, err := ParseLogin(tt.in)
		if err != nil || e != tt.email || p != tt.password {
			t.Errorf("ParseLogin(%q) = %q, %q, %v", tt.in, e, p, err)
		}
	}
	for _, bad := range []string{"", "nocolon", ":pw"} {
		if _, _, err := ParseLogin(bad); err == nil {
			t.Errorf("ParseLogin(%q): no error", bad)
		}
	}
}
