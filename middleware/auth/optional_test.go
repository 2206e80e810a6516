package auth

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestOptional covers the optional identity: anonymous callers pass with
// nothing written, valid credentials give an identity (a password login
// with its session cookies), wrong ones are answered as on a required
// route.
func TestOptional(t *testing.T) {
	f := newFixture(t, nil)
	r := f.get(t, "/", basic(testEmail, testPassword))
	tok := wantSession(t, r, f.id)
	uid := fmt.Sprint(f.id)
	me := uid + " " + testEmail

	t.Run("anonymous", func(t *testing.T) {
		r := f.get(t, "/opt/x")
		if r.status != "200 OK" || r.body != "anonymous" {
			t.Fatalf("%q %q", r.status, r.body)
		}
		if len(r.challenge) != 0 || len(r.header.Values("Set-Cookie")) != 0 {
			t.Errorf("an anonymous caller got WWW-Authenticate %q, Set-Cookie %q", r.challenge, r.header.Values("Set-Cookie"))
		}
	})
	t.Run("one cookie only is anonymous", func(t *testing.T) {
		r := f.get(t, "/opt/x", "Cookie: user_id="+uid)
		if r.status != "200 OK" || r.body != "anonymous" || len(r.header.Values("Set-Cookie")) != 0 {
			t.Fatalf("%q %q %q", r.status, r.body, r.header.Values("Set-Cookie"))
		}
	})
	t.Run("cookie session", func(t *testing.T) {
		r := f.get(t, "/opt/x", cookies(uid, tok))
		if r.status != "200 OK" || r.body != me {
			t.Fatalf("%q %q", r.status, r.body)
		}
		if len(r.cookies) != 0 || len(r.challenge) != 0 {
			t.Errorf("a session sent cookies %v, challenge %q", r.cookies, r.challenge)
		}
	})
	t.Run("Basic sets the session cookies", func(t *testing.T) {
		f.clock.Advance(time.Second)
		r := f.get(t, "/opt/x", basic(testEmail, testPassword))
		if r.status != "200 OK" || r.body != me {
			t.Fatalf("%q %q", r.status, r.body)
		}
		tok = wantSession(t, r, f.id)
		if got := f.stored(t, f.id).Token; got != tok {
			t.Errorf("stored token %q, cookie %q", got, tok)
		}
	})
	tests := []struct {
		name, header, status string
		expired              bool
	}{
		{"wrong password", basic(testEmail, "wrong"), "401 Unauthorized", false},
		{"unknown e-mail", basic("nobody@example.com", testPassword), "401 Not Found", false},
		{"unchecked scheme", "Authorization: Bearer x", "401 Unauthorized", false},
		{"stale session", cookies(uid, makeToken(testSecret, f.id, f.clock.Now().Add(-time.Hour))), "401 Unauthorized", true},
		{"administrator, wrong token", cookies("0", tok), "401 Not Authorized as Admin", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.get(t, "/opt/x", tt.header)
			if r.status != tt.status {
				t.Fatalf("status %q, want %q (body %q)", r.status, tt.status, r.body)
			}
			if r.body != tt.status+"\n" {
				t.Errorf("body %q: the route ran", r.body)
			}
			wantChallenge(t, r)
			if tt.expired {
				wantExpired(t, r, CookieToken, CookieUserID)
			} else if len(r.cookies) != 0 {
				t.Errorf("cookies %v, want none", r.cookies)
			}
		})
	}
}

// TestOptionalThrottle: wrong passwords on an optional route count as on a
// required one, and a throttled client with credentials gets 429, while an
// anonymous request from the same address still passes.
func TestOptionalThrottle(t *testing.T) {
	f := newFixture(t, nil)
	wrong := basic(testEmail, "wrong")
	for i := range DefaultLoginAttempts {
		wantCode(t, fmt.Sprint("failure ", i+1), f.from(t, attacker, "/opt/x", wrong), 401, "")
	}
	wantCode(t, "right password while throttled", f.from(t, attacker, "/opt/x", basic(testEmail, testPassword)), 429, "1")
	wantCode(t, "required route while throttled", f.from(t, attacker, "/", basic(testEmail, testPassword)), 429, "1")
	a := f.from(t, attacker, "/opt/x")
	wantCode(t, "anonymous while throttled", a, 200, "")
	if a.body != "anonymous" {
		t.Errorf("anonymous body %q", a.body)
	}
}

// recordingWriter records everything written to it.
type recordingWriter struct {
	header http.Header
	calls  []string
}

func (w *recordingWriter) Header() http.Header { return w.header }
func (w *recordingWriter) Write(p []byte) (int, error) {
	w.calls = append(w.calls, "Write")
	return len(p), nil
}
func (w *recordingWriter) WriteHeader(code int) {
	w.calls = append(w.calls, fmt.Sprint("WriteHeader ", code))
}

// TestCheckNoSideEffects: Check writes nothing (it gets no writer, and it
// leaves the request alone); Result.Write sets headers only, never a status
// or a body; the result of an anonymous request that is not written leaves
// the response untouched.
func TestCheckNoSideEffects(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Digest = true })
	rec, err := f.store.ByID(t.Context(), f.id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.issue(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	tok, _ := f.a.cache.id(f.id)
	uid := fmt.Sprint(f.id)
	tests := []struct {
		name, header  string
		ok, anonymous bool
		set           []string // header names Write sets
	}{
		{"anonymous", "", false, true, []string{"Www-Authenticate"}},
		{"Basic", basic(testEmail, testPassword), true, false, []string{"Set-Cookie"}},
		{"wrong password", basic(testEmail, "wrong"), false, false, []string{"Www-Authenticate"}},
		{"cookie session", cookies(uid, tok.Token), true, false, nil},
		{"stale session", cookies(uid, strings.Repeat("0", tokenLen)), false, false, []string{"Set-Cookie", "Www-Authenticate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/x", nil)
			if tt.header != "" {
				k, v, _ := strings.Cut(tt.header, ": ")
				r.Header.Set(k, v)
			}
			before := r.Header.Clone()
			res, err := f.a.Check(r)
			if (err == nil) != tt.ok || res.Anonymous != tt.anonymous || (res.Identity != nil) != tt.ok {
				t.Fatalf("Check = %+v, %v", res, err)
			}
			if fmt.Sprint(r.Header) != fmt.Sprint(before) {
				t.Errorf("Check changed the request header: %v", r.Header)
			}
			w := &recordingWriter{header: http.Header{}}
			res.Write(w)
			if len(w.calls) != 0 {
				t.Errorf("Result.Write called %v", w.calls)
			}
			if fmt.Sprint(slices.Sorted(maps.Keys(w.header))) != fmt.Sprint(tt.set) {
				t.Errorf("Result.Write set %v, want %v", slices.Sorted(maps.Keys(w.header)), tt.set)
			}
		})
	}
	// The zero Result writes nothing.
	w := &recordingWriter{header: http.Header{}}
	(&Result{}).Write(w)
	if len(w.header) != 0 || len(w.calls) != 0 {
		t.Errorf("zero Result wrote %v %v", w.header, w.calls)
	}
}
