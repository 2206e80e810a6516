package tests

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The end of a user's sessions (issue 29, "Sessions"; docs/auth.md,
// docs/fleet.md §6): a new password or a removal, made with reso user
// (-db on one server, -nats on a fleet) or by a node starting with
// -login, ends that user's sessions and open connections on every node
// within sessionsEnd, without a restart, as it does on one server. No
// HTTP route changes a password or removes a login record: /users is the
// example's read-only list, and the call plugin's /user/<id> are its own
// resources, not login records.

// sessionsEnd is the bound the issue names; sessionsMargin is added to it
// for the machine's load (the test only fails past both).
const (
	sessionsEnd    = 2 * time.Second
	sessionsMargin = 3 * time.Second
)

// sessionSite is one server, or the nodes of a fleet, whose users'
// sessions a test ends.
type sessionSite struct {
	nodes []*server // the server, or each node of the fleet
	mode  mode
	where []string // the flags of reso user: -db FILE, or -nats URLS -fleet NAME
	fleet *fleet   // nil for one server
}

// startSessionSite starts one server in mode m (compiled or isolated) or,
// for fleetMode, a fleet of fleetNodes nodes, with -digest and a login
// throttle that lets the tests poll refused cookies.
func startSessionSite(t *testing.T, m mode) *sessionSite {
	t.Helper()
	args := []string{"-digest", "-login-attempts", fleetLoginAttempts}
	if m.name != fleetMode.name {
		cs := startChannel(t, m, args...)
		return &sessionSite{nodes: []*server{cs.server}, mode: m, where: []string{"-db", cs.DB}}
	}
	f := startFleet(t, fleetNodes, args...)
	s := &sessionSite{mode: fleetMode, where: []string{"-nats", f.nats.URLs(), "-fleet", f.name}, fleet: f}
	for i := range f.nodes {
		s.nodes = append(s.nodes, f.node(i))
	}
	return s
}

// on returns node i as a chanServer of the test t, for the channel
// tests' helpers.
func (s *sessionSite) on(t *testing.T, i int) *chanServer {
	return &chanServer{server: s.nodes[i], t: t, m: s.mode}
}

// user runs reso user with args and the site's flags, stdin as the
// password, and fails the test unless it exits 0.
func (s *sessionSite) user(t *testing.T, stdin string, args ...string) {
	t.Helper()
	if out, errs, code := runReso(t, t.TempDir(), nil, stdin, append(append([]string{"user"}, args...), s.where...)...); code != 0 {
		t.Fatalf("reso user %v: exit %d: %q %q", args, code, out, errs)
	}
}

// credentials returns the Authorization header line for method target on
// node i: Basic, or Digest answering the node's own challenge.
func (s *sessionSite) credentials(t *testing.T, i int, digest bool, method, target, email, password string) string {
	t.Helper()
	if !digest {
		return authBasic(email, password)
	}
	ch := s.nodes[i].get(t, "/private/challenge").Header.Values("Www-Authenticate")
	return digestHeader(t, ch, method, target, email, password)
}

// login logs in on node i with Basic and returns the Cookie header line.
func (s *sessionSite) login(t *testing.T, i int, email, password string) string {
	t.Helper()
	r := s.nodes[i].get(t, "/private/login", authBasic(email, password))
	tok, uid := cookieNamed(r, "token"), cookieNamed(r, "user_id")
	if r.StatusLine != "HTTP/1.1 200 OK" || tok == nil || uid == nil {
		t.Fatalf("login of %s on node %d: %q, Set-Cookie %q", email, i, r.StatusLine, r.Header.Values("Set-Cookie"))
	}
	return authCookies(uid.Value, tok.Value)
}

// wantAccepted checks that every node accepts the Cookie header line
// without touching the cookies.
func (s *sessionSite) wantAccepted(t *testing.T, cookie, what string) {
	t.Helper()
	for j, n := range s.nodes {
		r := n.get(t, "/private/x", cookie)
		if r.StatusLine != "HTTP/1.1 200 OK" || r.Body != `{"path": "x"}` || len(r.Header.Values("Set-Cookie")) != 0 {
			t.Fatalf("%s: node %d answers the cookie %q %q, Set-Cookie %q", what, j, r.StatusLine, r.Body, r.Header.Values("Set-Cookie"))
		}
	}
}

// wantRefused waits until every node answers the Cookie header line
// 401 Unauthorized and expires both cookies, until deadline.
func (s *sessionSite) wantRefused(t *testing.T, cookie string, deadline time.Time, what string) {
	t.Helper()
	for j, n := range s.nodes {
		for {
			r := n.get(t, "/private/x", cookie)
			if r.StatusLine == "HTTP/1.1 401 Unauthorized" {
				for _, name := range []string{"token", "user_id"} {
					if c := cookieNamed(r, name); c == nil || c.MaxAge >= 0 {
						t.Fatalf("%s: node %d refuses the cookie without expiring %s: Set-Cookie %q", what, j, name, r.Header.Values("Set-Cookie"))
					}
				}
				break
			}
			if r.StatusLine != "HTTP/1.1 200 OK" {
				t.Fatalf("%s: node %d answers the cookie %q", what, j, r.StatusLine)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: node %d still accepts the cookie %v after the change", what, j, sessionsEnd+sessionsMargin)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// sessionConns are the open connections of one user on one node.
type sessionConns struct {
	ws      map[string]*wsClient // by kind: basic, digest, cookie
	streams map[string]*stream   // by kind: watch (NDJSON, Basic), sse (cookie), login (the call plugin's, cookie)
}

// wsHeader returns a handshake header holding the header line h.
func wsHeader(h string) http.Header {
	name, value, _ := strings.Cut(h, ": ")
	hd := http.Header{}
	hd.Set(name, value)
	return hd
}

// openCredentials opens the connections of email on node i that carry
// its password (each a login): WebSockets with Basic and Digest, and a
// GET kept open of /channel<top>?watch with Basic.
func (s *sessionSite) openCredentials(t *testing.T, i int, email, password, top string) *sessionConns {
	t.Helper()
	c := &sessionConns{ws: map[string]*wsClient{}, streams: map[string]*stream{}}
	g := clients(t, s.on(t, i))
	for _, digest := range []bool{false, true} {
		kind := map[bool]string{false: "basic", true: "digest"}[digest]
		ws := g.dial(fmt.Sprintf("%s-%s-%d", email, kind, i), wsOptions{header: wsHeader(s.credentials(t, i, digest, "GET", "/channel", email, password)), noID: true})
		if r := ws.call(`{"method":"GET","resource":"` + top + `","msg_id":1}`); !strings.HasPrefix(r, `{"msg_id":1,"code":"success"`) {
			t.Fatalf("node %d: GET %s over the %s WebSocket: %s", i, top, kind, r)
		}
		c.ws[kind] = ws
	}
	st := s.on(t, i).openStream("/channel"+top+"?watch", authBasic(email, password))
	if st.Resp.StatusLine != "HTTP/1.1 200 OK" {
		t.Fatalf("node %d: GET /channel%s?watch with Basic: %q", i, top, st.Resp.StatusLine)
	}
	st.line()
	c.streams["watch"] = st
	return c
}

// openCookie adds to c the connections of the session cookie on node i:
// a WebSocket, an EventSource of /channel<top>, and the call plugin's
// GET /login/<email>?watch=diff.
func (s *sessionSite) openCookie(t *testing.T, c *sessionConns, i int, email, cookie, top string) {
	t.Helper()
	ws := clients(t, s.on(t, i)).dial(fmt.Sprintf("%s-cookie-%d", email, i), wsOptions{header: wsHeader(cookie), noID: true})
	if r := ws.call(`{"method":"GET","resource":"` + top + `","msg_id":1}`); !strings.HasPrefix(r, `{"msg_id":1,"code":"success"`) {
		t.Fatalf("node %d: GET %s over the cookie's WebSocket: %s", i, top, r)
	}
	c.ws["cookie"] = ws
	sse := s.on(t, i).openStream("/channel"+top, cookie, "Accept: text/event-stream")
	if sse.Resp.StatusLine != "HTTP/1.1 200 OK" {
		t.Fatalf("node %d: EventSource of /channel%s: %q", i, top, sse.Resp.StatusLine)
	}
	sse.event()
	c.streams["sse"] = sse
	if email != "" {
		lw := s.on(t, i).openStream("/login/"+email+"?watch=diff", cookie)
		if lw.Resp.StatusLine != "HTTP/1.1 200 OK" {
			t.Fatalf("node %d: GET /login/%s?watch=diff: %q", i, email, lw.Resp.StatusLine)
		}
		lw.line()
		c.streams["login"] = lw
	}
}

// wsEnded waits until reading c ends, at most until deadline, and returns
// its close code and reason; ok is false when it is still open then.
func wsEnded(c *wsClient, deadline time.Time) (code websocket.StatusCode, reason string, ok bool) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		select {
		case <-c.frames:
			continue
		case <-c.done:
			var ce websocket.CloseError
			if errors.As(c.err, &ce) {
				return ce.Code, ce.Reason, true
			}
			return -1, fmt.Sprint(c.err), true
		case <-timer.C:
			return 0, "", false
		}
	}
}

// streamEnded reads s to its end, at most until deadline, and reports
// whether the server ended it (the last chunk, or the connection closed).
func streamEnded(s *stream, deadline time.Time) (bool, error) {
	s.conn.SetReadDeadline(deadline)
	_, err := io.Copy(io.Discard, s.body)
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return false, err
	}
	return true, err
}

// wantEnded checks that every connection of conns ended by deadline, the
// WebSockets with 1008 "session ended".
func wantEnded(t *testing.T, conns []*sessionConns, deadline time.Time, what string) {
	t.Helper()
	for i, c := range conns {
		for kind, ws := range c.ws {
			code, reason, ok := wsEnded(ws, deadline)
			switch {
			case !ok:
				t.Errorf("%s: node %d: the %s WebSocket is still open %v after the change", what, i, kind, sessionsEnd+sessionsMargin)
			case code != closePolicy || reason != "session ended":
				t.Errorf("%s: node %d: the %s WebSocket closed with %d %q, want %d %q", what, i, kind, code, reason, closePolicy, "session ended")
			}
		}
		for kind, st := range c.streams {
			if ended, err := streamEnded(st, deadline); !ended {
				t.Errorf("%s: node %d: the %s stream is still open %v after the change (%v)", what, i, kind, sessionsEnd+sessionsMargin, err)
			}
		}
	}
}

// sessionUser is a user of a test: its e-mail, password and a persistent
// resource of its own that its streams follow.
type sessionUser struct {
	email, password, top string
}

// newSessionUser adds a user with reso user add and creates its resource.
func (s *sessionSite) newSessionUser(t *testing.T, prefix string) sessionUser {
	t.Helper()
	u := sessionUser{uniq(prefix) + "@example.org", "pw:" + uniq(""), "/" + uniq("top-")}
	s.user(t, u.password+"\n", "add", u.email)
	return u
}

// put writes u's resource on node 0 with the credentials line cred.
func (s *sessionSite) put(t *testing.T, u sessionUser, cred string) {
	t.Helper()
	r := s.on(t, 0).httpJSON("PUT", "/channel"+u.top, `{"n":"`+uniq("")+`"}`, cred)
	if r.StatusLine != "HTTP/1.1 200 OK" && r.StatusLine != "HTTP/1.1 201 Created" {
		t.Fatalf("PUT /channel%s: %q %q", u.top, r.StatusLine, r.Body)
	}
}

// sessionChange is a way to end a user's sessions.
type sessionChange struct {
	name   string
	remove bool // a removal (else a new password)
	// do makes the change for u and returns its new password ("" when
	// removed).
	do func(t *testing.T, s *sessionSite, u sessionUser) string
}

// cliChanges are reso user passwd and reso user remove, with the site's
// flags (-db or -nats).
var cliChanges = []sessionChange{
	{"reso user passwd", false, func(t *testing.T, s *sessionSite, u sessionUser) string {
		pw := "new:" + uniq("")
		s.user(t, pw+"\n", "passwd", u.email)
		return pw
	}},
	{"reso user remove", true, func(t *testing.T, s *sessionSite, u sessionUser) string {
		s.user(t, "", "remove", u.email)
		return ""
	}},
}

// TestSessionsEnd: a user with, on every node, WebSockets authenticated
// with Basic, Digest and the session cookie, a GET kept open with Basic,
// an EventSource with the cookie and the call plugin's login watch; then
// reso user passwd or reso user remove: within the bound every node
// refuses the cookie (401, both cookies expired) and the old password
// (Basic and Digest), and every one of those connections ends, the
// WebSockets with 1008 "session ended"; another user's cookie, WebSocket
// and EventSource on every node stay. The new password logs in on every
// node; a removed user added again with the same name and password gets
// a new record: the old cookie stays refused everywhere. On one server
// (compiled) and on a fleet, where the change is made through -nats.
func TestSessionsEnd(t *testing.T) {
	t.Parallel()
	for _, m := range []mode{allModes[0], fleetMode} {
		t.Run(m.name, func(t *testing.T) {
			s := startSessionSite(t, m)
			for _, c := range cliChanges {
				t.Run(c.name, func(t *testing.T) { s.endSessions(t, c) })
			}
		})
	}
}

// endSessions runs the scenario of TestSessionsEnd for one change.
func (s *sessionSite) endSessions(t *testing.T, c sessionChange) {
	u := s.newSessionUser(t, "alice-")
	other := s.newSessionUser(t, "cat-")
	s.endSessionsOf(t, c, u, other)
}

// endSessionsOf opens u's connections on every node (and other's), makes
// the change c and checks what ends and what stays.
func (s *sessionSite) endSessionsOf(t *testing.T, c sessionChange, u, other sessionUser) {
	t.Helper()
	keep := s.login(t, len(s.nodes)-1, other.email, other.password)
	s.put(t, other, keep)
	var kept []*sessionConns
	for i := range s.nodes {
		k := &sessionConns{ws: map[string]*wsClient{}, streams: map[string]*stream{}}
		s.openCookie(t, k, i, "", keep, other.top)
		kept = append(kept, k)
	}

	s.put(t, u, authBasic(u.email, u.password))
	var conns []*sessionConns
	for i := range s.nodes {
		conns = append(conns, s.openCredentials(t, i, u.email, u.password, u.top))
	}
	// The cookie last, in a second of its own: the logins above each
	// replaced the token.
	nextSecond(t)
	cookie := s.login(t, 1%len(s.nodes), u.email, u.password)
	s.wantAccepted(t, cookie, "cookie before the change")
	for i := range s.nodes {
		s.openCookie(t, conns[i], i, u.email, cookie, u.top)
	}

	pw := c.do(t, s, u)
	changed := time.Now()
	deadline := changed.Add(sessionsEnd + sessionsMargin)
	s.wantRefused(t, cookie, deadline, "cookie after "+c.name)
	wantEnded(t, conns, deadline, c.name)
	t.Logf("%s: cookie refused and connections ended on every node %v after the change returned", c.name, time.Since(changed).Round(time.Millisecond))

	// The old password, Basic and Digest.
	refused := "401 Unauthorized"
	if c.remove {
		refused = "401 Not Found"
	}
	for i, n := range s.nodes {
		wantHTTP(t, n.get(t, "/private/x", authBasic(u.email, u.password)), refused, "-")
		wantHTTP(t, n.get(t, "/private/x", s.credentials(t, i, true, "GET", "/private/x", u.email, u.password)), refused, "-")
	}

	// The other user's session stays, everywhere.
	s.wantAccepted(t, keep, "the other user's cookie")
	s.put(t, other, keep)
	for i, k := range kept {
		k.ws["cookie"].quiet()
		if e := k.streams["sse"].event(); !strings.Contains(e.Data, other.top) {
			t.Errorf("node %d: the other user's EventSource: %+v", i, e)
		}
	}

	if c.remove {
		// Added again with the same name and password: a new record, which
		// revives nothing of the old one.
		s.user(t, u.password+"\n", "add", u.email)
		pw = u.password
		for j, n := range s.nodes {
			r := n.get(t, "/private/x", cookie)
			if tok := cookieNamed(r, "token"); r.StatusLine != "HTTP/1.1 401 Unauthorized" || tok == nil || tok.MaxAge >= 0 {
				t.Fatalf("node %d: the cookie of the removed user after it was added again: %q, Set-Cookie %q", j, r.StatusLine, r.Header.Values("Set-Cookie"))
			}
		}
	}
	for i := range s.nodes {
		nextSecond(t)
		fresh := s.login(t, i, u.email, pw)
		s.wantAccepted(t, fresh, fmt.Sprintf("cookie of the login on node %d after the change", i))
	}
}

// joinWith starts one more node of the site's fleet with the fleet's
// flags and extra, and stops it when t ends: a node that changes the
// logins as it starts (-login).
func (s *sessionSite) joinWith(t *testing.T, extra ...string) {
	t.Helper()
	n, err := startIn(t, s.fleet.dir, fleetMode, append(append([]string{}, s.fleet.args...), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	n.wait = fleetWait
	t.Cleanup(func() {
		n.stop()
		if t.Failed() {
			t.Logf("joining node log (%s):\n%s", n.Addr, n.log.String())
		}
	})
}

// TestFleetSessionsEndByNode is TestSessionsEnd for the changes a node
// makes as it starts: a node joining the fleet with -login EMAIL:PASSWORD
// gives the user that password, one with -login ” removes the example
// user user@example.org; either ends the user's sessions on the other
// nodes as reso user -nats does.
func TestFleetSessionsEndByNode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sessionChange
		example bool // the user is the example user
	}{
		{sessionChange{"a node started with -login EMAIL:PASSWORD", false, func(t *testing.T, s *sessionSite, u sessionUser) string {
			pw := "new:" + uniq("")
			s.joinWith(t, "-login", u.email+":"+pw)
			return pw
		}}, false},
		{sessionChange{"a node started with -login ''", true, func(t *testing.T, s *sessionSite, u sessionUser) string {
			s.joinWith(t, "-login", "")
			return ""
		}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startSessionSite(t, fleetMode)
			u := sessionUser{"user@example.org", "example", "/" + uniq("top-")}
			if !c.example {
				u = s.newSessionUser(t, "alice-")
			}
			s.endSessionsOf(t, c.sessionChange, u, s.newSessionUser(t, "cat-"))
		})
	}
}

// TestSessionsEndRace: while reso user passwd runs, clients keep opening
// WebSockets on every node with the user's cookie and with her old
// password, until a node refuses them: every WebSocket a node accepted,
// before, during or after the change, ends within the bound with 1008
// "session ended", none outlives the change. On one server and on a
// fleet; on one server in both plugin modes, since the WebSocket door of
// an isolated run connects its clients to the tree through pluginrpc.
func TestSessionsEndRace(t *testing.T) {
	t.Parallel()
	for _, m := range append(slices.Clone(allModes), fleetMode) {
		t.Run(m.name, func(t *testing.T) {
			s := startSessionSite(t, m)
			for round := range 3 {
				t.Run(fmt.Sprint(round), func(t *testing.T) { s.raceChange(t) })
			}
		})
	}
}

// raceChange is one round of TestSessionsEndRace.
func (s *sessionSite) raceChange(t *testing.T) {
	u := s.newSessionUser(t, "alice-")
	cookie := s.login(t, 0, u.email, u.password)
	s.wantAccepted(t, cookie, "cookie before the change")
	type opened struct {
		node int
		ws   *wsClient
		with string
	}
	var (
		mu   sync.Mutex
		all  []opened
		wg   sync.WaitGroup
		stop = make(chan struct{})
	)
	for i := range s.nodes {
		for _, with := range []string{cookie, authBasic(u.email, u.password)} {
			g := clients(t, s.on(t, i))
			wg.Go(func() {
				for n := 0; n < 2000; n++ {
					c, resp, err := g.dialRaw(wsOptions{header: wsHeader(with)})
					if err != nil {
						if resp == nil || resp.StatusCode != http.StatusUnauthorized {
							t.Errorf("node %d: dialing: %v %v", i, err, resp)
						}
						return // refused: the change reached this node
					}
					c.startReading()
					mu.Lock()
					all = append(all, opened{i, c, with[:strings.Index(with, ":")]})
					mu.Unlock()
					select {
					case <-stop:
						return
					default:
					}
				}
			})
		}
	}
	// Some connections open before the change.
	for deadline := time.Now().Add(fleetWait); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(all)
		mu.Unlock()
		if n >= 4*len(s.nodes) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d WebSockets opened before the change", n)
		}
	}
	pw := "new:" + uniq("")
	s.user(t, pw+"\n", "passwd", u.email)
	changed := time.Now()
	deadline := changed.Add(sessionsEnd + sessionsMargin)
	time.AfterFunc(sessionsEnd, func() { close(stop) })
	wg.Wait()
	for _, o := range all {
		code, reason, ok := wsEnded(o.ws, deadline)
		switch {
		case !ok:
			t.Errorf("node %d: a WebSocket opened with the %s is still open %v after the change", o.node, o.with, sessionsEnd+sessionsMargin)
		case code != closePolicy || reason != "session ended":
			t.Errorf("node %d: a WebSocket opened with the %s closed with %d %q", o.node, o.with, code, reason)
		}
	}
	t.Logf("%d WebSockets opened, every one ended %v after the change", len(all), time.Since(changed).Round(time.Millisecond))
}
