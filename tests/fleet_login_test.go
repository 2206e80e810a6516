package tests

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Logins across the nodes of a fleet (docs/fleet.md §6): a cookie issued
// by any node is accepted by every node at once, whatever each node saw
// of the user before, and no node keeps accepting what another node (or
// reso user -nats) has replaced.

// fleetLoginAttempts is the -login-attempts of these fleets: the tests
// poll refused cookies from one address, which counts against it.
const fleetLoginAttempts = "50"

// nextSecond waits until the clock is in a later second than at the
// call: a session token is its record's and its second's, so two logins
// in one second get the same token, and the tests need different ones.
func nextSecond(t *testing.T) {
	t.Helper()
	now := time.Now().Unix()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Unix() == now {
		if time.Now().After(deadline) {
			t.Fatal("the clock did not reach the next second")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fleetUser adds email with password to f's logins with reso user add -nats.
func fleetUser(t *testing.T, f *fleet, email, password string) {
	t.Helper()
	if out, errs, code := runReso(t, f.dir, nil, password+"\n", "user", "add", email, "-nats", f.nats.URLs(), "-fleet", f.name); code != 0 {
		t.Fatalf("reso user add %s: exit %d: %q %q", email, code, out, errs)
	}
}

// credentials returns the Authorization header line for a request of
// method to target on node i: Basic, or Digest answering the node's own
// challenge.
func (f *fleet) credentials(t *testing.T, i int, digest bool, method, target, email, password string) string {
	t.Helper()
	if !digest {
		return authBasic(email, password)
	}
	ch := f.node(i).get(t, "/private/challenge").Header.Values("Www-Authenticate")
	return digestHeader(t, ch, method, target, email, password)
}

// login logs in on node i with GET /private/login and returns the
// session's Cookie header line.
func (f *fleet) login(t *testing.T, i int, digest bool, email, password string) string {
	t.Helper()
	r := f.node(i).get(t, "/private/login", f.credentials(t, i, digest, "GET", "/private/login", email, password))
	tok, uid := cookieNamed(r, "token"), cookieNamed(r, "user_id")
	if r.StatusLine != "HTTP/1.1 200 OK" || tok == nil || uid == nil {
		t.Fatalf("login of %s on node %d: %q, Set-Cookie %q", email, i, r.StatusLine, r.Header.Values("Set-Cookie"))
	}
	return authCookies(uid.Value, tok.Value)
}

// wantAccepted checks that every node accepts the Cookie header line,
// without touching the cookies.
func (f *fleet) wantAccepted(t *testing.T, cookie, what string) {
	t.Helper()
	for j := range f.nodes {
		r := f.node(j).get(t, "/private/x", cookie)
		if r.StatusLine != "HTTP/1.1 200 OK" || r.Body != `{"path": "x"}` || len(r.Header.Values("Set-Cookie")) != 0 {
			t.Fatalf("%s: node %d answers the cookie %q %q, Set-Cookie %q", what, j, r.StatusLine, r.Body, r.Header.Values("Set-Cookie"))
		}
	}
}

// wantRefused waits until every node answers the Cookie header line
// 401 Unauthorized and expires both cookies, for at most within.
func (f *fleet) wantRefused(t *testing.T, cookie string, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for j := range f.nodes {
		for {
			r := f.node(j).get(t, "/private/x", cookie)
			if r.StatusLine == "HTTP/1.1 401 Unauthorized" {
				if tok := cookieNamed(r, "token"); tok == nil || tok.MaxAge >= 0 {
					t.Fatalf("%s: node %d refuses the cookie without expiring it: Set-Cookie %q", what, j, r.Header.Values("Set-Cookie"))
				}
				break
			}
			if r.StatusLine != "HTTP/1.1 200 OK" {
				t.Fatalf("%s: node %d answers the cookie %q", what, j, r.StatusLine)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: node %d still accepts the cookie after %v", what, j, within)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestFleetLogins: alice authenticates on each node in turn (a WebSocket
// to /channel with credentials, closed or left open, or a plain request;
// Basic or Digest), each in a second of its own so that each node issues
// her a token of its own; then she logs in on node k: the cookie works on
// every node at once; then on the next node, which replaces her token:
// every node refuses the previous cookie (within 2 s) and accepts the new
// one.
func TestFleetLogins(t *testing.T) {
	t.Parallel()
	f := startFleet(t, fleetNodes, "-digest", "-login-attempts", fleetLoginAttempts)
	for _, c := range []struct {
		name   string
		digest bool
		ws     bool // a WebSocket in place of a plain request
		open   bool // the WebSockets stay open
	}{
		{"websocket closed", false, true, false},
		{"websocket open", false, true, true},
		{"http", false, false, false},
		{"digest websocket closed", true, true, false},
		{"digest websocket open", true, true, true},
		{"digest http", true, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			email, pw := uniq("alice-")+"@example.org", "alice:pw"
			fleetUser(t, f, email, pw)
			for i := range f.nodes {
				nextSecond(t)
				if !c.ws {
					r := f.node(i).get(t, "/private/warm", f.credentials(t, i, c.digest, "GET", "/private/warm", email, pw))
					wantHTTP(t, r, "200 OK", `{"path": "warm"}`)
					continue
				}
				h := http.Header{}
				auth := f.credentials(t, i, c.digest, "GET", "/channel", email, pw)
				h.Set("Authorization", strings.TrimPrefix(auth, "Authorization: "))
				ws := clients(t, f.on(i)).dial(fmt.Sprintf("$%d", i), wsOptions{header: h, noID: true})
				if r := ws.call(`{"method":"PUT","resource":"/` + uniq("w-") + `","msg_id":1}`); r != `{"msg_id":1,"code":"success"}` {
					t.Fatalf("node %d: PUT over the WebSocket: %s", i, r)
				}
				if !c.open {
					ws.closeNormal()
				}
			}
			prev := ""
			for k := range f.nodes {
				nextSecond(t)
				cookie := f.login(t, k, c.digest, email, pw)
				if prev != "" {
					// Before any node sees the new cookie, which would
					// make it read the record again.
					f.wantRefused(t, prev, 2*time.Second, fmt.Sprintf("cookie replaced by the login on node %d", k))
				}
				f.wantAccepted(t, cookie, fmt.Sprintf("cookie of node %d", k))
				prev = cookie
			}
		})
	}
}

// TestFleetPasswordChange: reso user passwd -nats while alice has a
// session known to every node and a WebSocket open on each: within 2 s
// every node refuses her cookie and her old password and closes her
// WebSockets with 1008 "session ended"; the new password logs in on every
// node and its cookie works on every node.
func TestFleetPasswordChange(t *testing.T) {
	t.Parallel()
	f := startFleet(t, fleetNodes, "-digest", "-login-attempts", fleetLoginAttempts)
	email, pw, newPW := uniq("alice-")+"@example.org", "old-pw", "new-pw"
	fleetUser(t, f, email, pw)
	var open []*wsClient
	for i := range f.nodes {
		nextSecond(t)
		h := http.Header{}
		h.Set("Authorization", strings.TrimPrefix(authBasic(email, pw), "Authorization: "))
		open = append(open, clients(t, f.on(i)).dial(fmt.Sprintf("$%d", i), wsOptions{header: h, noID: true}))
	}
	nextSecond(t)
	cookie := f.login(t, 1, false, email, pw)
	f.wantAccepted(t, cookie, "cookie before the new password")

	if out, errs, code := runReso(t, f.dir, nil, newPW+"\n", "user", "passwd", email, "-nats", f.nats.URLs(), "-fleet", f.name); code != 0 {
		t.Fatalf("reso user passwd: exit %d: %q %q", code, out, errs)
	}
	changed := time.Now()
	f.wantRefused(t, cookie, 2*time.Second, "cookie after reso user passwd")
	t.Logf("the old cookie refused on every node %v after reso user passwd returned", time.Since(changed).Round(time.Millisecond))
	for i, ws := range open {
		if code, reason := ws.closed(); code != closePolicy || reason != "session ended" {
			t.Errorf("node %d: the WebSocket closed with %d %q, want %d %q", i, code, reason, closePolicy, "session ended")
		}
	}
	for i := range f.nodes {
		wantHTTP(t, f.node(i).get(t, "/private/x", authBasic(email, pw)), "401 Unauthorized", "-")
		wantHTTP(t, f.node(i).get(t, "/private/x", f.credentials(t, i, true, "GET", "/private/x", email, pw)), "401 Unauthorized", "-")
	}
	for i := range f.nodes {
		nextSecond(t)
		cookie := f.login(t, i, i == 2, email, newPW)
		f.wantAccepted(t, cookie, fmt.Sprintf("cookie of the new password from node %d", i))
	}
}
