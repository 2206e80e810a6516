package tests

import (
	"strings"
	"testing"
)

// Call control across the nodes of a fleet (docs/call.md#on-a-fleet):
// each party talks to a node of its own, addressed directly (not through
// the fleet's round-robin proxy), and everything behaves as docs/call.md
// says for one node.

// callNodes starts a fleet of fleetNodes nodes for a call test and
// returns a callServer per node, each talking to that node alone.
func callNodes(t *testing.T, args ...string) []*callServer {
	t.Helper()
	c := startCall(t, fleetMode, args...)
	f := c.fleet
	var out []*callServer
	for i := range fleetNodes {
		cs := &chanServer{server: f.node(i), t: t, m: fleetMode, fleet: f}
		out = append(out, &callServer{&rulesServer{chanServer: cs, adminCookie: c.adminCookie}})
	}
	return out
}

// TestCallFleetSend: ann keeps GET /login/<email>?watch=diff open on node
// A and a WebSocket subscription on node C; bob SENDs on node B: 200 OK,
// and each session gets the invitation once (the next line is the next
// message, not the same one again). CANCEL of the delivered message
// answers 409 Already Delivered on every node. A message that waits
// (sent on B while no session follows) is withdrawn on another node as on
// B: 403 Forbidden for another caller, 200 OK for its sender, then 404
// Not Found on every node; one that waits is taken by a GET kept open on
// another node than B, and is then Already Delivered on every node. A
// message waiting on a node that is killed is 404 Not Found on the others.
func TestCallFleetSend(t *testing.T) {
	t.Parallel()
	if !hasMode(fleetMode.name) {
		t.Skip("RESO_TEST_MODES leaves out the fleet")
	}
	n := callNodes(t)
	A, B, C := n[0], n[1], n[2]
	L := login(ann)
	C.register(ann, ann, "sip:ann@desk", "", "3600")

	// Waiting (no session yet), withdrawn through other nodes.
	gone := invite("/call/gone", "g1")
	gid := B.send(bob, ann, gone, "202 Accepted")
	C.expect(cat, "CANCEL", L+"/"+gid, "", "403 Forbidden")
	A.expect(ann, "CANCEL", L+"/"+gid, "", "403 Forbidden")
	r := A.req(bob, "CANCEL", L+"/"+gid, "")
	status(t, r, "200 OK", false)
	parseObj(t, r.Body).want(t, "CANCEL on node A", nil)
	for i, s := range n {
		if r := s.req(bob, "CANCEL", L+"/"+gid, ""); r.StatusLine != "HTTP/1.1 404 Not Found" {
			t.Errorf("CANCEL of a withdrawn message on node %d: %q, want 404 Not Found", i, r.StatusLine)
		}
	}

	// Waiting, then taken by a GET kept open on node A.
	kept := invite("/call/kept", "k1")
	kid := B.send(bob, ann, kept, "202 Accepted")
	s := A.watch(ann, ann)
	wantLine(t, s, "node A: the message waiting on node B, after the state", invitation(ann, bob, kept))
	for i, x := range n {
		x.expect(bob, "CANCEL", L+"/"+kid, "", "409 Already Delivered")
		if t.Failed() {
			t.Fatalf("on node %d", i)
		}
	}

	// A session on node C too; bob sends on node B: delivered once to each.
	g := clients(t, C.chanServer)
	w := C.dialAs(g, "$W", ann)
	wantCall(t, w, msg("SUBSCRIBE", L, 1, ""), okReply(1, `"epoch":"E"`))
	body := invite("/call/4f2a", "inv1")
	id := B.send(bob, ann, body, "200 OK")
	wantLine(t, s, "node A: the invitation sent on node B", invitation(ann, bob, body))
	w.expect(invitation(ann, bob, body))
	for i, x := range n {
		if r := x.req(bob, "CANCEL", L+"/"+id, ""); r.StatusLine != "HTTP/1.1 409 Already Delivered" {
			t.Errorf("CANCEL of a delivered message on node %d: %q, want 409 Already Delivered", i, r.StatusLine)
		}
	}
	C.expect(cat, "CANCEL", L+"/"+id, "", "403 Forbidden")
	next := invite("/call/next", "n1")
	C.send(cat, ann, next, "200 OK")
	wantLine(t, s, "node A: the next line is the next message", invitation(ann, cat, next))
	w.expect(invitation(ann, cat, next))
	w.quiet()

	// A message waiting on node B goes with it: once B is killed, its
	// CANCEL on another node is 404 Not Found.
	A.register(cat, cat, "sip:cat@desk", "", "3600")
	lost := B.send(bob, cat, invite("/call/lost", "l1"), "202 Accepted")
	C.expect(bob, "CANCEL", login(cat)+"/"+lost, "", "200 OK") // held by B, withdrawn through C
	lost = B.send(bob, cat, invite("/call/lost", "l2"), "202 Accepted")
	B.kill()
	A.expect(bob, "CANCEL", login(cat)+"/"+lost, "", "404 Not Found")
}

// TestCallFleetBounds: the bounds of one target count the messages
// waiting on every node: 64 SENDs spread over the three nodes fill them,
// the next is 503 Too Many Waiting Messages on each node, and a CANCEL on
// any node makes room for one more on any other.
func TestCallFleetBounds(t *testing.T) {
	t.Parallel()
	if !hasMode(fleetMode.name) {
		t.Skip("RESO_TEST_MODES leaves out the fleet")
	}
	n := callNodes(t)
	n[0].register(ann, ann, "sip:ann@desk", "", "3600")
	var ids []string
	for i := range 64 {
		ids = append(ids, n[i%3].send(bob, ann, invite("/call/"+itoa(i), "i"+itoa(i)), "202 Accepted"))
	}
	for _, x := range n {
		x.send(bob, ann, invite("/call/65", "i65"), "503 Too Many Waiting Messages")
	}
	n[2].expect(bob, "CANCEL", login(ann)+"/"+ids[0], "", "200 OK") // held by node 0
	n[1].send(bob, ann, invite("/call/66", "i66"), "202 Accepted")
	n[0].send(bob, ann, invite("/call/67", "i67"), "503 Too Many Waiting Messages")
}

// TestCallFleetResources: contacts, calls and inboxes written on one node
// read the same on the others, and a WebSocket subscriber of a call on
// one node sees participants join and leave through the others.
func TestCallFleetResources(t *testing.T) {
	t.Parallel()
	if !hasMode(fleetMode.name) {
		t.Skip("RESO_TEST_MODES leaves out the fleet")
	}
	n := callNodes(t)
	A, B, C := n[0], n[1], n[2]
	L := login(ann)

	// Contacts: registered on A, listed on B and C, refreshed on C,
	// removed on B.
	id := A.register(ann, ann, "sip:ann@desk", "60", "60")
	for i, x := range []*callServer{B, C} {
		if got := x.contacts(ann, ann); len(got) != 1 || got[0].compact("id") != jsonString(id) || got[0].compact("contact") != `"sip:ann@desk"` {
			t.Errorf("GET %s on node %d: %v", L, i+1, got)
		}
	}
	r := C.req(ann, "PUT", L+"/"+id, `{"contact":"sip:ann@phone","expires":120}`)
	status(t, r, "200 OK", true)
	r = A.req(ann, "GET", L+"/"+id, "")
	status(t, r, "200 OK", true)
	parseObj(t, r.Body).want(t, "the contact refreshed on C, read on A", []string{"id", "contact", "expires"},
		"id", jsonString(id), "contact", `"sip:ann@phone"`, "expires", "120")
	B.expect(bob, "GET", L, "", "403 Forbidden")
	B.expect(ann, "DELETE", L+"/"+id, "", "200 OK")
	if got := A.contacts(ann, ann); len(got) != 0 {
		t.Errorf("GET %s on A after the DELETE on B: %v", L, got)
	}
	C.send(bob, ann, invite("/call/1", "i1"), "404 Not Logged In")

	// Calls: made on A, followed on C, joined on B and A, in joining order.
	call, _ := created(t, A.req(ann, "POST", "/call", `{"subject":"planning"}`), "/call/")
	g := clients(t, C.chanServer)
	w := C.dialAs(g, "$W", cat)
	wantCall(t, w, msg("SUBSCRIBE", "/call/"+call, 1, ""), okReply(1, `"epoch":"E"`))
	pb, _ := created(t, B.req(bob, "POST", "/call/"+call, `{"session":"sip:bob@desk"}`), "/call/"+call+"/")
	w.expect(joined(call, pb, "sip:bob@desk"))
	pa, _ := created(t, A.req(ann, "POST", "/call/"+call, `{"session":"sip:ann@desk"}`), "/call/"+call+"/")
	w.expect(joined(call, pa, "sip:ann@desk"))
	r = C.req(cat, "GET", "/call/"+call, "")
	status(t, r, "200 OK", true)
	parseObj(t, r.Body).want(t, "the call read on C", []string{"subject", "children"}, "subject", `"planning"`,
		"children", `[{"url":`+jsonString("/call/"+call+"/"+pb)+`,"session":"sip:bob@desk"},{"url":`+jsonString("/call/"+call+"/"+pa)+`,"session":"sip:ann@desk"}]`)
	C.expect(bob, "DELETE", "/call/"+call, "", "403 Forbidden")
	B.expect(bob, "DELETE", "/call/"+call+"/"+pb, "", "200 OK")
	w.expect(left(call, pb))
	C.expect(ann, "DELETE", "/call/"+call, "", "200 OK")
	w.expect(left(call, pa))
	A.expect(ann, "GET", "/call/"+call, "", "404 Not Found")

	// Inboxes: the record made on A, a message left on B, read on C,
	// deleted on A.
	uid, _ := created(t, A.req(ann, "POST", "/user", `{"email":"ann@example.org"}`), "/user/")
	M := "/user/" + uid + "/message"
	mid, _ := created(t, B.req(bob, "POST", M, `{"url":"/call/1","text":"call me"}`), M+"/")
	r = C.req(ann, "GET", M, "")
	status(t, r, "200 OK", true)
	if got := parseList(t, r.Body); len(got) != 1 {
		t.Fatalf("GET %s on C: %q", M, r.Body)
	} else {
		got[0].want(t, "the message read on C", []string{"id", "from", "url", "text"},
			"id", jsonString(mid), "from", `"bob@example.org"`, "url", `"/call/1"`, "text", `"call me"`)
	}
	C.expect(bob, "GET", M, "", "403 Forbidden")
	A.expect(ann, "DELETE", M+"/"+mid, "", "200 OK")
	if r := B.req(ann, "GET", M, ""); r.Body != "[]" {
		t.Errorf("GET %s on B after the DELETE on A: %q, want []", M, r.Body)
	}
}

// TestCallFleetExpiry: with -call-max-expires 1s a contact registered on
// node A runs out once fleet-wide: a subscriber of /login/<email> on
// every node gets one UPDATE delete, the same seq on each, and then the
// next change (a contact registered on node B), not a second delete.
func TestCallFleetExpiry(t *testing.T) {
	t.Parallel()
	if !hasMode(fleetMode.name) {
		t.Skip("RESO_TEST_MODES leaves out the fleet")
	}
	n := callNodes(t, flagCallMaxExpires, "1s")
	L := login(ann)
	n[0].contacts(ann, ann) // makes /login/<email>
	var ws []*wsClient
	for i, x := range n {
		w := x.dialAs(clients(t, x.chanServer), "$N"+itoa(i), ann)
		wantCall(t, w, msg("SUBSCRIBE", L, 1, ""), okReply(1, `"epoch":"E"`))
		ws = append(ws, w)
	}
	id := n[0].register(ann, ann, "sip:ann@desk", "3600", "1")
	gone := `{"notify":"UPDATE","resource":` + jsonString(L) + `,"delete":` + jsonString(id) + `,"type":null,"entity":null,"seq":N}`
	var seqs []string
	for i, w := range ws {
		if f := w.next(); field(f, "create") != jsonString(id) {
			t.Fatalf("node %d: %s, want the contact's create", i, f)
		}
		f := w.next()
		got, _ := withoutSeq(f)
		if got != gone {
			t.Fatalf("node %d: %s, want %s", i, f, gone)
		}
		seqs = append(seqs, field(f, "seq"))
	}
	if seqs[0] != seqs[1] || seqs[1] != seqs[2] {
		t.Errorf("the expiry's seq on the three nodes: %q", seqs)
	}
	// Long-lived: granted 1 s too, but the marker is its create, which
	// comes right after the expiry, before it runs out in its turn.
	mark := n[1].register(ann, ann, "sip:ann@mark", "", "1")
	for i, w := range ws {
		if f := w.next(); field(f, "create") != jsonString(mark) {
			t.Errorf("node %d: after the expiry %s, want the next contact's create (one expiry only)", i, f)
		}
	}
}

// hasMode reports whether RESO_TEST_MODES includes the mode name.
func hasMode(name string) bool {
	for _, m := range modes() {
		if strings.EqualFold(m.name, name) {
			return true
		}
	}
	return false
}
