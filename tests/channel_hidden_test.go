package tests

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The black-box tests of docs/channel.md#hidden-resources and
// docs/channel.md#creators-and-owners: every read and subscription of a
// hidden resource answers what it answers on a missing one, on every door;
// no one takes over someone else's resources by claiming an ancestor; the
// path forms of every door; private fields at any depth; a removed user's
// sessions end.

// hiddenRules is the -channel-rules file of these tests: /closed lets
// authenticated callers only create, anonymous ones nothing; the other
// top-level paths let everybody do everything.
const hiddenRules = "/closed  self:cruds group:cruds auth:c anon:-\n*        self:cruds group:cruds auth:cruds anon:cruds\n"

// startHidden starts a rules server with hiddenRules.
func startHidden(t *testing.T, m mode) *rulesServer {
	t.Helper()
	file := filepath.Join(t.TempDir(), "rules")
	if err := os.WriteFile(file, []byte(hiddenRules), 0o600); err != nil {
		t.Fatal(err)
	}
	return startRules(t, m, flagChannelRules, file)
}

// streamHead is what the tests compare of the head of a GET kept open.
func streamHead(s *stream) string {
	return s.Resp.StatusLine + "\nContent-Type: " + s.Resp.Header.Get("Content-Type") + "\nWWW-Authenticate: " + strings.Join(s.Resp.Header.Values("Www-Authenticate"), ", ")
}

// rest reads a stream to its end (or the hang guard) and returns what it
// carried, without the keep-alives (SSE comments, empty NDJSON lines), which
// depend on time.
func (s *stream) rest() string {
	r, _ := s.restEnded()
	return r
}

// restEnded is rest, and reports whether the stream ended (rather than
// the hang guard ending the wait).
func (s *stream) restEnded() (string, bool) {
	s.conn.SetReadDeadline(time.Now().Add(wait))
	var b strings.Builder
	sc := bufio.NewScanner(s.body)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, ":") {
			continue
		}
		b.WriteString(l + "\n")
	}
	return strings.ReplaceAll(b.String(), "\n\n\n", "\n\n"), sc.Err() == nil
}

// TestChannelHiddenTable runs every cell of the table of
// docs/channel.md#hidden-resources: each read and subscription, on each
// door, by an authenticated and an anonymous caller, on a hidden resource
// and on a missing one at the same place, and compares the answers byte
// for byte (the path put back); the subscriptions and streams then deliver
// nothing about the hidden resources. The pairs: a resource hidden by its
// own rule, a resource below it, a node that exists only for a hidden
// child, and a resource under a top-level path whose rule denies reading
// (both forbidden).
func TestChannelHiddenTable(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		rs := startHidden(t, m)
		top := "/" + uniq("hid-")
		closed := "/closed/" + uniq("c-")
		rs.must(ann, "PUT", top, `{}`, "200 OK")
		rs.must(ann, "PUT", top+"/secret", `{"k":1,"_p":2}`, "200 OK")
		rs.must(ann, "PUT", top+"/secret/c", `{"k":2}`, "200 OK")
		rs.setRules(ann, top+"/secret", `{"rules":"self:cruds"}`)
		rs.must(ann, "PUT", top+"/claim/x", `{"k":3}`, "200 OK")
		rs.setRules(ann, top+"/claim/x", `{"rules":"self:cruds"}`)
		rs.must(ann, "PUT", closed+"/secret", `{"k":4}`, "200 OK")
		pairs := []struct{ name, hidden, missing string }{
			{"own rule", top + "/secret", top + "/none"},
			{"below", top + "/secret/c", top + "/none/c"},
			{"implicit node", top + "/claim", top + "/nothing"},
			{"top-level rule", closed + "/secret", closed + "/none"},
		}
		wsMsgs := []string{
			`{"method":"GET","resource":"P","msg_id":1}`,
			`{"method":"GET","resource":"P[k]","msg_id":1}`,
			`{"method":"GET","resource":"P?deep=0","msg_id":1}`,
			`{"method":"GET","resource":"P?deep=1","msg_id":1}`,
			`{"method":"GET","resource":"P?deep=2","msg_id":1}`,
			`{"method":"SUBSCRIBE","resource":"P","msg_id":1}`,
			`{"method":"SUBSCRIBE","resource":"P","stream":true,"msg_id":1}`,
			`{"method":"SUBSCRIBE","resource":"P","since":0,"msg_id":1}`,
			`{"method":"RULES","resource":"P","msg_id":1}`,
		}
		httpTargets := []string{"P", "P[k]", "P?deep=0", "P?deep=1", "P?deep=2", "P?rules"}
		streams := []struct {
			target  string
			headers []string
		}{
			{"P?watch", nil},
			{"P?watch=full", nil},
			{"P", []string{"Accept: text/event-stream"}},
			{"P", []string{"Accept: text/event-stream", "Last-Event-ID: 0"}},
		}
		g := clients(t, rs.chanServer)
		type open struct {
			what            string
			hidden, missing *stream
			p               struct{ hidden, missing string }
			w               who
		}
		var opened []open
		var wss []*wsClient
		for _, w := range []who{cat, anon} {
			c := rs.dialAs(g, "$"+w.kind, w)
			wss = append(wss, c)
			for _, p := range pairs {
				same := func(what, h, n string) {
					t.Helper()
					if strings.ReplaceAll(h, p.hidden, "P") != strings.ReplaceAll(n, p.missing, "P") {
						t.Errorf("%s, %s, %s:\nhidden  %q\nmissing %q", p.name, w.kind, what, h, n)
					}
				}
				for _, msg := range wsMsgs {
					h := c.call(strings.ReplaceAll(msg, "P", p.hidden))
					n := c.call(strings.ReplaceAll(msg, "P", p.missing))
					same("WebSocket "+msg, h, n)
				}
				for _, target := range httpTargets {
					answer := func(path string) string {
						r := rs.as(w, "GET", strings.ReplaceAll(target, "P", path), "")
						return r.StatusLine + "\n" + r.Header.Get("Content-Type") + "\n" + strings.Join(r.Header.Values("Www-Authenticate"), ", ") + "\n" + r.Body
					}
					same("HTTP GET "+target, answer(p.hidden), answer(p.missing))
				}
				for _, s := range streams {
					openAt := func(path string) *stream {
						return rs.openStream("/channel"+strings.ReplaceAll(s.target, "P", path), append(rs.headers(w), s.headers...)...)
					}
					h, n := openAt(p.hidden), openAt(p.missing)
					what := "GET kept open " + s.target + " " + strings.Join(s.headers, ", ")
					same(what, streamHead(h), streamHead(n))
					if h.Resp.StatusLine == "HTTP/1.1 200 OK" {
						opened = append(opened, open{what: what, hidden: h, missing: n, p: struct{ hidden, missing string }{p.hidden, p.missing}, w: w})
					}
				}
			}
		}
		if len(opened) == 0 {
			t.Fatal("no stream opened")
		}
		// The owner changes every hidden resource and NOTIFYs them: the
		// subscriptions and streams of the others get nothing of it.
		a := rs.dialAs(g, "$ann", ann)
		for i, p := range []string{top + "/secret", top + "/secret/c", top + "/claim/x", closed + "/secret"} {
			wantCall(t, a, msg("PUT", p, 10+i, `"entity":{"k":9},"persistent":true`), okReply(10+i, ""))
			// Subscribed, cat and anon are not told: nobody received it.
			wantCall(t, a, msg("NOTIFY", p, 20+i, `"data":1`), failReply(20+i, "no subscriber"))
		}
		for _, c := range wss {
			c.quiet()
		}
		// End the streams: cat's by a new password (its sessions end),
		// the anonymous ones with the server.
		if _, errs, code := runReso(t, t.TempDir(), nil, "new-pw\n", "user", "passwd", cat.email, "-db", rs.DB); code != 0 {
			t.Fatalf("reso user passwd: exit %d: %s", code, errs)
		}
		for _, o := range opened {
			if o.w.email == "" {
				continue
			}
			h, hEnded := o.hidden.restEnded()
			n, nEnded := o.missing.restEnded()
			if !hEnded || !nEnded {
				t.Errorf("%s, %s: the streams did not end with cat's sessions", o.what, o.w.kind)
			}
			if strings.ReplaceAll(h, o.p.hidden, "P") != strings.ReplaceAll(n, o.p.missing, "P") || strings.Contains(h, `"k":9`) {
				t.Errorf("%s, %s:\nhidden  %q\nmissing %q", o.what, o.w.kind, h, n)
			}
		}
		rs.stop()
		for _, o := range opened {
			if o.w.email != "" {
				continue
			}
			h, n := o.hidden.rest(), o.missing.rest()
			if strings.ReplaceAll(h, o.p.hidden, "P") != strings.ReplaceAll(n, o.p.missing, "P") || strings.Contains(h, `"k":9`) {
				t.Errorf("%s, %s:\nhidden  %q\nmissing %q", o.what, o.w.kind, h, n)
			}
		}
	})
}

// TestChannelClaimParent: no one gains rights over ann's closed resource
// by creating, claiming or re-creating an ancestor of it
// (docs/channel.md#creators-and-owners), on every door: a PUT (persistent,
// leased, transient) of the node that exists only for it, a POST into it,
// a DELETE and re-creation of its parent; the claimant reads it as missing
// and may not take it over with RULES.
func TestChannelClaimParent(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		rs := sharedRules(t, m)
		g := clients(t, rs.chanServer)
		c := rs.dialAs(g, "$cat", cat)
		var id counter
		// closedChild gives ann a closed child x below parent.
		closedChild := func(parent string) {
			rs.must(ann, "PUT", parent+"/x", `{"k":1}`, "200 OK")
			rs.setRules(ann, parent+"/x", `{"rules":"self:cruds"}`)
		}
		// attack is what cat tries once it has made parent its own, if it
		// could: every door.
		attack := func(what, parent string) {
			t.Helper()
			x := parent + "/x"
			wantHTTP(t, rs.as(cat, "GET", x, ""), "404 Not Found", "-")
			wantDenied(t, rs.as(cat, "PUT", x+"?rules", `{"owner":"`+cat.email+`"}`), cat)
			wantDenied(t, rs.as(cat, "GET", parent+"?rules", ""), cat)
			wantDenied(t, rs.as(cat, "PUT", x, `{"k":2}`), cat)
			n := id.next()
			wantCall(t, c, msg("GET", x, n, ""), failReply(n, "not found"))
			n = id.next()
			wantCall(t, c, msg("RULES", x, n, `"owner":"`+cat.email+`"`), failReply(n, "forbidden"))
			n = id.next()
			wantCall(t, c, msg("RULES", parent, n, `"rules":"self:cruds auth:cruds"`), failReply(n, "forbidden"))
			s := rs.openStream("/channel"+x+"?watch", rs.headers(cat)...)
			if s.Resp.StatusLine != "HTTP/1.1 200 OK" {
				t.Errorf("%s: GET kept open: %q", what, s.Resp.StatusLine)
			} else if l := s.line(); l != `{"resource":`+jsonString(x)+`,"type":null,"entity":null}` {
				t.Errorf("%s: GET kept open: %s", what, l)
			}
			s.conn.Close()
			wantHTTP(t, rs.as(ann, "GET", x, ""), "200 OK", `{"k":1}`)
			if r := parseRules(t, rs.must(ann, "GET", x+"?rules", "", "200 OK").Body); r.Owner == nil || *r.Owner != ann.email {
				t.Errorf("%s: the owner of x is %v", what, r.Owner)
			}
		}
		owner := func(p string) string {
			r := parseRules(t, rs.must(admin, "GET", p+"?rules", "", "200 OK").Body)
			if r.Owner == nil {
				return "null"
			}
			return *r.Owner
		}
		top := "/" + uniq("claim-")

		p := top + "/http"
		closedChild(p)
		rs.must(cat, "PUT", p, `{"mine":1}`, "200 OK")
		attack("PUT over HTTP", p)

		p = top + "/lease"
		closedChild(p)
		rs.must(cat, "PUT", p+"?expires=600", `{"mine":1}`, "200 OK")
		attack("a leased PUT", p)

		p = top + "/ws"
		closedChild(p)
		n := id.next()
		wantCall(t, c, msg("PUT", p, n, `"entity":{"mine":1},"persistent":true`), okReply(n, ""))
		attack("PUT over the WebSocket", p)

		p = top + "/transient"
		closedChild(p)
		tc := rs.dialAs(g, "$cat2", cat)
		n = id.next()
		wantCall(t, tc, msg("PUT", p, n, `"entity":{"mine":1}`), okReply(n, ""))
		attack("a transient PUT", p)
		tc.closeNormal()
		attack("after the transient PUT", p)

		p = top + "/post"
		closedChild(p)
		n = id.next()
		wantCall(t, c, msg("POST", top, n, `"id":"post"`), failReply(n, "exists"))
		wantHTTP(t, rs.as(cat, "POST", p, `{"mine":1}`), "201 Created", "-")
		attack("a POST into it", p)

		p = top + "/recreated"
		rs.must(ann, "PUT", p, `{"ann":1}`, "200 OK")
		closedChild(p)
		rs.must(cat, "DELETE", p, "", "200 OK") // ann left it open to all
		rs.must(cat, "PUT", p, `{"mine":1}`, "200 OK")
		attack("DELETE and re-creation", p)

		for p, want := range map[string]string{top + "/http": "null", top + "/ws": "null", top + "/transient": "null", top + "/lease": "null", top + "/post": "null", top + "/recreated": ann.email} {
			if got := owner(p); got != want {
				t.Errorf("the owner of %s: %s, want %s", p, got, want)
			}
		}
	})
}

// TestChannelPathForms: every door reads a path with the tree's one rule
// (docs/channel.md#the-tree): an empty segment or a trailing slash is an
// invalid resource over the WebSocket and 400 Invalid Resource over HTTP
// and on a GET kept open; /channel/ is the root.
func TestChannelPathForms(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		g := clients(t, cs)
		c := g.dial("$c")
		top := "/" + uniq("forms-")
		wantHTTP(t, cs.httpJSON("PUT", "/channel"+top+"/b", `{"v":1}`), "200 OK", "{}")
		var id counter
		for _, form := range []string{"/" + top + "/b", top + "/b/", top + "//b", top + "/b//", "//", top + "/./b", top + "/b/.."} {
			for _, method := range []string{"GET", "PUT", "DELETE", "SUBSCRIBE"} {
				n := id.next()
				wantCall(t, c, msg(method, form, n, ""), failReply(n, "invalid resource"))
			}
			for _, method := range []string{"GET", "PUT", "POST", "DELETE"} {
				body := ""
				if method == "PUT" || method == "POST" {
					body = "{}"
				}
				wantHTTP(t, cs.httpJSON(method, "/channel"+form, body), "400 Invalid Resource", "400 Invalid Resource\n")
			}
			for _, h := range [][]string{nil, {"Accept: text/event-stream"}} {
				target := "/channel" + form
				if h == nil {
					target += "?watch"
				}
				s := cs.openStream(target, h...)
				if s.Resp.StatusLine != "HTTP/1.1 400 Invalid Resource" {
					t.Errorf("GET kept open %s %v: %q", target, h, s.Resp.StatusLine)
				}
			}
		}
		wantHTTP(t, cs.httpJSON("GET", "/channel"+top+"/b", ""), "200 OK", `{"v":1}`)
		if r := cs.httpJSON("GET", "/channel/?deep=1", ""); r.StatusLine != "HTTP/1.1 200 OK" || !strings.Contains(r.Body, jsonString(top[1:])) {
			t.Errorf("the root: %q %s", r.StatusLine, r.Body)
		}
	})
}

// TestChannelPrivateNested: fields whose names start with "_" are private
// at any depth (docs/channel.md#the-tree): GET, [attr], listings with
// deep=2, notifications and the GET kept open leave them out.
func TestChannelPrivateNested(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		g := clients(t, cs)
		c := g.dial("$c")
		top := "/" + uniq("priv-")
		p := top + "/e"
		var id counter
		n := id.next()
		wantCall(t, c, msg("SUBSCRIBE", top, n, ""), okReply(n, `"epoch":"E"`))
		s := cs.openStream("/channel"+p, "Accept: text/event-stream")
		if e := s.event(); e.Data != `{"resource":`+jsonString(p)+`,"type":null,"entity":null}` {
			t.Fatalf("the stream's state: %s", e)
		}
		const full = `{"a":{"_n":1,"m":2},"l":[{"_m":1,"k":[{"_z":0,"y":"_"}]},3],"_t":{"x":1}}`
		const pub = `{"a":{"m":2},"l":[{"k":[{"y":"_"}]},3]}`
		wantHTTP(t, cs.httpJSON("PUT", "/channel"+p, full), "200 OK", "{}")
		wantHTTP(t, cs.httpJSON("GET", "/channel"+p, ""), "200 OK", pub)
		wantHTTP(t, cs.httpJSON("GET", "/channel"+p+"[a]", ""), "200 OK", `{"m":2}`)
		wantHTTP(t, cs.httpJSON("GET", "/channel"+p+"[l]", ""), "200 OK", `[{"k":[{"y":"_"}]},3]`)
		wantHTTP(t, cs.httpJSON("GET", "/channel"+top+"?deep=2", ""), "200 OK", `[{"rid":"e","type":"application/json","entity":`+pub+`}]`)
		c.expect(`{"notify":"UPDATE","resource":` + jsonString(top) + `,"update":"e","type":"application/json","entity":` + pub + `,"seq":N}`)
		n = id.next()
		wantCall(t, c, msg("GET", p, n, ""), okReply(n, `"resource":`+jsonString(p)+`,"type":"application/json","entity":`+pub))
		if e := s.event(); field(e.Data, "entity") != pub || field(e.Data, "notify") != `"PUT"` {
			t.Errorf("the stream's change: %s", e)
		}
	})
}

// TestChannelUserRemoved: reso user remove and reso user passwd, run while
// the server runs, end that user's sessions at once: its cookie is refused,
// its open WebSocket connections close with 1008 "session ended" and its
// GETs kept open end; other users keep theirs.
func TestChannelUserRemoved(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		rs := startRules(t, m)
		g := clients(t, rs.chanServer)
		login := func(w who) string {
			t.Helper()
			r := rs.get(t, "/private/x", authBasic(w.email, w.password))
			tok, uid := cookieNamed(r, "token"), cookieNamed(r, "user_id")
			if r.StatusLine != "HTTP/1.1 200 OK" || tok == nil || uid == nil {
				t.Fatalf("login of %s: %q, Set-Cookie %q", w.email, r.StatusLine, r.Header.Values("Set-Cookie"))
			}
			return "Cookie: user_id=" + uid.Value + "; token=" + tok.Value
		}
		top := "/" + uniq("gone-")
		for _, step := range []struct {
			w    who
			args []string
			pw   string
		}{
			{ann, []string{"user", "remove", ann.email}, ""},
			{bob, []string{"user", "passwd", bob.email}, "new-pw\n"},
		} {
			cookie := login(step.w)
			keep := login(cat)
			// Both connect with their cookies: a Basic login would issue
			// cat a new token, ending the session of keep.
			withCookie := func(cookie string) wsOptions {
				header := http.Header{}
				header.Set("Cookie", strings.TrimPrefix(cookie, "Cookie: "))
				return wsOptions{header: header}
			}
			ws := g.dial("$"+step.w.kind, withCookie(cookie))
			var id counter
			n := id.next()
			wantCall(t, ws, msg("PUT", top+"/"+step.w.kind, n, `"entity":{}`), okReply(n, ""))
			other := g.dial("$cat-"+step.w.kind, withCookie(keep))
			s := rs.openStream("/channel"+top+"?watch", cookie)
			if s.Resp.StatusLine != "HTTP/1.1 200 OK" {
				t.Fatalf("GET kept open: %q", s.Resp.StatusLine)
			}
			s.line()
			if _, errs, code := runReso(t, t.TempDir(), nil, step.pw, append(step.args, "-db", rs.DB)...); code != 0 {
				t.Fatalf("reso %v: exit %d: %s", step.args, code, errs)
			}
			if code, reason := ws.closed(); code != closePolicy || reason != "session ended" {
				t.Errorf("%v: the WebSocket closed with %d %q, want %d %q", step.args, code, reason, closePolicy, "session ended")
			}
			if rest, ended := s.restEnded(); !ended {
				t.Errorf("%v: the GET kept open did not end (read %q)", step.args, rest)
			}
			// Its transient resource went with the WebSocket.
			wantHTTP(t, rs.as(admin, "GET", top+"/"+step.w.kind, ""), "404 Not Found", "-")
			wantHTTP(t, rs.get(t, "/private/x", cookie), "401 Unauthorized", "-")
			wantHTTP(t, rs.get(t, "/private/x", keep), "200 OK", "-")
			other.quiet() // still open
		}
		wantHTTP(t, rs.get(t, "/private/x", authBasic(bob.email, "new-pw")), "200 OK", "-")
		wantHTTP(t, rs.get(t, "/private/x", authBasic(ann.email, ann.password)), "401 Not Found", "-")
	})
}
