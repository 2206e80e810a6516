package auth

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRouteToken covers the route-group check (step 2 of
// docs/wire.md#check-order) through a core router with the route groups
// user_id, email and token: the stored token passes without new cookies, the
// stored hash issues a new token and sets the cookies, and failures are
// answered as the route-group rows of docs/wire.md#authentication-failures.
func TestRouteToken(t *testing.T) {
	f := newFixture(t, nil)
	uid := fmt.Sprint(f.id)
	hash := HashPassword(testEmail, "localhost", testPassword)
	admin := AdminToken(testSecret)
	old := makeToken(testSecret, f.id, f.clock.Now().Add(-time.Hour))
	tests := []struct {
		name   string
		path   func(token string) string // token is the stored token
		status string
		body   string
		issued bool // a new token is stored and the cookies are set
	}{
		{"id and stored token", func(tok string) string { return "/u/" + uid + "/" + tok }, "200 OK", uid + " " + testEmail, false},
		{"id and hash", func(string) string { return "/u/" + uid + "/" + hash }, "200 OK", uid + " " + testEmail, true},
		{"e-mail and stored token", func(tok string) string { return "/e/" + testEmail + "/" + tok }, "200 OK", uid + " " + testEmail, false},
		{"e-mail and hash", func(string) string { return "/e/" + testEmail + "/" + hash }, "200 OK", uid + " " + testEmail, true},
		{"id, older token", func(string) string { return "/u/" + uid + "/" + old }, "401 Unauthorized", "", false},
		{"id, wrong token", func(string) string { return "/u/" + uid + "/abc" }, "401 Unauthorized", "", false},
		{"e-mail, wrong token", func(string) string { return "/e/" + testEmail + "/nope" }, "401 Unauthorized", "", false},
		{"e-mail, upper-case token", func(tok string) string { return "/e/" + testEmail + "/" + strings.ToUpper(tok) }, "401 Unauthorized", "", false},
		{"token of another id", func(tok string) string { return "/u/99/" + tok }, "404 Not Found", "", false},
		{"unknown e-mail", func(tok string) string { return "/e/nobody@example.com/" + tok }, "404 Not Found", "", false},
		{"administrator by e-mail", func(string) string { return "/e/admin/" + admin }, "200 OK", "0 admin", false},
		{"administrator by id", func(string) string { return "/u/0/" + admin }, "200 OK", "0 admin", false},
		{"administrator, wrong token", func(tok string) string { return "/e/admin/" + tok }, "401 Not Authorized", "", false},
		{"administrator by id, wrong token", func(string) string { return "/u/0/" + hash }, "401 Not Authorized", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.clock.Advance(time.Second)
			before := f.stored(t, f.id).Token
			r := f.get(t, tt.path(before))
			if r.status != tt.status {
				t.Fatalf("status %q, want %q (body %q)", r.status, tt.status, r.body)
			}
			after := f.stored(t, f.id).Token
			if !strings.HasPrefix(tt.status, "200") {
				if strings.HasPrefix(tt.status, "401") {
					wantChallenge(t, r)
				}
				if len(r.cookies) != 0 || after != before {
					t.Errorf("failure changed the session: cookies %v, token %q -> %q", r.cookies, before, after)
				}
				return
			}
			if r.body != tt.body {
				t.Errorf("body %q, want %q", r.body, tt.body)
			}
			if !tt.issued {
				if len(r.cookies) != 0 || after != before {
					t.Errorf("cookies %v, token %q -> %q; want no change", r.cookies, before, after)
				}
				return
			}
			tok := wantSession(t, r, f.id)
			if tok != after || after == before {
				t.Errorf("cookie token %q, stored %q, before %q: want a new stored token", tok, after, before)
			}
		})
	}
}

// TestRouteTokenPrecedence checks that route groups come before cookies
// (step 2 before step 3).
func TestRouteTokenPrecedence(t *testing.T) {
	f := newFixture(t, nil)
	tok := f.stored(t, f.id).Token
	r := f.get(t, "/u/99/"+tok, cookies(fmt.Sprint(f.id), tok))
	if r.status != "404 Not Found" {
		t.Errorf("route groups with valid cookies: %q, want 404 Not Found", r.status)
	}
}
