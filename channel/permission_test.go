package channel

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// ex executes msg for c and returns every frame c then holds, joined by
// "\n".
func ex(t *testing.T, c *Client, msg string) string {
	t.Helper()
	c.Exec(context.Background(), []byte(msg))
	return strings.Join(drain(t, c), "\n")
}

// must executes msg for c and fails the test unless its reply (msg_id 0)
// is a success.
func must(t *testing.T, c *Client, msg string) {
	t.Helper()
	if got := ex(t, c, msg); !strings.HasSuffix(got, `{"msg_id":0,"code":"success"}`) && !strings.Contains(got, `"msg_id":0,"code":"success",`) {
		t.Fatalf("%s: %s", msg, got)
	}
}

// callers are one client of each kind at /m/r of permTree, and the
// administrator.
type callers struct {
	self, group, auth, anon, admin *Client
}

// permTree returns a tree where alice owns /m/r (persistent), bob is in
// its group, carol is another authenticated caller.
func permTree(t *testing.T, opt Options) (*Tree, callers) {
	tr := newTree(t, nil, opt)
	cs := callers{
		self:  connect(t, tr, "alice", "alice@example.com"),
		group: connect(t, tr, "bob", "bob@example.com"),
		auth:  connect(t, tr, "carol", "carol@example.com"),
		anon:  connect(t, tr, "anon", ""),
		admin: connect(t, tr, "admin", Admin),
	}
	must(t, cs.self, `{"method":"PUT","resource":"/m/r","entity":{"v":1},"persistent":true,"msg_id":0}`)
	must(t, cs.self, `{"method":"RULES","resource":"/m/r","group":["bob@example.com"],"msg_id":0}`)
	return tr, cs
}

// TestPermissionMatrix checks each operation for each kind of caller with
// a rule that allows exactly that operation to exactly that kind.
func TestPermissionMatrix(t *testing.T) {
	ops := []struct {
		letter string
		msg    string // on /m/r/x, where x exists unless the operation is create
		exists bool
	}{
		{"c", `{"method":"PUT","resource":"/m/r/x","entity":2,"persistent":true,"msg_id":1}`, false},
		{"r", `{"method":"GET","resource":"/m/r/x","msg_id":1}`, true},
		{"u", `{"method":"PUT","resource":"/m/r/x","entity":3,"persistent":true,"msg_id":1}`, true},
		{"d", `{"method":"DELETE","resource":"/m/r/x","msg_id":1}`, true},
		{"s", `{"method":"SUBSCRIBE","resource":"/m/r/x","msg_id":1}`, true},
	}
	kinds := []string{"self", "group", "auth", "anon"}
	for _, op := range ops {
		for _, allowed := range kinds {
			for _, who := range append(kinds, "admin") {
				t.Run(op.letter+"/"+allowed+"/"+who, func(t *testing.T) {
					_, cs := permTree(t, Options{})
					if op.exists {
						must(t, cs.self, `{"method":"PUT","resource":"/m/r/x","entity":1,"persistent":true,"msg_id":0}`)
					}
					rule := allowed + ":" + op.letter
					if op.letter == "s" {
						// Everyone reads, so that /m/r is not hidden and
						// SUBSCRIBE is judged by its own letter.
						rule = ""
						for _, k := range kinds {
							rule += " " + k + ":r"
							if k == allowed {
								rule += "s"
							}
						}
					}
					must(t, cs.self, fmt.Sprintf(`{"method":"RULES","resource":"/m/r","rules":"%s","msg_id":0}`, strings.TrimSpace(rule)))
					c := map[string]*Client{"self": cs.self, "group": cs.group, "auth": cs.auth, "anon": cs.anon, "admin": cs.admin}[who]
					got := ex(t, c, op.msg)
					ok := strings.Contains(got, `"code":"success"`)
					if want := who == allowed || who == "admin"; ok != want {
						t.Fatalf("%s: %s", op.msg, got)
					}
					// The rule is on /m/r, x's parent, which the caller may
					// not read: a denied read of x answers as if /m/r, and
					// so x, did not exist; any other denial is forbidden.
					if !ok {
						want := `{"msg_id":1,"code":"failed","reason":"forbidden"}`
						if op.letter == "r" {
							want = `{"msg_id":1,"code":"failed","reason":"not found"}`
						}
						if got != want {
							t.Fatalf("%s: %s, want %s", op.msg, got, want)
						}
					}
				})
			}
		}
	}
}

// TestNarrowing checks that a deeper rule takes rights away and never
// adds any.
func TestNarrowing(t *testing.T) {
	_, cs := permTree(t, Options{})
	must(t, cs.self, `{"method":"PUT","resource":"/m/r/x","entity":1,"persistent":true,"msg_id":0}`)
	must(t, cs.self, `{"method":"RULES","resource":"/m/r","rules":"self:cruds group:r auth:r anon:r","msg_id":0}`)
	must(t, cs.self, `{"method":"RULES","resource":"/m/r/x","rules":"self:cruds group:cruds auth:cruds anon:-","msg_id":0}`)
	if got := ex(t, cs.group, `{"method":"PUT","resource":"/m/r/x","entity":2,"msg_id":1}`); got != `{"msg_id":1,"code":"failed","reason":"forbidden"}` {
		t.Errorf("a deeper rule widened: %s", got)
	}
	if got := ex(t, cs.auth, `{"method":"GET","resource":"/m/r/x","msg_id":1}`); !strings.Contains(got, `"success"`) {
		t.Errorf("auth read: %s", got)
	}
	// Only x's own rule denies anon: the read answers as if x were not there.
	for _, p := range []string{"/m/r/x", "/m/r/nothing"} {
		if got := ex(t, cs.anon, `{"method":"GET","resource":"`+p+`","msg_id":1}`); got != `{"msg_id":1,"code":"failed","reason":"not found"}` {
			t.Errorf("anon GET %s: %s", p, got)
		}
	}
	// Below x, as if x were not there: not found, whether or not there is
	// anything.
	for _, p := range []string{"/m/r/x/y", "/m/r/x/nothing"} {
		if got := ex(t, cs.anon, `{"method":"GET","resource":"`+p+`","msg_id":1}`); got != `{"msg_id":1,"code":"failed","reason":"not found"}` {
			t.Errorf("anon GET %s: %s", p, got)
		}
	}
	got := ex(t, cs.self, `{"method":"RULES","resource":"/m/r/x","msg_id":1}`)
	if want := `{"msg_id":1,"code":"success","resource":"/m/r/x","rules":"self:cruds group:cruds auth:cruds anon:-","group":null,"owner":"alice@example.com","effective":"self:cruds group:r auth:r anon:-"}`; got != want {
		t.Errorf("RULES read:\n got %s\nwant %s", got, want)
	}
}

// TestOwnership checks who may use RULES, and the transfer of ownership.
func TestOwnership(t *testing.T) {
	_, cs := permTree(t, Options{})
	forbidden := `{"msg_id":1,"code":"failed","reason":"forbidden"}`
	for _, c := range []*Client{cs.group, cs.auth, cs.anon} {
		for _, p := range []string{"/m/r", "/m/r/none", "/m"} {
			if got := ex(t, c, `{"method":"RULES","resource":"`+p+`","rules":"","msg_id":1}`); got != forbidden {
				t.Errorf("%s RULES %s: %s", c.id, p, got)
			}
		}
	}
	if got := ex(t, cs.self, `{"method":"RULES","resource":"/m","msg_id":1}`); got != forbidden {
		t.Errorf("an owner below changed a top-level path: %s", got)
	}
	if got := ex(t, cs.self, `{"method":"RULES","resource":"/m/r/none","msg_id":1}`); got != `{"msg_id":1,"code":"failed","reason":"not found"}` {
		t.Errorf("owner RULES of nothing: %s", got)
	}
	for _, bad := range []struct{ field, reason string }{
		{`"rules":"self:x"`, "invalid rules"}, {`"group":"bob"`, "invalid group"}, {`"group":[""]`, "invalid group"},
		{`"group":[1]`, "invalid group"}, {`"owner":""`, "invalid owner"}, {`"owner":"a\u0000b"`, "invalid owner"},
	} {
		want := `{"msg_id":1,"code":"failed","reason":"` + bad.reason + `"}`
		if got := ex(t, cs.self, `{"method":"RULES","resource":"/m/r",`+bad.field+`,"msg_id":1}`); got != want {
			t.Errorf("%s: %s, want %s", bad.field, got, want)
		}
	}
	// Alice gives /m/r to carol: carol now decides, alice no longer.
	must(t, cs.self, `{"method":"RULES","resource":"/m/r","owner":"carol@example.com","rules":"self:cruds","msg_id":0}`)
	if got := ex(t, cs.self, `{"method":"RULES","resource":"/m/r","rules":"","msg_id":1}`); got != forbidden {
		t.Errorf("the old owner: %s", got)
	}
	if got := ex(t, cs.self, `{"method":"GET","resource":"/m/r","msg_id":1}`); got != `{"msg_id":1,"code":"failed","reason":"not found"}` {
		t.Errorf("the old owner reads: %s", got)
	}
	must(t, cs.auth, `{"method":"RULES","resource":"/m/r","rules":"self:cruds auth:r","msg_id":0}`)
	must(t, cs.self, `{"method":"GET","resource":"/m/r","msg_id":0}`)
	// The administrator may do everything, top-level rules included.
	must(t, cs.admin, `{"method":"RULES","resource":"/m","rules":"self:cruds anon:-","msg_id":0}`)
	must(t, cs.admin, `{"method":"RULES","resource":"/m/r","rules":"self:-","msg_id":0}`)
	must(t, cs.admin, `{"method":"DELETE","resource":"/m/r","msg_id":0}`)
}

// TestFilteredNotifications checks that a subscriber gets only the
// notifications about resources it may read, judged at delivery.
func TestFilteredNotifications(t *testing.T) {
	_, cs := permTree(t, Options{})
	must(t, cs.self, `{"method":"RULES","resource":"/m/r","rules":"self:cruds group:rs auth:s anon:s","msg_id":0}`)
	for _, c := range []*Client{cs.group, cs.auth, cs.anon} {
		must(t, c, `{"method":"SUBSCRIBE","resource":"/m/r","msg_id":0}`)
	}
	must(t, cs.self, `{"method":"NOTIFY","resource":"/m/r","data":"secret","msg_id":0}`)
	must(t, cs.self, `{"method":"PUT","resource":"/m/r/c","entity":1,"msg_id":0}`)
	if got := drain(t, cs.group); len(got) != 2 || !strings.Contains(got[0], `"data":"secret"`) || !strings.Contains(got[1], `"update":"c"`) {
		t.Errorf("group member: %q", got)
	}
	for _, c := range []*Client{cs.auth, cs.anon} {
		if got := drain(t, c); len(got) != 0 {
			t.Errorf("%s got %q", c.id, got)
		}
	}
	// A child the group may not read: no UPDATE about it.
	must(t, cs.self, `{"method":"RULES","resource":"/m/r/c","rules":"self:cruds","msg_id":0}`)
	must(t, cs.self, `{"method":"PUT","resource":"/m/r/c","entity":2,"msg_id":0}`)
	must(t, cs.self, `{"method":"PUT","resource":"/m/r/d","entity":3,"msg_id":0}`)
	if got := drain(t, cs.group); len(got) != 1 || !strings.Contains(got[0], `"update":"d"`) {
		t.Errorf("group member after the child's rule: %q", got)
	}
	// Out of the group: nothing more, on the open subscription.
	must(t, cs.self, `{"method":"RULES","resource":"/m/r","group":[],"msg_id":0}`)
	// NOTIFY counts the subscribers that received it: none may read.
	if got := ex(t, cs.self, `{"method":"NOTIFY","resource":"/m/r","data":"more","msg_id":1}`); got != `{"msg_id":1,"code":"failed","reason":"no subscriber"}` {
		t.Errorf("NOTIFY nobody may read: %s", got)
	}
	must(t, cs.self, `{"method":"PUT","resource":"/m/r/d","entity":4,"msg_id":0}`)
	if got := drain(t, cs.group); len(got) != 0 {
		t.Errorf("after leaving the group: %q", got)
	}
	// Listings show only what the caller may read.
	must(t, cs.self, `{"method":"RULES","resource":"/m/r","rules":"","group":null,"msg_id":0}`)
	for _, c := range []struct{ res, want string }{
		{"/m/r", `{"v":1}`},
		{"/m/r?deep=0", `{"count":1}`},
		{"/m/r?deep=1", `["d"]`},
		{"/m/r?deep=2", `[{"rid":"d","type":"application/json","entity":4}]`},
	} {
		got := ex(t, cs.auth, `{"method":"GET","resource":"`+c.res+`","msg_id":1}`)
		if !strings.HasSuffix(got, `"entity":`+c.want+`}`) {
			t.Errorf("GET %s: %s, want entity %s", c.res, got, c.want)
		}
	}
	if got := ex(t, cs.self, `{"method":"GET","resource":"/m/r?deep=1","msg_id":1}`); !strings.HasSuffix(got, `"entity":["c","d"]}`) {
		t.Errorf("owner listing: %s", got)
	}
}

// TestFilteredReplay checks that a replay leaves out what the subscriber
// may not read now.
func TestFilteredReplay(t *testing.T) {
	_, cs := permTree(t, Options{})
	must(t, cs.self, `{"method":"PUT","resource":"/m/r/open","entity":1,"msg_id":0}`)
	must(t, cs.self, `{"method":"PUT","resource":"/m/r/closed","entity":1,"msg_id":0}`)
	must(t, cs.self, `{"method":"RULES","resource":"/m/r/closed","rules":"self:cruds","msg_id":0}`)
	must(t, cs.self, `{"method":"PUT","resource":"/m/r/closed","entity":2,"msg_id":0}`)
	must(t, cs.self, `{"method":"PUT","resource":"/m/r/open","entity":2,"msg_id":0}`)
	got := ex(t, cs.auth, `{"method":"SUBSCRIBE","resource":"/m/r","since":0,"msg_id":1}`)
	var keys []string
	for _, f := range strings.Split(got, "\n") {
		if i := strings.Index(f, `"update":"`); i >= 0 {
			keys = append(keys, f[i+10:strings.IndexByte(f[i+10:], '"')+i+10])
		}
	}
	// /m/r/open twice; /m/r/closed never, not even its first PUT, made
	// while it was open: the rules at replay decide.
	if strings.Join(keys, ",") != "open,open" || !strings.HasSuffix(got, `{"msg_id":1,"code":"success","recovered":true,"epoch":"e"}`) {
		t.Errorf("replay: %s", got)
	}
}

// TestTopLevelRules checks the configured rules of top-level paths.
func TestTopLevelRules(t *testing.T) {
	rs, err := ParseRules(strings.NewReader("/locked self:cruds auth:r anon:-\n* self:cruds group:cruds auth:cruds anon:cr\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr := newTree(t, nil, Options{Rules: rs})
	anon := connect(t, tr, "anon", "")
	carol := connect(t, tr, "carol", "carol@example.com")
	admin := connect(t, tr, "admin", Admin)
	forbidden := `{"msg_id":1,"code":"failed","reason":"forbidden"}`
	must(t, admin, `{"method":"PUT","resource":"/locked/a","entity":1,"msg_id":0}`)
	if got := ex(t, anon, `{"method":"GET","resource":"/locked/a","msg_id":1}`); got != forbidden {
		t.Errorf("anon GET: %s", got)
	}
	if got := ex(t, carol, `{"method":"PUT","resource":"/locked/b","entity":1,"msg_id":1}`); got != forbidden {
		t.Errorf("carol PUT: %s", got)
	}
	must(t, carol, `{"method":"GET","resource":"/locked/a","msg_id":0}`)
	must(t, anon, `{"method":"PUT","resource":"/open/a","entity":1,"msg_id":0}`)
	if got := ex(t, anon, `{"method":"PUT","resource":"/open/a","entity":2,"msg_id":1}`); got != forbidden {
		t.Errorf("anon update: %s", got)
	}
	if got := ex(t, anon, `{"method":"GET","resource":"/?deep=1","msg_id":1}`); !strings.HasSuffix(got, `"entity":["open"]}`) {
		t.Errorf("root listing: %s", got)
	}
}

// TestRulesSurviveRestart checks that the rules, group and owner of a
// persistent resource are stored with it.
func TestRulesSurviveRestart(t *testing.T) {
	st := newMemStore()
	tr := newTree(t, st, Options{})
	alice := connect(t, tr, "alice", "alice@example.com")
	must(t, alice, `{"method":"PUT","resource":"/m/r","entity":1,"persistent":true,"msg_id":0}`)
	must(t, alice, `{"method":"RULES","resource":"/m/r","rules":"self:cruds group:r","group":["bob@example.com"],"msg_id":0}`)
	must(t, alice, `{"method":"RULES","resource":"/m/r","owner":"dave@example.com","msg_id":0}`)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	tr = newTree(t, st, Options{})
	dave := connect(t, tr, "dave", "dave@example.com")
	got := ex(t, dave, `{"method":"RULES","resource":"/m/r","msg_id":1}`)
	if want := `{"msg_id":1,"code":"success","resource":"/m/r","rules":"self:cruds group:r","group":["bob@example.com"],"owner":"dave@example.com","effective":"self:cruds group:r auth:- anon:-"}`; got != want {
		t.Errorf("after a restart:\n got %s\nwant %s", got, want)
	}
}
