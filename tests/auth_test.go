package tests

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// Black-box tests of the authenticator (docs/wire.md#authentication) through
// route 8, GET /private/<path>, over raw TCP so that status lines are exact.
//
// Two parts of the authenticator cannot be reached from outside the example
// application: the route-group form (step 2 of docs/wire.md#check-order: no
// route of docs/wire.md#example-routes has the groups user_id, email and
// token, so no 401 Not Authorized and no 404 Not Found of that form) and
// logout (no endpoint). Both are covered by the tests of middleware/auth,
// through a core router.

const (
	authEmail     = "user@example.org"
	authPassword  = "pa:ss:word" // colons: -login splits at the first one
	authChallenge = `Basic realm="localhost"`
)

var authTokenRe = regexp.MustCompile(`^[0-9a-f]{42}$`)

func authBasic(email, password string) string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(email+":"+password))
}

func authCookies(userID, token string) string {
	return "Cookie: user_id=" + userID + "; token=" + token
}

func authMD5(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// authIsolated is the plugin that the suites of the authenticator (and
// of the login throttle, TLS and identities, which start their servers
// with authStart) run in a child process in the isolated mode: the
// private resource, which their requests reach through the
// authenticator. The authenticator is the host's; the other plugins
// stay compiled in there, and their own suites run them isolated.
const authIsolated = "private"

// authStart starts a server with the test user and a secret file in a new
// directory; it returns the server and the secret file.
func authStart(t *testing.T, m mode, args ...string) (*server, string) {
	t.Helper()
	secret := filepath.Join(t.TempDir(), "secret")
	s := start(t, m.isolating(authIsolated), append([]string{"-login", authEmail + ":" + authPassword, "-secret-file", secret}, args...)...)
	return s, secret
}

// adminToken runs reso admin-token -secret-file file.
func adminToken(t testing.TB, file string) string {
	t.Helper()
	out, err := execOutput(binary, "admin-token", "-secret-file", file)
	if err != nil {
		t.Fatalf("reso admin-token: %v", err)
	}
	return strings.TrimSpace(out)
}

func setCookies(r response) []*http.Cookie {
	return (&http.Response{Header: r.Header}).Cookies()
}

func cookieNamed(r response, name string) *http.Cookie {
	for _, c := range setCookies(r) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// authWant checks a status line, the body and, for a 401, the challenge.
func authWant(t *testing.T, r response, status, body string) {
	t.Helper()
	if r.StatusLine != "HTTP/1.1 "+status {
		t.Fatalf("status line %q, want %q (body %q)", r.StatusLine, "HTTP/1.1 "+status, r.Body)
	}
	if body != "" && r.Body != body {
		t.Errorf("body %q, want %q", r.Body, body)
	}
	if strings.HasPrefix(status, "401") {
		if got := r.Header.Values("Www-Authenticate"); len(got) == 0 || got[0] != authChallenge {
			t.Errorf("WWW-Authenticate %q, want %q first", got, authChallenge)
		}
		if ct := r.Header.Get("Content-Type"); ct != "text/plain" {
			t.Errorf("Content-Type %q", ct)
		}
	}
}

// authLogin logs in with Basic and returns the new session's token after
// checking the session cookies it sets (docs/wire.md#session-cookies).
func authLogin(t *testing.T, s *server) string {
	t.Helper()
	r := s.get(t, "/private/x", authBasic(authEmail, authPassword))
	authWant(t, r, "200 OK", `{"path": "x"}`)
	tok, uid := cookieNamed(r, "token"), cookieNamed(r, "user_id")
	if tok == nil || uid == nil {
		t.Fatalf("Set-Cookie %q, want token and user_id", r.Header.Values("Set-Cookie"))
	}
	for _, c := range []*http.Cookie{tok, uid} {
		if c.Path != "/" || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
			t.Errorf("cookie %q, want Path=/ HttpOnly SameSite=Lax", c.String())
		}
	}
	if uid.Value != "1" || !authTokenRe.MatchString(tok.Value) {
		t.Errorf("user_id=%q token=%q", uid.Value, tok.Value)
	}
	return tok.Value
}

// TestAuthBasic: the Authorization check with Basic (step 1 of
// docs/wire.md#check-order); a Basic login issues a new token and sets the
// cookies; the failures 401 Not Found (unknown e-mail) and 401 Unauthorized
// (wrong password) of docs/wire.md#authentication-failures.
func TestAuthBasic(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s, _ := authStart(t, m)
		first := authLogin(t, s)
		r := s.get(t, "/private/a/b%20c", authBasic(authEmail, authPassword))
		authWant(t, r, "200 OK", `{"path": "a/b c"}`)
		if tok := cookieNamed(r, "token"); tok == nil || !authTokenRe.MatchString(tok.Value) {
			t.Errorf("second login: Set-Cookie %q", r.Header.Values("Set-Cookie"))
		} else if tok.Value[32:] < first[32:] {
			t.Errorf("token time went back: %q after %q", tok.Value, first)
		}
		for _, tt := range []struct{ name, header, status string }{
			{"unknown e-mail", authBasic("nobody@example.org", authPassword), "401 Not Found"},
			{"wrong password", authBasic(authEmail, "pa"), "401 Unauthorized"},
			{"e-mail in other case", authBasic(strings.ToUpper(authEmail), authPassword), "401 Not Found"},
			{"empty password", authBasic(authEmail, ""), "401 Unauthorized"},
			{"bad base64", "Authorization: Basic %%%", "401 Unauthorized"},
			{"no colon", "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(authEmail)), "401 Unauthorized"},
			{"unchecked scheme", "Authorization: Bearer " + first, "401 Unauthorized"},
			{"Digest without -digest", `Authorization: Digest username="` + authEmail + `"`, "401 Unauthorized"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				r := s.get(t, "/private/x", tt.header, authCookies("1", first))
				authWant(t, r, tt.status, tt.status+"\n")
				if sc := r.Header.Values("Set-Cookie"); len(sc) != 0 {
					t.Errorf("Set-Cookie %q on a failure", sc)
				}
			})
		}
	})
}

// TestAuthCookieSession: the cookie check (step 3 of
// docs/wire.md#check-order); a cookie session that matches no record expires
// both cookies; the failures 401 Unauthorized (cookie session invalid) and
// 401 Not Authorized as Admin of docs/wire.md#authentication-failures.
func TestAuthCookieSession(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s, secret := authStart(t, m)
		tok := authLogin(t, s)
		admin := adminToken(t, secret)

		r := s.get(t, "/private/p", authCookies("1", tok))
		authWant(t, r, "200 OK", `{"path": "p"}`)
		if sc := r.Header.Values("Set-Cookie"); len(sc) != 0 {
			t.Errorf("a valid session sent Set-Cookie %q", sc)
		}
		r = s.get(t, "/private/p", authCookies("0", admin))
		authWant(t, r, "200 OK", `{"path": "p"}`)
		if strings.Contains(fmt.Sprint(r.Header), admin) || strings.Contains(r.Body, admin) {
			t.Error("the administrator token travels in a response")
		}
		authWant(t, s.get(t, "/private/p", authCookies("0", tok)), "401 Not Authorized as Admin", "401 Not Authorized as Admin\n")

		for _, tt := range []struct{ name, header string }{
			{"wrong token", authCookies("1", strings.Repeat("0", 42))},
			{"token of another id", authCookies("2", tok)},
			{"password hash as token", authCookies("1", authMD5(authEmail+":localhost:"+authPassword))},
			{"administrator token for a user", authCookies("1", admin)},
		} {
			t.Run(tt.name, func(t *testing.T) {
				r := s.get(t, "/private/p", tt.header)
				authWant(t, r, "401 Unauthorized", "401 Unauthorized\n")
				sc := r.Header.Values("Set-Cookie")
				if len(sc) != 2 {
					t.Fatalf("Set-Cookie %q, want both cookies expired", sc)
				}
				for _, name := range []string{"token", "user_id"} {
					c := cookieNamed(r, name)
					if c == nil || c.Value != "" || c.Path != "/" || c.MaxAge != -1 || c.Expires.Year() != 1970 {
						t.Errorf("Set-Cookie %q: %s not expired with Path=/, Max-Age=0 and a past Expires", sc, name)
					}
				}
			})
		}
		// One cookie alone is no session: step 4, nothing expired.
		r = s.get(t, "/private/p", "Cookie: token="+tok)
		authWant(t, r, "401 Unauthorized", "401 Unauthorized\n")
		if sc := r.Header.Values("Set-Cookie"); len(sc) != 0 {
			t.Errorf("Set-Cookie %q", sc)
		}
		// The session is still good after all that.
		authWant(t, s.get(t, "/private/p", authCookies("1", tok)), "200 OK", `{"path": "p"}`)
	})
}

// TestAuthNoCredentials: a request without credentials (step 4 of
// docs/wire.md#check-order) is answered 401 Unauthorized with the challenge.
func TestAuthNoCredentials(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := shared(t, m)
		r := s.get(t, "/private/x")
		authWant(t, r, "401 Unauthorized", "401 Unauthorized\n")
		if got := r.Header.Values("Www-Authenticate"); len(got) != 1 {
			t.Errorf("WWW-Authenticate %q, want exactly %q", got, authChallenge)
		}
		// A path that looks like a token is no credential.
		authWant(t, s.get(t, "/private/1/"+strings.Repeat("a", 42)), "401 Unauthorized", "")
	})
}

// TestAuthRegister: registration of a login record
// (docs/wire.md#login-records) through -login: the password may contain
// colons, the empty password is allowed, and the record is usable at once.
func TestAuthRegister(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m.isolating(authIsolated), "-login", "empty@example.org:")
		authWant(t, s.get(t, "/private/e", authBasic("empty@example.org", "")), "200 OK", `{"path": "e"}`)
		authWant(t, s.get(t, "/private/e", authBasic("empty@example.org", "x")), "401 Unauthorized", "")
	})
}

// TestAuthAdminToken: reso admin-token prints MD5 of admin::<secret>.
func TestAuthAdminToken(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := adminToken(t, file), authMD5("admin::s3cret"); got != want {
		t.Errorf("admin-token %q, want %q", got, want)
	}
	created := filepath.Join(t.TempDir(), "new-secret")
	tok := adminToken(t, created)
	fi, err := os.Stat(created)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file %v, %v: want it created with mode 0600", fi, err)
	}
	if again := adminToken(t, created); again != tok || len(tok) != 32 {
		t.Errorf("admin-token %q then %q", tok, again)
	}
}

// TestAuthRestart: with -db FILE and -secret-file FILE, records and tokens
// survive a restart; the same -login keeps the session, another password
// ends it.
func TestAuthRestart(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		dir := t.TempDir()
		writeFixtures(t, dir)
		db, secret := filepath.Join(dir, "logins.db"), filepath.Join(t.TempDir(), "secret")
		run := func(login string, check func(s *server)) {
			t.Helper()
			s, err := startIn(t, dir, m.isolating(authIsolated), "-db", db, "-secret-file", secret, "-login", login)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				s.stop()
				if t.Failed() {
					t.Logf("server log:\n%s", s.Log())
				}
			}()
			check(s)
		}
		var tok, admin string
		run(authEmail+":"+authPassword, func(s *server) {
			tok = authLogin(t, s)
			admin = adminToken(t, secret)
		})
		run(authEmail+":"+authPassword, func(s *server) {
			authWant(t, s.get(t, "/private/again", authCookies("1", tok)), "200 OK", `{"path": "again"}`)
			authWant(t, s.get(t, "/private/p", authCookies("0", admin)), "200 OK", `{"path": "p"}`)
			authWant(t, s.get(t, "/private/p", authBasic(authEmail, authPassword)), "200 OK", `{"path": "p"}`)
		})
		// The previous run issued a new token by its Basic login; a new
		// password ends every session of the old one.
		run(authEmail+":changed", func(s *server) {
			authWant(t, s.get(t, "/private/p", authBasic(authEmail, authPassword)), "401 Unauthorized", "")
			authWant(t, s.get(t, "/private/p", authBasic(authEmail, "changed")), "200 OK", `{"path": "p"}`)
		})
		if fi, err := os.Stat(secret); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("secret file %v, %v; want mode 0600", fi, err)
		}
	})
}

// TestAuthConcurrentLogins: 100 concurrent Basic logins on a database file
// all succeed and the last token is a valid session.
func TestAuthConcurrentLogins(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s, _ := authStart(t, m, "-db", "logins.db")
		var wg sync.WaitGroup
		tokens := make([]string, 100)
		for i := range tokens {
			wg.Go(func() {
				req, _ := http.NewRequest("GET", s.URL+"/private/c", nil)
				req.SetBasicAuth(authEmail, authPassword)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("login %d: %s", i, resp.Status)
				}
				for _, c := range resp.Cookies() {
					if c.Name == "token" {
						tokens[i] = c.Value
					}
				}
			})
		}
		wg.Wait()
		latest := ""
		for _, tok := range tokens {
			if len(tok) == 42 && (latest == "" || tok[32:] > latest[32:]) {
				latest = tok
			}
		}
		authWant(t, s.get(t, "/private/c", authCookies("1", latest)), "200 OK", `{"path": "c"}`)
		if strings.Contains(s.Log(), "SQLITE_BUSY") || strings.Contains(s.Log(), "database is locked") {
			t.Errorf("busy errors in the log:\n%s", s.Log())
		}
	})
}

// TestAuthSignedCookies: -signed-cookies signs the cookie values; a forged or
// altered cookie is simply unauthenticated.
func TestAuthSignedCookies(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s, _ := authStart(t, m, "-signed-cookies")
		r := s.get(t, "/private/x", authBasic(authEmail, authPassword))
		authWant(t, r, "200 OK", `{"path": "x"}`)
		tok, uid := cookieNamed(r, "token"), cookieNamed(r, "user_id")
		if tok == nil || uid == nil || uid.Value == "1" || authTokenRe.MatchString(tok.Value) {
			t.Fatalf("Set-Cookie %q, want signed values", r.Header.Values("Set-Cookie"))
		}
		authWant(t, s.get(t, "/private/s", authCookies(uid.Value, tok.Value)), "200 OK", `{"path": "s"}`)
		altered := []byte(tok.Value)
		altered[5] ^= 1
		for _, h := range []string{authCookies(uid.Value, string(altered)), authCookies("1", strings.Repeat("0", 42))} {
			r := s.get(t, "/private/s", h)
			authWant(t, r, "401 Unauthorized", "401 Unauthorized\n")
			if sc := r.Header.Values("Set-Cookie"); len(sc) != 0 {
				t.Errorf("Set-Cookie %q for a forged cookie", sc)
			}
		}
	})
}

// digestHeader answers a Digest challenge (RFC 7616, MD5, qop=auth).
func digestHeader(t *testing.T, challenges []string, method, uri, user, password string) string {
	t.Helper()
	var nonce, realm string
	for _, c := range challenges {
		if rest, ok := strings.CutPrefix(c, "Digest "); ok {
			for _, m := range regexp.MustCompile(`(\w+)="([^"]*)"`).FindAllStringSubmatch(rest, -1) {
				switch m[1] {
				case "nonce":
					nonce = m[2]
				case "realm":
					realm = m[2]
				}
			}
		}
	}
	if nonce == "" || realm != "localhost" {
		t.Fatalf("no Digest challenge in %q", challenges)
	}
	ha1 := authMD5(user + ":" + realm + ":" + password)
	resp := authMD5(ha1 + ":" + nonce + ":00000001:c0ffee:auth:" + authMD5(method+":"+uri))
	return fmt.Sprintf(`Authorization: Digest username="%s", realm="%s", nonce="%s", uri="%s", response="%s", algorithm=MD5, qop=auth, nc=00000001, cnonce="c0ffee"`,
		user, realm, nonce, uri, resp)
}

// TestAuthDigest: -digest adds a second challenge of scheme Digest, and a
// Digest login works like a Basic one.
func TestAuthDigest(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s, _ := authStart(t, m, "-digest")
		r := s.get(t, "/private/d")
		authWant(t, r, "401 Unauthorized", "")
		ch := r.Header.Values("Www-Authenticate")
		if len(ch) != 2 || !strings.HasPrefix(ch[1], `Digest realm="localhost", qop="auth", algorithm=MD5, nonce="`) {
			t.Fatalf("WWW-Authenticate %q", ch)
		}
		r = s.get(t, "/private/d?q=1", digestHeader(t, ch, "GET", "/private/d?q=1", authEmail, authPassword))
		authWant(t, r, "200 OK", `{"path": "d"}`)
		if c := cookieNamed(r, "token"); c == nil || !authTokenRe.MatchString(c.Value) {
			t.Errorf("Set-Cookie %q", r.Header.Values("Set-Cookie"))
		}
		ch = s.get(t, "/private/d").Header.Values("Www-Authenticate")
		authWant(t, s.get(t, "/private/d", digestHeader(t, ch, "GET", "/private/d", authEmail, "wrong")), "401 Unauthorized", "")
		authWant(t, s.get(t, "/private/d", digestHeader(t, ch, "GET", "/private/d", "nobody@example.org", "x")), "401 Not Found", "")
		authWant(t, s.get(t, "/private/d", digestHeader(t, ch, "GET", "/private/other", authEmail, authPassword)), "401 Unauthorized", "")

		curl, err := exec.LookPath("curl")
		if err != nil {
			t.Log("curl not installed: curl --digest not tried")
			return
		}
		out, err := command(curl, "-sS", "--digest", "-u", authEmail+":"+authPassword, s.URL+"/private/curl").Output()
		if err != nil || string(out) != `{"path": "curl"}` {
			t.Errorf("curl --digest: %q %v", out, err)
		}
	})
}
