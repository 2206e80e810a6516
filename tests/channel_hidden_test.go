package tests

import (
	"bufio"
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
	return strings.ReplaceAll(b.String(), "\n\n\n", "\n\n")
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
			h, n := o.hidden.rest(), o.missing.rest()
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
