package channel

import (
	"strings"
	"testing"
)

// hiddenTree returns a tree where alice owns /b and /b/secret (rule self:cruds,
// a child /b/secret/c) and /b/claim/x (self:cruds, so /b/claim exists
// only for it) under /b, which everyone may read; /closed lets
// authenticated callers do nothing but create, and holds alice's
// /closed/secret. No resource is at /b/none or /closed/none.
func hiddenTree(t *testing.T) (*Tree, callers) {
	t.Helper()
	rs, err := ParseRules(strings.NewReader("/closed self:cruds auth:c anon:-\n* self:cruds group:cruds auth:cruds anon:cruds\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr, cs := permTree(t, Options{Rules: rs})
	for _, m := range []string{
		`{"method":"PUT","resource":"/b","entity":{},"persistent":true,"msg_id":0}`,
		`{"method":"PUT","resource":"/b/secret","entity":{"k":1},"persistent":true,"msg_id":0}`,
		`{"method":"PUT","resource":"/b/secret/c","entity":{"k":2},"persistent":true,"msg_id":0}`,
		`{"method":"RULES","resource":"/b/secret","rules":"self:cruds","msg_id":0}`,
		`{"method":"PUT","resource":"/b/claim/x","entity":{"k":3},"persistent":true,"msg_id":0}`,
		`{"method":"RULES","resource":"/b/claim/x","rules":"self:cruds","msg_id":0}`,
		`{"method":"PUT","resource":"/closed/secret","entity":{"k":4},"persistent":true,"msg_id":0}`,
	} {
		must(t, cs.self, m)
	}
	return tr, cs
}

// TestHiddenAsMissing checks that every read and subscription of a
// resource the caller may not read answers exactly what it answers where
// no resource is (docs/channel.md#hidden-resources), below it too, and that the
// subscription then delivers nothing about it.
func TestHiddenAsMissing(t *testing.T) {
	_, cs := hiddenTree(t)
	// Each message is sent with P replaced by the hidden path and then by
	// the missing one; the replies must be the same bytes, P put back.
	msgs := []string{
		`{"method":"GET","resource":"P","msg_id":1}`,
		`{"method":"GET","resource":"P[k]","msg_id":1}`,
		`{"method":"GET","resource":"P?deep=0","msg_id":1}`,
		`{"method":"GET","resource":"P?deep=1","msg_id":1}`,
		`{"method":"GET","resource":"P?deep=2","msg_id":1}`,
		`{"method":"GET","resource":"P/c","msg_id":1}`,
		`{"method":"GET","resource":"P/c?deep=2","msg_id":1}`,
		`{"method":"SUBSCRIBE","resource":"P","msg_id":1}`,
		`{"method":"SUBSCRIBE","resource":"P","stream":true,"msg_id":1}`,
		`{"method":"SUBSCRIBE","resource":"P","since":0,"msg_id":1}`,
		`{"method":"SUBSCRIBE","resource":"P/c","stream":true,"since":0,"msg_id":1}`,
		`{"method":"RULES","resource":"P","msg_id":1}`,
		`{"method":"RULES","resource":"P/c","msg_id":1}`,
	}
	pairs := []struct{ name, hidden, missing string }{
		{"own rule", "/b/secret", "/b/none"},
		{"implicit node", "/b/claim", "/b/nothing"},
		{"top-level rule", "/closed/secret", "/closed/none"},
	}
	for _, p := range pairs {
		for _, c := range []*Client{cs.auth, cs.anon, cs.group} {
			for _, m := range msgs {
				h := ex(t, c, strings.ReplaceAll(m, "P", p.hidden))
				n := ex(t, c, strings.ReplaceAll(m, "P", p.missing))
				if strings.ReplaceAll(h, p.hidden, "P") != strings.ReplaceAll(n, p.missing, "P") {
					t.Errorf("%s, %s: %s\nhidden  %s\nmissing %s", p.name, c.id, m, h, n)
				}
			}
		}
	}
	// The subscriptions deliver nothing about the hidden resources.
	must(t, cs.self, `{"method":"PUT","resource":"/b/secret","entity":{"k":5},"persistent":true,"msg_id":0}`)
	must(t, cs.self, `{"method":"PUT","resource":"/b/secret/c","entity":{"k":6},"persistent":true,"msg_id":0}`)
	must(t, cs.self, `{"method":"PUT","resource":"/b/claim/x","entity":{"k":7},"persistent":true,"msg_id":0}`)
	for _, c := range []*Client{cs.auth, cs.anon, cs.group} {
		if got := drain(t, c); len(got) != 0 {
			t.Errorf("%s got %q", c.id, got)
		}
	}
	// The owner still reads and is notified.
	if got := ex(t, cs.self, `{"method":"GET","resource":"/b/secret","msg_id":1}`); got != `{"msg_id":1,"code":"success","resource":"/b/secret","type":"application/json","entity":{"k":5}}` {
		t.Errorf("owner GET: %s", got)
	}
	// Listings leave the implicit node out as they leave the hidden one.
	if got := ex(t, cs.auth, `{"method":"GET","resource":"/b?deep=1","msg_id":1}`); got != `{"msg_id":1,"code":"success","resource":"/b?deep=1","type":"application/json","entity":[]}` {
		t.Errorf("listing: %s", got)
	}
	// Where the top-level rule denies, both are forbidden.
	for _, p := range []string{"/closed/secret", "/closed/none"} {
		if got := ex(t, cs.auth, `{"method":"GET","resource":"`+p+`","msg_id":1}`); got != `{"msg_id":1,"code":"failed","reason":"forbidden"}` {
			t.Errorf("GET %s: %s", p, got)
		}
	}
}

// TestDeniedWrites checks what a denied write answers on a hidden
// resource: forbidden, which is all it reveals; nothing changes.
func TestDeniedWrites(t *testing.T) {
	_, cs := hiddenTree(t)
	forbidden := `{"msg_id":1,"code":"failed","reason":"forbidden"}`
	for _, m := range []string{
		`{"method":"PUT","resource":"/b/secret","entity":1,"msg_id":1}`,
		`{"method":"PUT","resource":"/b/secret[k]","entity":1,"msg_id":1}`,
		`{"method":"PUT","resource":"/b/secret","entity":{"k":1},"partial":true,"msg_id":1}`,
		`{"method":"POST","resource":"/b/secret","msg_id":1}`,
		`{"method":"POST","resource":"/b","id":"secret","msg_id":1}`,
		`{"method":"DELETE","resource":"/b/secret","msg_id":1}`,
		`{"method":"NOTIFY","resource":"/b/secret","data":1,"msg_id":1}`,
		`{"method":"RULES","resource":"/b/secret","rules":"","msg_id":1}`,
	} {
		if got := ex(t, cs.auth, m); got != forbidden {
			t.Errorf("%s: %s", m, got)
		}
	}
	if got := ex(t, cs.self, `{"method":"GET","resource":"/b/secret","msg_id":1}`); !strings.HasSuffix(got, `"entity":{"k":1}}`) {
		t.Errorf("after the denied writes: %s", got)
	}
}

// TestClaimParent checks that no one gains rights over a resource someone
// else created by creating, claiming or re-creating an ancestor of it
// (docs/channel.md#creators-and-owners).
func TestClaimParent(t *testing.T) {
	notFound := `{"msg_id":1,"code":"failed","reason":"not found"}`
	forbidden := `{"msg_id":1,"code":"failed","reason":"forbidden"}`
	// attack is what carol tries once she has done her part on /b/claim.
	attack := func(t *testing.T, cs callers, parent string) {
		t.Helper()
		for _, m := range []string{
			`{"method":"GET","resource":"` + parent + `/x","msg_id":1}`,
			`{"method":"RULES","resource":"` + parent + `/x","owner":"carol@example.com","msg_id":1}`,
			`{"method":"RULES","resource":"` + parent + `","msg_id":1}`,
			`{"method":"PUT","resource":"` + parent + `/x","entity":1,"msg_id":1}`,
		} {
			want := forbidden
			if strings.Contains(m, `"GET"`) {
				want = notFound
			}
			if got := ex(t, cs.auth, m); got != want {
				t.Errorf("%s: %s, want %s", m, got, want)
			}
		}
		if got := ex(t, cs.self, `{"method":"GET","resource":"`+parent+`/x","msg_id":1}`); !strings.Contains(got, `"success"`) {
			t.Errorf("alice lost x: %s", got)
		}
	}
	setup := func(t *testing.T) callers {
		_, cs := permTree(t, Options{})
		must(t, cs.self, `{"method":"PUT","resource":"/b/claim/x","entity":{"k":1},"persistent":true,"msg_id":0}`)
		must(t, cs.self, `{"method":"RULES","resource":"/b/claim/x","rules":"self:cruds","msg_id":0}`)
		return cs
	}
	t.Run("PUT of the implicit node", func(t *testing.T) {
		cs := setup(t)
		must(t, cs.auth, `{"method":"PUT","resource":"/b/claim","entity":{},"persistent":true,"msg_id":0}`)
		attack(t, cs, "/b/claim")
		got := ex(t, cs.admin, `{"method":"RULES","resource":"/b/claim","msg_id":1}`)
		if !strings.Contains(got, `"owner":null`) {
			t.Errorf("the implicit node got an owner: %s", got)
		}
	})
	t.Run("transient PUT of the implicit node", func(t *testing.T) {
		cs := setup(t)
		must(t, cs.auth, `{"method":"PUT","resource":"/b/claim","entity":{},"msg_id":0}`)
		attack(t, cs, "/b/claim")
		cs.auth.Disconnect()
		must(t, cs.group, `{"method":"PUT","resource":"/b/claim","entity":{},"persistent":true,"msg_id":0}`)
		got := ex(t, cs.admin, `{"method":"RULES","resource":"/b/claim","msg_id":1}`)
		if !strings.Contains(got, `"owner":null`) {
			t.Errorf("the implicit node got an owner: %s", got)
		}
	})
	t.Run("POST into the implicit node", func(t *testing.T) {
		cs := setup(t)
		if got := ex(t, cs.auth, `{"method":"POST","resource":"/b","id":"claim","msg_id":1}`); got != `{"msg_id":1,"code":"failed","reason":"exists"}` {
			t.Errorf("POST of the implicit node: %s", got)
		}
		must(t, cs.auth, `{"method":"POST","resource":"/b/claim","entity":{},"persistent":true,"msg_id":0}`)
		attack(t, cs, "/b/claim")
	})
	t.Run("DELETE and re-create of the parent", func(t *testing.T) {
		_, cs := permTree(t, Options{})
		must(t, cs.self, `{"method":"PUT","resource":"/b/p","entity":{},"persistent":true,"msg_id":0}`)
		must(t, cs.self, `{"method":"PUT","resource":"/b/p/x","entity":{"k":1},"persistent":true,"msg_id":0}`)
		must(t, cs.self, `{"method":"RULES","resource":"/b/p/x","rules":"self:cruds","msg_id":0}`)
		// /b/p has no rule of its own: carol may delete it.
		must(t, cs.auth, `{"method":"DELETE","resource":"/b/p","msg_id":0}`)
		must(t, cs.auth, `{"method":"PUT","resource":"/b/p","entity":{},"persistent":true,"msg_id":0}`)
		attack(t, cs, "/b/p")
		got := ex(t, cs.self, `{"method":"RULES","resource":"/b/p","msg_id":1}`)
		if !strings.Contains(got, `"owner":"alice@example.com"`) {
			t.Errorf("the re-created parent changed owner: %s", got)
		}
	})
	t.Run("a fresh resource is its creator's", func(t *testing.T) {
		_, cs := permTree(t, Options{})
		must(t, cs.auth, `{"method":"PUT","resource":"/b/mine","entity":{},"persistent":true,"msg_id":0}`)
		got := ex(t, cs.auth, `{"method":"RULES","resource":"/b/mine","msg_id":1}`)
		if !strings.Contains(got, `"owner":"carol@example.com"`) {
			t.Errorf("RULES: %s", got)
		}
	})
}

// TestDeletedKeepsRules checks that a DELETEd resource with children
// keeps its rules, group and owner while the children keep it, and that
// they go with its last child.
func TestDeletedKeepsRules(t *testing.T) {
	_, cs := permTree(t, Options{})
	must(t, cs.self, `{"method":"PUT","resource":"/b/d","entity":{},"persistent":true,"msg_id":0}`)
	must(t, cs.self, `{"method":"PUT","resource":"/b/d/x","entity":{"k":1},"persistent":true,"msg_id":0}`)
	must(t, cs.self, `{"method":"RULES","resource":"/b/d","rules":"self:cruds group:r","group":["bob@example.com"],"msg_id":0}`)
	must(t, cs.self, `{"method":"DELETE","resource":"/b/d","msg_id":0}`)
	must(t, cs.group, `{"method":"GET","resource":"/b/d/x","msg_id":0}`)
	if got := ex(t, cs.auth, `{"method":"GET","resource":"/b/d/x","msg_id":1}`); got != `{"msg_id":1,"code":"failed","reason":"not found"}` {
		t.Errorf("carol read below the deleted rule: %s", got)
	}
	if got := ex(t, cs.auth, `{"method":"PUT","resource":"/b/d","entity":{},"msg_id":1}`); got != `{"msg_id":1,"code":"failed","reason":"forbidden"}` {
		t.Errorf("carol re-created the deleted resource: %s", got)
	}
	want := `{"msg_id":1,"code":"success","resource":"/b/d","rules":"self:cruds group:r","group":["bob@example.com"],"owner":"alice@example.com","effective":"self:cruds group:r auth:- anon:-"}`
	if got := ex(t, cs.self, `{"method":"RULES","resource":"/b/d","msg_id":1}`); got != want {
		t.Errorf("RULES after DELETE:\n got %s\nwant %s", got, want)
	}
	// With the last child, the node goes and its rules with it.
	must(t, cs.self, `{"method":"DELETE","resource":"/b/d/x","msg_id":0}`)
	must(t, cs.auth, `{"method":"PUT","resource":"/b/d","entity":{},"persistent":true,"msg_id":0}`)
	want = `{"msg_id":1,"code":"success","resource":"/b/d","rules":"","group":null,"owner":"carol@example.com","effective":"self:cruds group:cruds auth:cruds anon:cruds"}`
	if got := ex(t, cs.auth, `{"method":"RULES","resource":"/b/d","msg_id":1}`); got != want {
		t.Errorf("RULES after the last child:\n got %s\nwant %s", got, want)
	}
}

// TestAnonymousNoSelf checks that a resource an anonymous caller created
// has no owner: no anonymous caller is self there, the creator included.
func TestAnonymousNoSelf(t *testing.T) {
	_, cs := permTree(t, Options{})
	for _, m := range []string{
		`{"method":"PUT","resource":"/b/a","entity":{},"persistent":true,"msg_id":0}`,
		`{"method":"PUT","resource":"/b/t","entity":{},"msg_id":0}`,
	} {
		must(t, cs.anon, m)
	}
	forbidden := `{"msg_id":1,"code":"failed","reason":"forbidden"}`
	for _, p := range []string{"/b/a", "/b/t"} {
		if got := ex(t, cs.anon, `{"method":"RULES","resource":"`+p+`","rules":"self:cruds","msg_id":1}`); got != forbidden {
			t.Errorf("anonymous RULES %s: %s", p, got)
		}
		if got := ex(t, cs.admin, `{"method":"RULES","resource":"`+p+`","msg_id":1}`); !strings.Contains(got, `"owner":null`) {
			t.Errorf("admin RULES %s: %s", p, got)
		}
	}
	// A rule that gives self everything and anon nothing leaves the
	// anonymous creator nothing.
	must(t, cs.admin, `{"method":"RULES","resource":"/b/a","rules":"self:cruds anon:-","msg_id":0}`)
	if got := ex(t, cs.anon, `{"method":"PUT","resource":"/b/a","entity":1,"msg_id":1}`); got != forbidden {
		t.Errorf("anonymous creator updated: %s", got)
	}
}

// TestPrivateAtAnyDepth checks that fields whose names start with "_" are
// left out at any depth: GET, [attr], listings and notifications.
func TestPrivateAtAnyDepth(t *testing.T) {
	tr := newTree(t, nil, Options{})
	c := connect(t, tr, "c", "")
	must(t, c, `{"method":"SUBSCRIBE","resource":"/p","msg_id":0}`)
	must(t, c, `{"method":"SUBSCRIBE","resource":"/p/e","msg_id":0}`)
	got := ex(t, c, `{"method":"PUT","resource":"/p/e","entity":{"a":{"_n":1,"m":2},"l":[{"_m":1,"k":[{"_z":0,"y":"_"}]},3],"_t":{"x":1},"\u005fu":1},"persistent":true,"msg_id":1}`)
	pub := `{"a":{"m":2},"l":[{"k":[{"y":"_"}]},3]}`
	want := strings.Join([]string{
		`{"notify":"PUT","resource":"/p/e","type":"application/json","entity":` + pub + `,"from":"c","seq":1}`,
		`{"notify":"UPDATE","resource":"/p","update":"e","type":"application/json","entity":` + pub + `,"seq":1}`,
		`{"msg_id":1,"code":"success"}`,
	}, "\n")
	if got != want {
		t.Errorf("notifications:\n got %s\nwant %s", got, want)
	}
	for m, want := range map[string]string{
		`{"method":"GET","resource":"/p/e","msg_id":1}`:             `{"msg_id":1,"code":"success","resource":"/p/e","type":"application/json","entity":` + pub + `}`,
		`{"method":"GET","resource":"/p/e[a]","msg_id":1}`:          `{"msg_id":1,"code":"success","resource":"/p/e[a]","entity":{"m":2}}`,
		`{"method":"GET","resource":"/p/e[_t]","msg_id":1}`:         `{"msg_id":1,"code":"failed","reason":"not found"}`,
		`{"method":"GET","resource":"/p?deep=2","msg_id":1}`:        `{"msg_id":1,"code":"success","resource":"/p?deep=2","type":"application/json","entity":[{"rid":"e","type":"application/json","entity":` + pub + `}]}`,
		`{"method":"NOTIFY","resource":"/p/e","data":1,"msg_id":1}`: `{"notify":"NOTIFY","resource":"/p/e","data":1,"from":"c","seq":2}` + "\n" + `{"msg_id":1,"code":"success","sent_count":1}`,
	} {
		if got := ex(t, c, m); got != want {
			t.Errorf("%s:\n got %s\nwant %s", m, got, want)
		}
	}
}

// TestPublicEntity checks the removal of private fields on its own.
func TestPublicEntity(t *testing.T) {
	for in, want := range map[string]string{
		`{}`:                         `{}`,
		`[]`:                         `[]`,
		`"_x"`:                       `"_x"`,
		`{"_a":1}`:                   `{}`,
		`{"a":"_","_b":[1]}`:         `{"a":"_"}`,
		`[{"_a":1},{"b":{"_c":{}}}]`: `[{},{"b":{}}]`,
		`[[[{"_":1,"k":[]}]]]`:       `[[[{"k":[]}]]]`,
		`{"\u005fa":1,"b\u005f":2}`:  `{"b\u005f":2}`,
		`{"a":{"b":{"c":{"_d":1}}}}`: `{"a":{"b":{"c":{}}}}`,
	} {
		if got := string(publicEntity([]byte(in))); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
