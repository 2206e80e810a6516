package auth

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"testing"
	"time"
)

// setCookies sends a GET with the given header lines and returns the status
// and the Set-Cookie lines exactly as they came over the connection.
func (f *fixture) setCookies(t *testing.T, path string, header ...string) (string, []string) {
	t.Helper()
	r := f.get(t, path, header...)
	return r.status, r.header.Values("Set-Cookie")
}

// TestDefaultCookiesOnTheWire pins the session cookies of the zero
// Config.Cookies byte for byte (docs/wire.md#session-cookies): token and
// user_id with Path=/, set on a login and expired on a failed session.
func TestDefaultCookiesOnTheWire(t *testing.T) {
	f := newFixture(t, nil)
	status, lines := f.setCookies(t, "/a", basic(testEmail, testPassword))
	if status != "200 OK" || len(lines) != 2 {
		t.Fatalf("login: %s %q", status, lines)
	}
	tok := f.stored(t, f.id).Token
	want := []string{
		"token=" + tok + "; Path=/; HttpOnly; SameSite=Lax",
		fmt.Sprintf("user_id=%d; Path=/; HttpOnly; SameSite=Lax", f.id),
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("Set-Cookie %q, want %q", lines, want)
	}
	f.clock.Advance(time.Second)
	f.get(t, "/a", basic(testEmail, testPassword)) // a new token ends the session of tok
	status, lines = f.setCookies(t, "/a", cookies(fmt.Sprint(f.id), tok))
	want = []string{
		"token=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; HttpOnly; SameSite=Lax",
		"user_id=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; HttpOnly; SameSite=Lax",
	}
	if status != "401 Unauthorized" || strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("failed session: %s, Set-Cookie %q, want 401 Unauthorized and %q", status, lines, want)
	}
}

// TestCookieNamesAndPath checks Config.Cookies over real connections: the
// authenticator sets, accepts and clears the cookies it names, under its
// path, and ignores the default names.
func TestCookieNamesAndPath(t *testing.T) {
	named := Cookies{Token: "rt_token", UserID: "rt_uid", Path: "/rt/"}
	for _, signed := range []bool{false, true} {
		t.Run(fmt.Sprintf("signed=%v", signed), func(t *testing.T) {
			f := newFixture(t, func(c *Config) { c.Cookies = named; c.SignedCookies = signed })
			uidValue := fmt.Sprint(f.id)
			session := func(uid, tok string) string { return "Cookie: rt_uid=" + uid + "; rt_token=" + tok }

			// A login sets the named cookies with the path.
			status, lines := f.setCookies(t, "/rt/a", basic(testEmail, testPassword))
			if status != "200 OK" || len(lines) != 2 {
				t.Fatalf("login: %s %q", status, lines)
			}
			attrs := "; Path=/rt/; HttpOnly; SameSite=Lax"
			value := regexp.MustCompile(`^(rt_token|rt_uid)=([^;]+)` + regexp.QuoteMeta(attrs) + `$`)
			got := map[string]string{}
			for _, line := range lines {
				m := value.FindStringSubmatch(line)
				if m == nil {
					t.Fatalf("Set-Cookie %q, want rt_token=...%s and rt_uid=...%s", line, attrs, attrs)
				}
				got[m[1]] = m[2]
			}
			tok, uid := got["rt_token"], got["rt_uid"]
			if signed == (tok == f.stored(t, f.id).Token) || signed == (uid == uidValue) {
				t.Errorf("cookie values %q %q with signed=%v", tok, uid, signed)
			}

			// They are accepted; the default names are not.
			r := f.get(t, "/rt/b", session(uid, tok))
			if r.status != "200 OK" || r.body != uidValue+" "+testEmail || len(r.cookies) != 0 {
				t.Errorf("named session: %s %q, cookies %v", r.status, r.body, r.cookies)
			}
			r = f.get(t, "/rt/b", cookies(uid, tok))
			if r.status != "401 Unauthorized" || len(r.cookies) != 0 {
				t.Errorf("the default names: %s, cookies %v; want 401 Unauthorized (anonymous) and none", r.status, r.cookies)
			}
			if r := f.get(t, "/opt/x", cookies(uid, tok)); r.status != "200 OK" || r.body != "anonymous" {
				t.Errorf("the default names through Optional: %s %q, want anonymous", r.status, r.body)
			}

			// A session that no longer holds expires both named cookies under the path.
			f.clock.Advance(time.Second)
			_, fresh := f.setCookies(t, "/rt/a", basic(testEmail, testPassword))
			status, lines = f.setCookies(t, "/rt/b", session(uid, tok))
			expired := []string{
				"rt_token=; Path=/rt/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; HttpOnly; SameSite=Lax",
				"rt_uid=; Path=/rt/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; HttpOnly; SameSite=Lax",
			}
			if status != "401 Unauthorized" || strings.Join(lines, "\n") != strings.Join(expired, "\n") {
				t.Errorf("stale session: %s, Set-Cookie %q, want 401 Unauthorized and %q", status, lines, expired)
			}

			// Logout reads the named cookies and expires the token cookie under the path.
			for _, line := range fresh {
				m := value.FindStringSubmatch(line)
				if m == nil {
					t.Fatalf("Set-Cookie %q", line)
				}
				got[m[1]] = m[2]
			}
			status, lines = f.setCookies(t, "/logout", session(got["rt_uid"], got["rt_token"]))
			if status != "204 No Content" || len(lines) != 1 || lines[0] != expired[0] {
				t.Errorf("logout: %s, Set-Cookie %q, want 204 No Content and %q", status, lines, expired[0])
			}
			if stored := f.stored(t, f.id).Token; stored != "" {
				t.Errorf("stored token %q after logout, want empty", stored)
			}
		})
	}
}

// TestCookiePathInABrowser follows the cookies with a cookie jar, as a
// browser keeps them: under Path=/rt/ the session reaches /rt/ and below,
// and the rest of the host application never sees it.
func TestCookiePathInABrowser(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Cookies = Cookies{Token: "rt_token", UserID: "rt_uid", Path: "/rt/"} })
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Jar: jar}
	get := func(path string, login bool) (string, string) {
		t.Helper()
		req, err := http.NewRequest("GET", f.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if login {
			req.SetBasicAuth(testEmail, testPassword)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Status, req.Header.Get("Cookie")
	}
	if status, _ := get("/rt/login", true); status != "200 OK" {
		t.Fatalf("login: %s", status)
	}
	if status, sent := get("/rt/deeper/x", false); status != "200 OK" || !strings.Contains(sent, "rt_token=") {
		t.Errorf("under /rt/: %s, Cookie %q; want 200 OK with the session", status, sent)
	}
	if status, sent := get("/app/x", false); status != "401 Unauthorized" || sent != "" {
		t.Errorf("outside /rt/: %s, Cookie %q; want 401 Unauthorized and no cookie sent", status, sent)
	}
}

// TestCookiesConfig checks that New refuses cookie names and paths that
// cannot be on the wire as given.
func TestCookiesConfig(t *testing.T) {
	st := newMemStore()
	for name, c := range map[string]Cookies{
		"space in a name":      {Token: "a b"},
		"semicolon in a name":  {UserID: "a;b"},
		"equals in a name":     {Token: "a=b"},
		"non-ASCII name":       {Token: "tökén"},
		"the same names":       {Token: "sid", UserID: "sid"},
		"a default name twice": {UserID: "token"},
		"relative path":        {Path: "rt/"},
		"semicolon in a path":  {Path: "/rt;Domain=evil"},
		"control in a path":    {Path: "/rt\n"},
	} {
		if _, err := New(Config{Store: st, Secret: testSecret, Cookies: c}); err == nil || !strings.HasPrefix(err.Error(), "auth: ") {
			t.Errorf("%s: %v, want an auth: error", name, err)
		}
	}
	if _, err := New(Config{Store: st, Secret: testSecret, Cookies: Cookies{Token: "__Host-t", UserID: "u.id", Path: "/a/b"}}); err != nil {
		t.Errorf("valid cookies: %v", err)
	}
}

// TestLoginEndsEarlierSessions pins what docs/auth.md says of one session
// per user: a password login in a later second stores a new token, which
// ends every cookie session of the earlier one (401 Unauthorized, both
// cookies expired) without telling the OnEnd functions; a login within the
// same second gets the same token and ends nothing.
func TestLoginEndsEarlierSessions(t *testing.T) {
	f := newFixture(t, nil)
	var ended []string
	f.a.OnEnd(func(email string) { ended = append(ended, email) })
	uid := fmt.Sprint(f.id)
	first := wantSession(t, f.get(t, "/a", basic(testEmail, testPassword)), f.id)
	if again := wantSession(t, f.get(t, "/a", basic(testEmail, testPassword)), f.id); again != first {
		t.Errorf("a login within the same second changed the token: %q, then %q", first, again)
	}
	if r := f.get(t, "/a", cookies(uid, first)); r.status != "200 OK" {
		t.Errorf("the session after a login within the same second: %s", r.status)
	}
	f.clock.Advance(time.Second)
	second := wantSession(t, f.get(t, "/a", basic(testEmail, testPassword)), f.id)
	if second == first {
		t.Fatal("a login a second later kept the token")
	}
	r := f.get(t, "/a", cookies(uid, first))
	if r.status != "401 Unauthorized" {
		t.Errorf("the earlier session after a later login: %s, want 401 Unauthorized", r.status)
	}
	wantChallenge(t, r)
	wantExpired(t, r, CookieToken, CookieUserID)
	if r := f.get(t, "/a", cookies(uid, second)); r.status != "200 OK" {
		t.Errorf("the new session: %s", r.status)
	}
	if len(ended) != 0 {
		t.Errorf("OnEnd told of %q: a new token is not the end of a user's sessions", ended)
	}
}
