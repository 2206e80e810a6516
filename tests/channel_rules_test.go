package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Black-box tests of the channel's permissions (docs/channel.md#permissions):
// the helpers of the tests of channel_rules*_test.go, and the tests beside
// the matrix of channel_rules_matrix_test.go: narrowing inheritance,
// ownership and RULES, rule changes applied to open subscriptions,
// listings, replay, -channel-rules and persistence.
//
// Every test registers three users with reso user add before the server
// starts: ann (the owner of what the test creates: "self"), bob (put in
// the group: "group") and cat ("auth"); "anon" sends no credentials. The
// administrator (cookies user_id=0 and the token of -secret-file) sets up
// and checks what the callers cannot see.

// flagChannelRules gives the rules of the top-level paths from a file.
const flagChannelRules = "-channel-rules"

// who is a caller of one kind at the resources a test creates as ann.
type who struct {
	kind            string // self, group, auth or anon
	email, password string // "" for anon
}

var (
	ann  = who{"self", "ann@example.org", "ann-pw"}
	bob  = who{"group", "bob@example.org", "bob:pw"}
	cat  = who{"auth", "cat@example.org", "cat-pw"}
	anon = who{kind: "anon"}
	// callers are the four kinds of caller, in the order of the rule text.
	callers = []who{ann, bob, cat, anon}
)

// rulesServer is a channel server with the three users registered and the
// administrator's cookie at hand.
type rulesServer struct {
	*chanServer
	adminCookie string // "user_id=0; token=..."
}

// startRules registers ann, bob and cat in a fresh -db file, then starts
// reso in mode m on it with a -secret-file of its own and the given flags.
func startRules(t *testing.T, m mode, args ...string) *rulesServer {
	t.Helper()
	rs := setUpRules(t, m, args...)
	rs.t = t
	if rs.fleet == nil {
		rs.launch()
	}
	return rs
}

// sharedRules is startRules with no flags, on a server that the tests
// which only use resources of their own share (see sharedChannel).
func sharedRules(t *testing.T, m mode) *rulesServer {
	t.Helper()
	return sharedServer(t, "rules", m, func(l *lasting) *rulesServer {
		rs := setUpRules(l, m)
		if rs.fleet == nil {
			rs.server = launchShared(l, rs.m, rs.args...)
		}
		return rs
	})
}

// setUpRules registers ann, bob and cat in a fresh -db file (or on a new
// fleet, which it starts) and reads the administrator's token: a
// rulesServer whose server, outside the fleet mode, is still to be
// launched, and whose t is still to be set.
func setUpRules(t testing.TB, m mode, args ...string) *rulesServer {
	t.Helper()
	if m.name == fleetMode.name {
		return startFleetRules(t, args...)
	}
	dir := t.TempDir()
	db, secret := filepath.Join(dir, "reso.db"), filepath.Join(dir, "secret")
	for _, u := range []who{ann, bob, cat} {
		if _, errs, code := runReso(t, dir, nil, u.password+"\n", "user", "add", u.email, "-db", db); code != 0 {
			t.Fatalf("reso user add %s: exit %d: %s", u.email, code, errs)
		}
	}
	cs := &chanServer{m: m.isolating(channelIsolated), args: append([]string{"-db", db, "-secret-file", secret}, args...), DB: db}
	return &rulesServer{chanServer: cs, adminCookie: "user_id=0; token=" + adminToken(t, secret)}
}

// startFleetRules is setUpRules on a fleet: the users are registered and
// the administrator's token read with -nats.
func startFleetRules(t testing.TB, args ...string) *rulesServer {
	t.Helper()
	nc, name := sharedNATS(t), uniq("f-")
	where := []string{"-nats", nc.URLs(), "-fleet", name}
	for _, u := range []who{ann, bob, cat} {
		if _, errs, code := runReso(t, t.TempDir(), nil, u.password+"\n", append([]string{"user", "add", u.email}, where...)...); code != 0 {
			t.Fatalf("reso user add %s -nats: exit %d: %s", u.email, code, errs)
		}
	}
	out, err := execOutput(binary, append([]string{"admin-token"}, where...)...)
	if err != nil {
		t.Fatalf("reso admin-token -nats: %v", err)
	}
	f := startFleetNamed(t, nc, name, fleetNodes, args...)
	cs := &chanServer{server: f.front(), m: fleetMode, args: args, fleet: f}
	return &rulesServer{chanServer: cs, adminCookie: "user_id=0; token=" + strings.TrimSpace(out)}
}

// admin is the administrator as a caller (it is of no kind: it may do
// everything).
var admin = who{kind: "admin", email: "admin"}

// headers returns the credentials of w as request header lines.
func (rs *rulesServer) headers(w who) []string {
	switch {
	case w.kind == "admin":
		return []string{"Cookie: " + rs.adminCookie}
	case w.email == "":
		return nil
	}
	return []string{authBasic(w.email, w.password)}
}

// as sends method /channel<path> with a JSON body as w.
func (rs *rulesServer) as(w who, method, path, body string, headers ...string) response {
	rs.t.Helper()
	return rs.httpJSON(method, "/channel"+path, body, append(rs.headers(w), headers...)...)
}

// must sends method /channel<path> as w and fails the test unless the
// status line is status.
func (rs *rulesServer) must(w who, method, path, body, status string) response {
	rs.t.Helper()
	r := rs.as(w, method, path, body)
	if r.StatusLine != "HTTP/1.1 "+status {
		rs.t.Fatalf("%s %s %s as %s: %q, want %q (body %q)", method, path, body, w.kind, r.StatusLine, status, r.Body)
	}
	return r
}

// setRules sends PUT /channel<path>?rules with body as w and fails the
// test unless it answers 200 OK; it returns the answer's fields.
func (rs *rulesServer) setRules(w who, path, body string) rulesReply {
	rs.t.Helper()
	r := rs.as(w, "PUT", path+"?rules", body)
	if r.StatusLine != "HTTP/1.1 200 OK" {
		rs.t.Fatalf("PUT %s?rules %s as %s: %q (body %q)", path, body, w.kind, r.StatusLine, r.Body)
	}
	return parseRules(rs.t, r.Body)
}

// dialAs connects a WebSocket client labelled label with the credentials
// of w in the handshake.
func (rs *rulesServer) dialAs(g *wsGroup, label string, w who, opts ...wsOptions) *wsClient {
	rs.t.Helper()
	var o wsOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	o.header = http.Header{}
	for _, h := range rs.headers(w) {
		name, value, _ := strings.Cut(h, ": ")
		o.header.Set(name, value)
	}
	return g.dial(label, o)
}

// rulesReply is the answer of RULES (over HTTP the body, over the WebSocket
// the reply without msg_id and code). A field that is absent stays nil.
type rulesReply struct {
	Resource  *string          `json:"resource"`
	Rules     *string          `json:"rules"`
	Group     *json.RawMessage `json:"group"`
	Owner     *string          `json:"owner"`
	Effective *string          `json:"effective"`
}

// parseRules reads a RULES answer and fails the test when it is no JSON
// object.
func parseRules(t testing.TB, body string) rulesReply {
	t.Helper()
	var r rulesReply
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("RULES answer %q: %v", body, err)
	}
	return r
}

// check compares the fields of a RULES answer: rules "" also accepts an
// absent rule written as null, group "null" accepts an absent group
// written as null or [], group "-" is not checked (whether a resource
// without a group of its own answers null or the group in force is not
// said), and the others must be there as given.
func (r rulesReply) check(t testing.TB, what, resource, rules, group, owner, effective string) {
	t.Helper()
	str := func(p *string) string {
		if p == nil {
			return "<absent>"
		}
		return strconv.Quote(*p)
	}
	if r.Resource == nil || *r.Resource != resource {
		t.Errorf("%s: resource %s, want %q", what, str(r.Resource), resource)
	}
	if r.Rules == nil && rules != "" || r.Rules != nil && *r.Rules != rules {
		t.Errorf("%s: rules %s, want %q", what, str(r.Rules), rules)
	}
	g := "<absent>"
	if r.Group != nil {
		g = compactJSON(string(*r.Group))
	}
	if group != "-" && g != group && !(group == "null" && (g == "[]" || g == "<absent>")) {
		t.Errorf("%s: group %s, want %s", what, g, group)
	}
	if r.Owner == nil || *r.Owner != owner {
		t.Errorf("%s: owner %s, want %q", what, str(r.Owner), owner)
	}
	if r.Effective == nil || *r.Effective != effective {
		t.Errorf("%s: effective %s, want %q", what, str(r.Effective), effective)
	}
}

// compactJSON returns s without insignificant spaces (s when it is not
// JSON).
func compactJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// wantDenied checks an HTTP denial: 401 Unauthorized with the challenge for
// an anonymous caller, 403 Forbidden for the others.
func wantDenied(t testing.TB, r response, w who) {
	t.Helper()
	if w.email != "" {
		if r.StatusLine != "HTTP/1.1 403 Forbidden" {
			t.Errorf("status %q, want %q (body %q)", r.StatusLine, "HTTP/1.1 403 Forbidden", r.Body)
		}
		return
	}
	if r.StatusLine != "HTTP/1.1 401 Unauthorized" {
		t.Errorf("status %q, want %q (body %q)", r.StatusLine, "HTTP/1.1 401 Unauthorized", r.Body)
	}
	if c := r.Header.Values("Www-Authenticate"); len(c) == 0 || !strings.HasPrefix(c[0], "Basic realm=") {
		t.Errorf("401 with WWW-Authenticate %q, want the challenge", c)
	}
}

// msg returns a WebSocket message: method, resource, msg_id and the other
// fields given as JSON text ("" for none), e.g. `"entity":{"a":1}`.
func msg(method, resource string, id int, more string) string {
	s := `{"method":"` + method + `","resource":` + jsonString(resource) + `,"msg_id":` + strconv.Itoa(id)
	if more != "" {
		s += "," + more
	}
	return s + "}"
}

// okReply and failReply are the replies to message id.
func okReply(id int, more string) string {
	if more != "" {
		more = "," + more
	}
	return `{"msg_id":` + strconv.Itoa(id) + `,"code":"success"` + more + "}"
}

func failReply(id int, reason string) string {
	return `{"msg_id":` + strconv.Itoa(id) + `,"code":"failed","reason":"` + reason + `"}`
}

// wantCall sends a message and checks its reply byte for byte, the
// epoch of a SUBSCRIBE reply written E (see withoutEpoch).
func wantCall(t testing.TB, c *wsClient, message, want string) {
	t.Helper()
	if got := anyEpoch(c.call(message)); got != want {
		t.Errorf("%s: %s\n got %s\nwant %s", c.label, message, got, want)
	}
}

// rulesCall sends RULES over the WebSocket and returns the reply's fields
// after checking that it succeeded.
func rulesCall(t testing.TB, c *wsClient, resource string, id int, more string) rulesReply {
	t.Helper()
	got := c.call(msg("RULES", resource, id, more))
	if field(got, "code") != `"success"` || field(got, "msg_id") != strconv.Itoa(id) {
		t.Fatalf("%s: RULES %s %s: %s", c.label, resource, more, got)
	}
	return parseRules(t, got)
}

// runFails runs reso with args and a hang guard, and returns its exit
// status and output; a reso that starts to listen fails the test.
func runFails(t *testing.T, m mode, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	all := append(append([]string{"-addr", "127.0.0.1:0", "-db", ":memory:"}, m.args...), args...)
	cmd := exec.CommandContext(ctx, binary, all...)
	cmd.SysProcAttr = childAttr()
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("reso %v did not exit:\n%s", args, out)
	}
	raceFree(t, string(out))
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

// counter hands out message ids.
type counter int

func (c *counter) next() int { *c++; return int(*c) }

// allRights is the rule in force at a top-level path without
// -channel-rules, and so everywhere nobody narrowed it.
const allRights = "self:cruds group:cruds auth:cruds anon:cruds"

// TestChannelRulesText: RULES over the WebSocket and over HTTP reads and
// changes a resource's rules and group; reso writes a rule in the order
// self group auth anon with its letters in the order cruds, keeping the
// kinds it names; a field not named stays; a rule that does not parse is
// refused (invalid rules, 400 Invalid Rules) and changes nothing; "" removes
// the rule and null the group; a kind the rule does not name may do
// nothing; RULES of a missing resource below one's own is not found.
func TestChannelRulesText(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		rs := sharedRules(t, m)
		g := clients(t, rs.chanServer)
		a := rs.dialAs(g, "$A", ann)
		var id counter
		p := "/" + uniq("text-") + "/r"
		rs.must(ann, "PUT", p, `{"v":1}`, "200 OK")

		rulesCall(t, a, p, id.next(), "").check(t, "RULES that reads", p, "", "null", ann.email, allRights)
		const norm = "self:cruds group:rs auth:r anon:-"
		rulesCall(t, a, p, id.next(), `"rules":"anon:- auth:r group:sr self:sdurc","group":["`+bob.email+`"]`).
			check(t, "a rule in another order", p, norm, `["`+bob.email+`"]`, ann.email, norm)
		rulesCall(t, a, p, id.next(), `"group":["`+cat.email+`","`+bob.email+`"]`).
			check(t, "a group alone", p, norm, `["`+cat.email+`","`+bob.email+`"]`, ann.email, norm)

		for _, bad := range []string{"self:x", "self:rr", "self:r self:c", "root:r", "self", "self:r;group:r", "self=r"} {
			n := id.next()
			wantCall(t, a, msg("RULES", p, n, `"rules":`+jsonString(bad)), failReply(n, "invalid rules"))
			wantHTTP(t, rs.as(ann, "PUT", p+"?rules", `{"rules":`+jsonString(bad)+`}`), "400 Invalid Rules", "-")
		}
		r := rs.as(ann, "GET", p+"?rules", "")
		wantHTTP(t, r, "200 OK", "-")
		parseRules(t, r.Body).check(t, "GET ?rules after the bad rules", p, norm, `["`+cat.email+`","`+bob.email+`"]`, ann.email, norm)
		if field(r.Body, "msg_id") != "" || field(r.Body, "code") != "" {
			t.Errorf("GET ?rules: %s, want the reply's fields but msg_id and code", r.Body)
		}

		rulesCall(t, a, p, id.next(), `"rules":""`).check(t, `rules ""`, p, "", `["`+cat.email+`","`+bob.email+`"]`, ann.email, allRights)
		rulesCall(t, a, p, id.next(), `"group":null`).check(t, "group null", p, "", "null", ann.email, allRights)

		// Kinds not named may do nothing; the owner still holds the rules.
		rulesCall(t, a, p, id.next(), `"rules":"group:rs"`).check(t, "group:rs", p, "group:rs", "null", ann.email, "self:- group:rs auth:- anon:-")
		n := id.next()
		wantCall(t, a, msg("GET", p, n, ""), failReply(n, "not found"))
		n = id.next()
		wantCall(t, a, msg("PUT", p, n, `"entity":{},"persistent":true`), failReply(n, "forbidden"))
		rulesCall(t, a, p, id.next(), "").check(t, "the owner reads after group:rs", p, "group:rs", "null", ann.email, "self:- group:rs auth:- anon:-")

		n = id.next()
		wantCall(t, a, msg("RULES", p+"/missing", n, ""), failReply(n, "not found"))
		wantHTTP(t, rs.as(ann, "GET", p+"/missing?rules", ""), "404 Not Found", "-")
	})
}

// TestChannelRulesOwnership: creating below a top-level path makes the
// creator the owner of the subtree, who alone (with the administrator)
// reads and changes its rules; anyone else is forbidden whether or not the
// resource exists; top-level rules are the administrator's alone; "owner"
// passes the ownership on, after which the old owner may no longer hold the
// rules unless it owns something higher up or created the resource; the
// administrator may do everything.
func TestChannelRulesOwnership(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		rs := sharedRules(t, m)
		g := clients(t, rs.chanServer)
		a, b, c, n := rs.dialAs(g, "$A", ann), rs.dialAs(g, "$B", bob), rs.dialAs(g, "$C", cat), rs.dialAs(g, "$N", anon)
		ad := rs.dialAs(g, "$D", admin)
		var id counter
		top := "/" + uniq("own-")
		o := top + "/o"
		rs.must(ann, "PUT", o, `{"v":1}`, "200 OK")
		rs.must(ann, "PUT", o+"/x", `{"x":1}`, "200 OK")
		rulesCall(t, a, o, id.next(), "").check(t, "the creator reads", o, "", "null", ann.email, allRights)

		// Anyone else: forbidden, whether or not the resource exists.
		nowhere := "/" + uniq("none-") + "/y"
		for _, cl := range []*wsClient{b, c, n} {
			for _, p := range []string{o, o + "/x", o + "/missing", nowhere, top} {
				k := id.next()
				wantCall(t, cl, msg("RULES", p, k, ""), failReply(k, "forbidden"))
				k = id.next()
				wantCall(t, cl, msg("RULES", p, k, `"rules":"self:cruds"`), failReply(k, "forbidden"))
			}
		}
		for _, w := range []who{bob, cat, anon} {
			wantDenied(t, rs.as(w, "GET", o+"?rules", ""), w)
			wantDenied(t, rs.as(w, "PUT", o+"?rules", `{"rules":"self:cruds"}`), w)
			wantDenied(t, rs.as(w, "GET", nowhere+"?rules", ""), w)
		}
		rs.must(ann, "GET", o+"?rules", "", "200 OK")

		// Top-level paths: the administrator's alone, even for their creator.
		k := id.next()
		wantCall(t, a, msg("RULES", top, k, ""), failReply(k, "forbidden"))
		solo := "/" + uniq("solo-")
		rs.must(ann, "PUT", solo, `{}`, "200 OK")
		k = id.next()
		wantCall(t, a, msg("RULES", solo, k, `"rules":"self:r"`), failReply(k, "forbidden"))
		if r := rulesCall(t, ad, solo, id.next(), `"rules":"self:cruds group:cruds auth:r anon:r"`); r.Effective == nil || *r.Effective != "self:cruds group:cruds auth:r anon:r" {
			t.Errorf("the administrator's rule on a top-level path: effective %v", r.Effective)
		}
		wantDenied(t, rs.as(cat, "PUT", solo+"/z", `{}`), cat)
		rs.must(cat, "GET", solo, "", "200 OK")

		// Transfer: bob holds the rules of o, ann no longer does.
		rulesCall(t, a, o, id.next(), `"owner":"`+bob.email+`"`).check(t, "the transfer", o, "", "null", bob.email, allRights)
		rulesCall(t, b, o, id.next(), `"rules":"self:cruds group:r"`).
			check(t, "the new owner", o, "self:cruds group:r", "null", bob.email, "self:cruds group:r auth:- anon:-")
		k = id.next()
		wantCall(t, a, msg("RULES", o, k, ""), failReply(k, "forbidden"))
		k = id.next()
		wantCall(t, a, msg("RULES", o, k, `"owner":"`+ann.email+`"`), failReply(k, "forbidden"))
		wantDenied(t, rs.as(ann, "PUT", o+"?rules", `{"owner":"`+ann.email+`"}`), ann)
		// ann is now an authenticated caller at o, who may do nothing there.
		k = id.next()
		wantCall(t, a, msg("PUT", o, k, `"entity":{"v":2},"persistent":true`), failReply(k, "forbidden"))
		k = id.next()
		wantCall(t, b, msg("PUT", o, k, `"entity":{"v":3},"persistent":true`), okReply(k, ""))
		// ann created o/x herself: she is still self there.
		rulesCall(t, a, o+"/x", id.next(), "").check(t, "a child the old owner created", o+"/x", "", "-", ann.email, "self:cruds group:r auth:- anon:-")
		k = id.next()
		wantCall(t, a, msg("GET", o+"/x", k, ""), okReply(k, `"resource":`+jsonString(o+"/x")+`,"type":"application/json","entity":{"x":1}`))

		// The old owner stays self below a resource it still owns higher up.
		h := top + "/h"
		rs.must(ann, "PUT", h, `{}`, "200 OK")
		rs.must(ann, "PUT", h+"/k", `{"k":1}`, "200 OK")
		rulesCall(t, a, h+"/k", id.next(), `"owner":"`+cat.email+`"`).check(t, "a transfer below", h+"/k", "", "-", cat.email, allRights)
		rulesCall(t, a, h+"/k", id.next(), `"rules":"self:cruds"`).check(t, "the owner above", h+"/k", "self:cruds", "-", cat.email, "self:cruds group:- auth:- anon:-")
		rulesCall(t, c, h+"/k", id.next(), "").check(t, "the new owner below", h+"/k", "self:cruds", "-", cat.email, "self:cruds group:- auth:- anon:-")
		k = id.next()
		wantCall(t, c, msg("RULES", h, k, ""), failReply(k, "forbidden"))
		for _, cl := range []*wsClient{a, c} {
			k = id.next()
			wantCall(t, cl, msg("GET", h+"/k", k, ""), okReply(k, `"resource":`+jsonString(h+"/k")+`,"type":"application/json","entity":{"k":1}`))
		}
		k = id.next()
		wantCall(t, b, msg("GET", h+"/k", k, ""), failReply(k, "not found"))

		// The administrator: every rule, every operation.
		rulesCall(t, ad, o, id.next(), `"rules":"self:-"`).check(t, "the administrator", o, "self:-", "null", bob.email, "self:- group:- auth:- anon:-")
		k = id.next()
		wantCall(t, b, msg("PUT", o, k, `"entity":{"v":4},"persistent":true`), failReply(k, "forbidden"))
		k = id.next()
		wantCall(t, b, msg("GET", o, k, ""), failReply(k, "not found"))
		rulesCall(t, b, o, id.next(), "").check(t, "the owner, closed out", o, "self:-", "null", bob.email, "self:- group:- auth:- anon:-")
		rs.must(admin, "PUT", o+"/y", `{"y":1}`, "200 OK")
		rs.must(admin, "GET", o+"/y", "", "200 OK")
		rs.must(admin, "DELETE", o+"/y", "", "200 OK")
		k = id.next()
		wantCall(t, ad, msg("GET", o, k, ""), okReply(k, `"resource":`+jsonString(o)+`,"type":"application/json","entity":{"v":3}`))
		k = id.next()
		wantCall(t, ad, msg("SUBSCRIBE", o, k, ""), okReply(k, `"epoch":"E"`))
		rulesCall(t, ad, o, id.next(), `"owner":"`+ann.email+`","rules":""`).check(t, "the administrator gives it back", o, "", "null", ann.email, allRights)
		rulesCall(t, a, o, id.next(), "").check(t, "ann again", o, "", "null", ann.email, allRights)
	})
}

// TestChannelRulesInheritance: an operation is allowed only if every rule on
// the way down allows it; a child's rule never widens its parent's, a
// deeper rule takes rights away, and a closed subtree stays closed when the
// rule above is widened later.
func TestChannelRulesInheritance(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		rs := sharedRules(t, m)
		top := "/" + uniq("inh-")
		p := top + "/p"
		c, d := p+"/c", p+"/c/d"
		rs.must(ann, "PUT", p, `{"p":1}`, "200 OK")
		rs.must(ann, "PUT", c, `{"c":1}`, "200 OK")
		rs.must(ann, "PUT", d, `{"d":1}`, "200 OK")
		const parent = "self:cruds group:r auth:r anon:-"
		rs.setRules(ann, p, `{"rules":"`+parent+`","group":["`+bob.email+`"]}`).check(t, "the parent", p, parent, `["`+bob.email+`"]`, ann.email, parent)
		rs.setRules(ann, c, `{"rules":"`+allRights+`"}`).check(t, "a child that tries to widen", c, allRights, "-", ann.email, parent)
		for _, w := range []who{bob, cat} {
			wantHTTP(t, rs.as(w, "GET", d, ""), "200 OK", `{"d":1}`)
			wantDenied(t, rs.as(w, "PUT", d, `{"d":9}`), w)
			wantDenied(t, rs.as(w, "DELETE", d, ""), w)
			wantDenied(t, rs.as(w, "PUT", c+"/new", `{}`), w)
		}
		wantHTTP(t, rs.as(anon, "GET", d, ""), "404 Not Found", "-") // p is hidden from anon, and so is d
		wantDenied(t, rs.as(anon, "PUT", d, `{}`), anon)
		rs.must(ann, "PUT", d, `{"d":2}`, "200 OK")

		// A deeper rule takes rights away.
		const child = "self:cruds group:r auth:- anon:-"
		rs.setRules(ann, c, `{"rules":"self:cruds group:r"}`).check(t, "a narrower child", c, "self:cruds group:r", "-", ann.email, child)
		wantHTTP(t, rs.as(cat, "GET", d, ""), "404 Not Found", "-") // below c, hidden from cat
		wantHTTP(t, rs.as(cat, "GET", c, ""), "404 Not Found", "-") // only c's own rule denies it
		wantHTTP(t, rs.as(cat, "GET", p, ""), "200 OK", `{"p":1}`)
		wantHTTP(t, rs.as(bob, "GET", d, ""), "200 OK", `{"d":2}`)

		// Closed for good: widening the rule above does not reopen it.
		rs.setRules(ann, p, `{"rules":""}`).check(t, "the parent's rule removed", p, "", `["`+bob.email+`"]`, ann.email, allRights)
		wantHTTP(t, rs.as(cat, "PUT", p, `{"p":2}`), "200 OK", `{}`)
		wantHTTP(t, rs.as(cat, "GET", d, ""), "404 Not Found", "-")
		wantDenied(t, rs.as(cat, "PUT", d, `{}`), cat)
		wantHTTP(t, rs.as(anon, "GET", d, ""), "404 Not Found", "-")
		rs.setRules(ann, c, `{}`).check(t, "the child after", c, "self:cruds group:r", "-", ann.email, child)
		r := rs.as(ann, "GET", d+"?rules", "")
		wantHTTP(t, r, "200 OK", "-")
		parseRules(t, r.Body).check(t, "the grandchild", d, "", "-", ann.email, child)
	})
}

// expectAnyOrder reads len(want) frames of c and compares them, seqs
// replaced by N, with want in any order (the PUT of a resource and the
// UPDATE of its parent are notifications of two resources, whose relative
// order the contract leaves open).
func expectAnyOrder(t testing.TB, c *wsClient, want ...string) {
	t.Helper()
	var got []string
	for i := range want {
		f, err := c.read()
		if err != nil {
			t.Fatalf("%s: frame %d of %d: %v", c.label, i+1, len(want), err)
		}
		f, _ = withoutSeq(f)
		got = append(got, f)
	}
	w := make([]string, len(want))
	for i := range want {
		w[i] = c.g.fill(want[i])
	}
	slices.Sort(got)
	slices.Sort(w)
	if !slices.Equal(got, w) {
		t.Errorf("%s:\n got %q\nwant %q (in any order)", c.label, got, w)
	}
}

// TestChannelRulesLive: a change of rules or group applies at once to open
// subscriptions: a subscriber in the group receives the notifications of
// the resources it may read, NOTIFY data included; it receives none about
// a child whose own rule hides it, none at all once it leaves the group or
// once the rule stops it reading, and receives them again on the same
// subscription when it may read again. The administrator, subscribed to
// the same resources, shows that the notifications were sent.
func TestChannelRulesLive(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		rs := sharedRules(t, m)
		g := clients(t, rs.chanServer)
		a, b, d := rs.dialAs(g, "$A", ann), rs.dialAs(g, "$B", bob), rs.dialAs(g, "$D", admin)
		var id counter
		room := "/" + uniq("live-") + "/room"
		R, M, S := jsonString(room), jsonString(room+"/msg"), jsonString(room+"/secret")
		rs.must(ann, "PUT", room, `{"name":"r"}`, "200 OK")
		rs.setRules(ann, room, `{"rules":"self:cruds group:rs","group":["`+bob.email+`"]}`)
		for _, c := range []*wsClient{b, d} {
			for _, p := range []string{room, room + "/msg"} {
				k := id.next()
				wantCall(t, c, msg("SUBSCRIBE", p, k, ""), okReply(k, `"epoch":"E"`))
			}
		}
		put := func(path, entity string) {
			t.Helper()
			k := id.next()
			wantCall(t, a, msg("PUT", path, k, `"entity":`+entity+`,"persistent":true`), okReply(k, ""))
		}
		notify := func(data string, sent int) {
			t.Helper()
			k := id.next()
			wantCall(t, a, msg("NOTIFY", room, k, `"data":`+data), okReply(k, `"sent_count":`+strconv.Itoa(sent)))
		}
		msgNotes := func(v int) []string {
			e := `{"t":` + strconv.Itoa(v) + `}`
			return []string{
				`{"notify":"PUT","resource":` + M + `,"type":"application/json","entity":` + e + `,"from":$A,"seq":N}`,
				`{"notify":"UPDATE","resource":` + R + `,"update":"msg","type":"application/json","entity":` + e + `,"seq":N}`,
			}
		}
		notifyNote := func(data string) string {
			return `{"notify":"NOTIFY","resource":` + R + `,"data":` + data + `,"from":$A,"seq":N}`
		}

		// In the group: everything.
		put(room+"/msg", `{"t":1}`)
		expectAnyOrder(t, b, msgNotes(1)...)
		expectAnyOrder(t, d, msgNotes(1)...)
		notify(`{"typing":true}`, 2)
		b.expect(notifyNote(`{"typing":true}`))
		d.expect(notifyNote(`{"typing":true}`))

		// A child whose own rule hides it from bob: no UPDATE about it.
		put(room+"/secret", `{"s":1}`)
		secretNote := func(v int) string {
			return `{"notify":"UPDATE","resource":` + R + `,"update":"secret","type":"application/json","entity":{"s":` + strconv.Itoa(v) + `},"seq":N}`
		}
		b.expect(secretNote(1))
		d.expect(secretNote(1))
		rs.setRules(ann, room+"/secret", `{"rules":"self:cruds"}`)
		put(room+"/secret", `{"s":2}`)
		d.expect(secretNote(2))
		put(room+"/msg", `{"t":2}`)
		expectAnyOrder(t, d, msgNotes(2)...)
		expectAnyOrder(t, b, msgNotes(2)...) // not the secret's UPDATE before it
		b.quiet()
		_ = S

		// Out of the group: nothing, NOTIFY data included.
		rs.setRules(ann, room, `{"group":["`+cat.email+`"]}`)
		put(room+"/msg", `{"t":3}`)
		expectAnyOrder(t, d, msgNotes(3)...)
		notify(`{"typing":false}`, 1)
		d.expect(notifyNote(`{"typing":false}`))
		b.quiet()

		// Back in the group, on the same subscriptions.
		rs.setRules(ann, room, `{"group":["`+bob.email+`"]}`)
		put(room+"/msg", `{"t":4}`)
		expectAnyOrder(t, d, msgNotes(4)...)
		expectAnyOrder(t, b, msgNotes(4)...)

		// A narrower rule: the group may still subscribe, no longer read.
		rs.setRules(ann, room, `{"rules":"self:cruds group:s"}`)
		put(room+"/msg", `{"t":5}`)
		expectAnyOrder(t, d, msgNotes(5)...)
		notify(`{"typing":1}`, 1)
		d.expect(notifyNote(`{"typing":1}`))
		k := id.next()
		wantCall(t, b, msg("SUBSCRIBE", room+"/other", k, ""), okReply(k, `"epoch":"E"`))
		k = id.next()
		wantCall(t, b, msg("GET", room+"/msg", k, ""), failReply(k, "not found"))
		b.quiet()
		d.quiet()
	})
}

// TestChannelRulesListings: listings leave out the children the caller may
// not read, through both doors and every depth (deep=0 counts only the
// others), before limit applies; like never reveals a hidden child; the
// entity of a node without one of its own (its child ids) hides them too.
func TestChannelRulesListings(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		rs := sharedRules(t, m)
		g := clients(t, rs.chanServer)
		c := rs.dialAs(g, "$C", cat)
		top := "/" + uniq("list-")
		l := top + "/l"
		rs.must(ann, "PUT", l, `{"l":1}`, "200 OK")
		for _, k := range []string{"a", "b", "c"} {
			rs.must(ann, "PUT", l+"/"+k, `{"`+k+`":1}`, "200 OK")
		}
		rs.setRules(ann, l+"/b", `{"rules":"self:cruds"}`)
		node := top + "/node"
		rs.must(ann, "PUT", node+"/x", `{}`, "200 OK")
		rs.must(ann, "PUT", node+"/y", `{}`, "200 OK")
		rs.setRules(ann, node+"/y", `{"rules":"self:cruds"}`)

		item := func(k string) string {
			return `{"rid":"` + k + `","type":"application/json","entity":{"` + k + `":1}}`
		}
		for _, w := range []who{bob, cat, anon} {
			for _, q := range []struct{ query, body string }{
				{"?deep=0", `{"count":2}`},
				{"?deep=1", `["a","c"]`},
				{"", `{"l":1}`},
				{"?deep=2", `[` + item("a") + `,` + item("c") + `]`},
				{"?deep=1&limit=2", `["a","c"]`},
				{"?deep=1&order=desc", `["c","a"]`},
				{"?deep=1&like=b", `[]`},
				{"?deep=0&like=%25", `{"count":2}`},
			} {
				wantHTTP(t, rs.as(w, "GET", l+q.query, ""), "200 OK", q.body)
			}
			wantHTTP(t, rs.as(w, "GET", l+"/b", ""), "404 Not Found", "-")
			wantHTTP(t, rs.as(w, "GET", node, ""), "200 OK", `["x"]`)
		}
		wantHTTP(t, rs.as(ann, "GET", l+"?deep=0", ""), "200 OK", `{"count":3}`)
		wantHTTP(t, rs.as(ann, "GET", l+"?deep=1", ""), "200 OK", `["a","b","c"]`)
		wantHTTP(t, rs.as(ann, "GET", node, ""), "200 OK", `["x","y"]`)
		wantHTTP(t, rs.as(admin, "GET", l+"?deep=2", ""), "200 OK", `[`+item("a")+`,`+item("b")+`,`+item("c")+`]`)

		for _, q := range []struct{ query, entity string }{
			{"?deep=0", `{"count":2}`},
			{"?deep=1", `["a","c"]`},
			{"?deep=2", `[` + item("a") + `,` + item("c") + `]`},
		} {
			wantCall(t, c, msg("GET", l+q.query, 1, ""), okReply(1, `"resource":`+jsonString(l+q.query)+`,"type":"application/json","entity":`+q.entity))
		}
		wantCall(t, c, msg("GET", node, 2, ""), okReply(2, `"resource":`+jsonString(node)+`,"type":"application/json","entity":["x"]`))
	})
}

// TestChannelRulesReplay: SUBSCRIBE with since replays only the
// notifications about resources the caller may read, judged with the rules
// in force at the replay: not the UPDATEs of a child hidden all along, not
// those of a child closed after they were sent, and nothing at all once
// the caller may no longer read the resource. The administrator's replay
// shows that the history holds them all.
func TestChannelRulesReplay(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		rs := sharedRules(t, m)
		g := clients(t, rs.chanServer)
		a, d := rs.dialAs(g, "$A", ann), rs.dialAs(g, "$D", admin)
		var id counter
		r := "/" + uniq("replay-") + "/r"
		R := jsonString(r)
		rs.must(ann, "PUT", r, `{}`, "200 OK")
		rs.setRules(ann, r, `{"rules":"self:cruds group:rs","group":["`+bob.email+`"]}`)
		for _, k := range []string{"open", "secret", "later"} {
			rs.must(ann, "PUT", r+"/"+k, `{"v":0}`, "200 OK")
		}
		rs.setRules(ann, r+"/secret", `{"rules":"self:cruds"}`)
		update := func(child string, v int) string {
			return `{"notify":"UPDATE","resource":` + R + `,"update":"` + child + `","type":"application/json","entity":{"v":` + strconv.Itoa(v) + `},"seq":N}`
		}

		b := rs.dialAs(g, "$B", bob)
		k := id.next()
		wantCall(t, b, msg("SUBSCRIBE", r, k, ""), okReply(k, `"epoch":"E"`))
		k = id.next()
		wantCall(t, d, msg("SUBSCRIBE", r, k, ""), okReply(k, `"epoch":"E"`))
		rs.must(ann, "PUT", r+"/open", `{"v":1}`, "200 OK")
		seqs := b.expect(update("open", 1))
		d.expect(update("open", 1))
		if len(seqs) != 1 {
			t.Fatalf("no seq in bob's notification")
		}
		since := seqs[0]
		b.drop()

		// Missed by bob.
		rs.must(ann, "PUT", r+"/open", `{"v":2}`, "200 OK")
		rs.must(ann, "PUT", r+"/secret", `{"v":1}`, "200 OK")
		// bob's dropped connection may still count among the subscribers.
		if got := a.call(msg("NOTIFY", r, 99, `"data":{"n":1}`)); field(got, "code") != `"success"` {
			t.Errorf("NOTIFY: %s", got)
		}
		rs.must(ann, "PUT", r+"/later", `{"v":1}`, "200 OK")
		rs.must(ann, "PUT", r+"/open", `{"v":3}`, "200 OK")
		all := []string{update("open", 2), update("secret", 1), `{"notify":"NOTIFY","resource":` + R + `,"data":{"n":1},"from":$A,"seq":N}`, update("later", 1), update("open", 3)}
		d.expect(all...)
		// later is closed to bob after its change was sent.
		rs.setRules(ann, r+"/later", `{"rules":"self:cruds"}`)

		sinceText := `"since":` + strconv.FormatUint(since, 10)
		b2 := rs.dialAs(g, "$B2", bob)
		k = id.next()
		b2.send(msg("SUBSCRIBE", r, k, sinceText))
		b2.expect(update("open", 2), all[2], update("open", 3), okReply(k, `"recovered":true,"epoch":"E"`))
		b2.quiet()

		d2 := rs.dialAs(g, "$D2", admin)
		k = id.next()
		d2.send(msg("SUBSCRIBE", r, k, sinceText))
		d2.expect(append(all, okReply(k, `"recovered":true,"epoch":"E"`))...)

		// bob may subscribe but no longer read r: nothing is replayed.
		rs.setRules(ann, r, `{"rules":"self:cruds group:s"}`)
		b3 := rs.dialAs(g, "$B3", bob)
		k = id.next()
		b3.send(msg("SUBSCRIBE", r, k, sinceText))
		b3.expect(okReply(k, `"recovered":true,"epoch":"E"`))
		b3.quiet()
	})
}

// TestChannelRulesConfig: -channel-rules FILE gives the rules of the
// top-level paths, * those of every other one; comments and blank lines are
// skipped. A file with an error stops reso at start, naming the line.
func TestChannelRulesConfig(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		file := filepath.Join(t.TempDir(), "rules")
		if err := os.WriteFile(file, []byte("# locked: anonymous callers read, nobody else does anything\n\n/locked   anon:r\n*       self:cruds group:cruds auth:cruds anon:rs\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		rs := startRules(t, m, flagChannelRules, file)
		g := clients(t, rs.chanServer)
		var id counter
		rs.must(admin, "PUT", "/locked/x", `{"x":1}`, "200 OK")
		wantHTTP(t, rs.as(anon, "GET", "/locked/x", ""), "200 OK", `{"x":1}`)
		wantDenied(t, rs.as(anon, "PUT", "/locked/x", `{}`), anon)
		wantDenied(t, rs.as(anon, "PUT", "/locked/y", `{}`), anon)
		for _, w := range []who{ann, bob, cat} {
			wantDenied(t, rs.as(w, "GET", "/locked/x", ""), w)
			wantDenied(t, rs.as(w, "PUT", "/locked/x", `{}`), w)
			wantDenied(t, rs.as(w, "PUT", "/locked/"+w.kind, `{}`), w)
			wantDenied(t, rs.as(w, "DELETE", "/locked/x", ""), w)
		}
		n := rs.dialAs(g, "$N", anon)
		k := id.next()
		wantCall(t, n, msg("GET", "/locked/x", k, ""), okReply(k, `"resource":"/locked/x","type":"application/json","entity":{"x":1}`))
		for _, c := range []string{
			msg("PUT", "/locked/x", 0, `"entity":{}`),
			msg("SUBSCRIBE", "/locked/x", 0, ""),
			msg("NOTIFY", "/locked/x", 0, ""),
			msg("DELETE", "/locked/x", 0, ""),
		} {
			wantCall(t, n, c, failReply(0, "forbidden"))
		}
		ad := rs.dialAs(g, "$D", admin)
		if r := rulesCall(t, ad, "/locked", id.next(), ""); r.Effective == nil || *r.Effective != "self:- group:- auth:- anon:r" {
			t.Errorf("RULES /locked: effective %v, want %q", r.Effective, "self:- group:- auth:- anon:r")
		}
		wantHTTP(t, rs.as(admin, "GET", "/locked/x", ""), "200 OK", `{"x":1}`)

		// Every other top-level path: the * line.
		free := "/" + uniq("free-")
		wantDenied(t, rs.as(anon, "PUT", free+"/x", `{}`), anon)
		rs.must(cat, "PUT", free+"/x", `{"f":1}`, "200 OK")
		wantHTTP(t, rs.as(anon, "GET", free+"/x", ""), "200 OK", `{"f":1}`)
		wantDenied(t, rs.as(anon, "DELETE", free+"/x", ""), anon)
		rs.must(bob, "DELETE", free+"/x", "", "200 OK")
	})
}

// TestChannelRulesConfigErrors: a -channel-rules file with an error makes
// reso exit non-zero at start, naming the line; so does a missing file.
func TestChannelRulesConfigErrors(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		for _, c := range []struct{ name, text string }{
			{"an unknown letter", "# rooms\n/ok self:cruds\n/rooms self:crudx\n* anon:r\n"},
			{"an unknown kind", "/ok self:r\n\n/rooms everyone:r\n"},
			{"a kind twice", "# a\n# b\n/rooms self:r self:c\n"},
			{"a letter twice", "*  anon:r\n/ok auth:r\n/rooms auth:rr\n"},
		} {
			t.Run(c.name, func(t *testing.T) {
				file := filepath.Join(t.TempDir(), "rules.conf")
				if err := os.WriteFile(file, []byte(c.text), 0o644); err != nil {
					t.Fatal(err)
				}
				code, out := runFails(t, m, flagChannelRules, file)
				if code == 0 {
					t.Errorf("exit status 0, want non-zero:\n%s", out)
				}
				if !strings.Contains(out, "line 3") && !strings.Contains(out, "rules.conf:3") {
					t.Errorf("the output does not name line 3 of %s:\n%s", file, out)
				}
				if strings.Contains(out, "flag provided but not defined") {
					t.Errorf("reso does not know %s:\n%s", flagChannelRules, out)
				}
			})
		}
		code, out := runFails(t, m, flagChannelRules, filepath.Join(t.TempDir(), "missing"))
		if code == 0 || strings.Contains(out, "flag provided but not defined") {
			t.Errorf("a missing rules file: exit status %d:\n%s", code, out)
		}
	})
}

// TestChannelRulesPersist: the rules, group and owner of a persistent
// resource are stored with it and survive a restart, and are enforced
// after it.
func TestChannelRulesPersist(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		rs := startRules(t, m)
		p := "/" + uniq("keep-") + "/p"
		rs.must(ann, "PUT", p, `{"v":1}`, "200 OK")
		rs.must(ann, "PUT", p+"/c", `{"c":1}`, "200 OK")
		const eff = "self:cruds group:r auth:- anon:-"
		rs.setRules(ann, p, `{"rules":"group:r self:cruds","group":["`+bob.email+`"],"owner":"`+cat.email+`"}`).
			check(t, "before the restart", p, "self:cruds group:r", `["`+bob.email+`"]`, cat.email, eff)
		before := rs.must(cat, "GET", p+"?rules", "", "200 OK").Body

		rs.restart()
		after := rs.must(cat, "GET", p+"?rules", "", "200 OK").Body
		if after != before {
			t.Errorf("GET ?rules after the restart: %s, before it: %s", after, before)
		}
		parseRules(t, after).check(t, "after the restart", p, "self:cruds group:r", `["`+bob.email+`"]`, cat.email, eff)
		wantHTTP(t, rs.as(bob, "GET", p+"/c", ""), "200 OK", `{"c":1}`)
		wantDenied(t, rs.as(bob, "PUT", p+"/c", `{}`), bob)
		wantDenied(t, rs.as(bob, "GET", p+"?rules", ""), bob)
		wantDenied(t, rs.as(ann, "GET", p+"?rules", ""), ann)
		wantHTTP(t, rs.as(ann, "GET", p, ""), "404 Not Found", "-")
		wantHTTP(t, rs.as(anon, "GET", p+"/c", ""), "404 Not Found", "-")
		wantHTTP(t, rs.as(cat, "PUT", p+"/c", `{"c":2}`), "200 OK", `{}`)
	})
}
