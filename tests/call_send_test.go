package tests

import (
	"strings"
	"testing"

	"github.com/reso-project/reso/internal/poll"
)

// TestCallSendSessions: one SEND reaches every live session of the
// target: two GETs kept open of /login/<email> (NDJSON and Server-Sent
// Events) and a WebSocket subscription with the user's credentials, each
// as the NOTIFY of docs/call.md with the body as sent and the sender's
// e-mail; another user's WebSocket subscribes there as to a missing
// resource (it may not read it: docs/channel.md#hidden-resources) and gets
// nothing; every command (invite, cancel, reject with a reason, other
// fields passing through) is delivered: 200 OK with the message id, and a
// CANCEL of a delivered message is 409 Already Delivered.
func TestCallSendSessions(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		c := startCall(t, m)
		g := clients(t, c.chanServer)
		c.register(ann, ann, "sip:ann@desk", "", "3600")
		L := login(ann)

		nd := c.watch(ann, ann)
		sse := c.openStream(L, append(c.headers(ann), "Accept: text/event-stream")...)
		if sse.Resp.StatusLine != "HTTP/1.1 200 OK" || sse.Resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("GET %s as an event stream: %s %v", L, sse.Resp.StatusLine, sse.Resp.Header)
		}
		if e := sse.event(); field(e.Data, "entity") != `{"email":"ann@example.org"}` {
			t.Errorf("first event (the state): %v", e)
		}
		a := c.dialAs(g, "$A", ann)
		wantCall(t, a, msg("SUBSCRIBE", L, 1, ""), okReply(1, `"epoch":"E"`))
		b := c.dialAs(g, "$B", bob)
		// Ann's login is hidden from bob: his SUBSCRIBE answers as on a
		// missing resource, and delivers him nothing (b.quiet below).
		wantCall(t, b, msg("SUBSCRIBE", L, 2, ""), okReply(2, `"epoch":"E"`))

		bodies := []string{
			invite("/call/4f2a", "inv1"),
			`{"command":"cancel","url":"/call/4f2a","id":"inv1"}`,
			`{"command":"reject","url":"/call/4f2a","id":"inv1","reason":"busy","extra":{"k":[1,true,null]}}`,
		}
		var ids []string
		for _, body := range bodies {
			id := c.send(bob, ann, body, "200 OK")
			ids = append(ids, id)
			want := invitation(ann, bob, body)
			wantLine(t, nd, "NDJSON session", want)
			e := sse.event()
			if got, seq := withoutSeq(e.Data); got != want || !e.HasID || eventIDSeq(e.ID) != seq {
				t.Errorf("SSE session: %v\nwant %s with <epoch>:<seq> as id", e, want)
			}
			a.expect(want)
		}
		if ids[0] == ids[1] || ids[1] == ids[2] {
			t.Errorf("message ids %q", ids)
		}
		b.quiet()
		a.quiet()

		// The administrator sends too; from is its e-mail.
		c.send(admin, ann, invite("/call/9", "inv9"), "200 OK")
		a.expect(invitation(ann, admin, invite("/call/9", "inv9")))

		// Delivered: too late to withdraw.
		r := c.req(bob, "CANCEL", L+"/"+ids[0], "")
		status(t, r, "409 Already Delivered", false)
	})
}

// TestCallSendFailures: SEND to a user without a live contact is 404 Not
// Logged In; a command other than invite, cancel or reject is 400 Invalid
// Command; a body that is not a JSON object 400 Invalid JSON content;
// without credentials 401 with the challenge. None reaches the target.
func TestCallSendFailures(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		c := startCall(t, m)
		g := clients(t, c.chanServer)
		c.register(ann, ann, "sip:ann@desk", "", "3600")
		L := login(ann)
		a := c.dialAs(g, "$A", ann)
		wantCall(t, a, msg("SUBSCRIBE", L, 1, ""), okReply(1, `"epoch":"E"`))

		c.send(ann, cat, invite("/call/1", "i1"), "404 Not Logged In")
		c.send(ann, who{email: "nobody@example.org"}, invite("/call/1", "i1"), "404 Not Logged In")
		for _, cmd := range []string{`"dance"`, `"INVITE"`, `""`, `5`} {
			c.send(bob, ann, `{"command":`+cmd+`,"url":"/call/1","id":"i1"}`, "400 Invalid Command")
		}
		c.send(bob, ann, `{"url":"/call/1","id":"i1"}`, "400 Invalid Command")
		for _, body := range []string{`{"command":`, `not json`, `["invite"]`} {
			c.send(bob, ann, body, "400 Invalid JSON content")
		}
		c.expect(anon, "SEND", L, invite("/call/1", "i1"), "401 Unauthorized")
		c.expect(anon, "CANCEL", L+"/x", "", "401 Unauthorized")
		a.quiet()

		// bob is logged in once he has a contact.
		c.register(bob, bob, "sip:bob@desk", "", "3600")
		c.send(ann, bob, invite("/call/2", "i2"), "202 Accepted")
	})
}

// TestCallWaiting: a message to a user with a contact but no session waits
// (202 Accepted) and goes to the first session that follows the target: a
// GET kept open right after its state, a WebSocket subscription. A waiting
// message withdrawn by CANCEL (200 OK, {}) never arrives, and a second
// CANCEL of it is 404 Not Found. CANCEL of a delivered message is 409
// Already Delivered, of an unknown one 404 Not Found, by a caller other
// than the sender and the administrator 403 Forbidden.
func TestCallWaiting(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		c := startCall(t, m)
		g := clients(t, c.chanServer)
		c.register(ann, ann, "sip:ann@desk", "", "3600")
		L := login(ann)

		// Withdrawn before any session: never delivered.
		gone := invite("/call/gone", "g1")
		gid := c.send(bob, ann, gone, "202 Accepted")
		c.expect(cat, "CANCEL", L+"/"+gid, "", "403 Forbidden")
		c.expect(ann, "CANCEL", L+"/"+gid, "", "403 Forbidden")
		r := c.req(bob, "CANCEL", L+"/"+gid, "")
		status(t, r, "200 OK", false)
		parseObj(t, r.Body).want(t, "CANCEL", nil)
		c.expect(bob, "CANCEL", L+"/"+gid, "", "404 Not Found")
		c.expect(bob, "CANCEL", L+"/nosuch", "", "404 Not Found")

		// Waiting, then taken by the first GET kept open.
		kept := invite("/call/kept", "k1")
		kid := c.send(bob, ann, kept, "202 Accepted")
		s := c.watch(ann, ann)
		wantLine(t, s, "the waiting message, after the state", invitation(ann, bob, kept))
		c.expect(bob, "CANCEL", L+"/"+kid, "", "409 Already Delivered")
		c.expect(admin, "CANCEL", L+"/"+kid, "", "409 Already Delivered")
		// Now a session follows: the next message is delivered at once.
		next := invite("/call/next", "n1")
		c.send(cat, ann, next, "200 OK")
		wantLine(t, s, "a message once a session follows", invitation(ann, cat, next))
		s.conn.Close()

		// Withdrawn by the administrator; then taken by a WebSocket
		// subscription: only the message still waiting arrives.
		poll.Until(t, wait, "the GET kept open is no session any more", func() bool {
			// A probe that stays waiting is withdrawn at once.
			r := c.req(bob, "SEND", L, invite("/call/probe", "p"))
			if r.StatusLine == "HTTP/1.1 202 Accepted" {
				c.expect(bob, "CANCEL", L+"/"+parseObjID(t, r.Body), "", "200 OK")
				return true
			}
			status(t, r, "200 OK", true)
			return false
		})
		aid := c.send(cat, ann, invite("/call/admin", "a1"), "202 Accepted")
		r = c.req(admin, "CANCEL", L+"/"+aid, "")
		status(t, r, "200 OK", false)
		ws := invite("/call/ws", "w1")
		wid := c.send(bob, ann, ws, "202 Accepted")
		a := c.dialAs(g, "$A", ann)
		wantCall(t, a, msg("SUBSCRIBE", L, 1, ""), okReply(1, `"epoch":"E"`))
		a.expect(invitation(ann, bob, ws))
		a.quiet()
		c.expect(bob, "CANCEL", L+"/"+wid, "", "409 Already Delivered")
		c.expect(anon, "CANCEL", L+"/"+wid, "", "401 Unauthorized")
	})
}

// parseObjID returns the id of a {"id": ...} body.
func parseObjID(t testing.TB, body string) string {
	t.Helper()
	id, ok := parseObj(t, body).str("id")
	if !ok {
		t.Fatalf("body %q without an id", body)
	}
	return id
}

// TestCallWaitDropped: with -call-wait 1s a message no session takes is
// dropped: its CANCEL is then 404 Not Found (403 Forbidden for another
// caller while it waits), and a session opened after it never gets it.
func TestCallWaitDropped(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		c := startCall(t, m, flagCallWait, "1s")
		c.register(ann, ann, "sip:ann@desk", "", "3600")
		L := login(ann)
		id := c.send(bob, ann, invite("/call/old", "o1"), "202 Accepted")
		c.expect(cat, "CANCEL", L+"/"+id, "", "403 Forbidden")
		poll.Until(t, wait, "the message is dropped", func() bool {
			r := c.req(cat, "CANCEL", L+"/"+id, "")
			if r.StatusLine == "HTTP/1.1 404 Not Found" {
				return true
			}
			status(t, r, "403 Forbidden", true)
			return false
		})
		c.expect(bob, "CANCEL", L+"/"+id, "", "404 Not Found")
		s := c.watch(ann, ann)
		fresh := invite("/call/fresh", "f1")
		c.send(bob, ann, fresh, "200 OK")
		wantLine(t, s, "the first line after the state", invitation(ann, bob, fresh))
	})
}

// TestCallWebSocketContact: a user's WebSocket registers a contact itself
// by a POST to /login/<email> with {"contact"} as the entity; it is
// listed by GET /login/<email> with expires 0, makes the user logged in for SEND, and
// goes, with an UPDATE delete, when that WebSocket closes. Another user's
// WebSocket may not register there.
func TestCallWebSocketContact(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		c := startCall(t, m)
		g := clients(t, c.chanServer)
		L := login(ann)
		c.send(bob, ann, invite("/call/1", "i1"), "404 Not Logged In")
		// ann's first request creates /login/<email>.
		if got := c.contacts(ann, ann); len(got) != 0 {
			t.Fatalf("GET %s: %v, want []", L, got)
		}
		w := c.dialAs(g, "$W", ann)
		b := c.dialAs(g, "$B", bob)
		wantCall(t, b, msg("POST", L, 1, `"entity":{"contact":"sip:bob@ws"}`), failReply(1, "forbidden"))
		reply := w.call(msg("POST", L, 2, `"entity":{"contact":"sip:ann@ws"}`))
		id := field(reply, "id")
		if reply != okReply(2, `"id":`+id) || !strings.HasPrefix(id, `"`) {
			t.Fatalf("POST %s over the WebSocket: %s", L, reply)
		}
		list := c.contacts(ann, ann)
		if len(list) != 1 || list[0].compact("id") != id || list[0].compact("contact") != `"sip:ann@ws"` || list[0].compact("expires") != "0" {
			t.Errorf("GET %s: %v, want the contact %s", L, list, id)
		}

		// Logged in: a message waits for a session.
		c.send(bob, ann, invite("/call/2", "i2"), "202 Accepted")

		f := c.dialAs(g, "$F", ann)
		wantCall(t, f, msg("SUBSCRIBE", L, 3, ""), okReply(3, `"epoch":"E"`))
		f.expect(invitation(ann, bob, invite("/call/2", "i2")))
		w.closeNormal()
		f.expect(`{"notify":"UPDATE","resource":` + jsonString(L) + `,"delete":` + id + `,"type":null,"entity":null,"seq":N}`)
		if got := c.contacts(ann, ann); len(got) != 0 {
			t.Errorf("GET %s after the WebSocket closed: %v, want []", L, got)
		}
		c.send(bob, ann, invite("/call/3", "i3"), "404 Not Logged In")
		f.quiet()
	})
}

// TestCallTooManyWaiting: at most 64 messages wait for one target; the
// next SEND is 503 Too Many Waiting Messages until one is withdrawn.
// Another target has room of its own.
func TestCallTooManyWaiting(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		c := startCall(t, m)
		c.register(ann, ann, "sip:ann@desk", "", "3600")
		c.register(cat, cat, "sip:cat@desk", "", "3600")
		var ids []string
		for i := range 64 {
			ids = append(ids, c.send(bob, ann, invite("/call/"+itoa(i), "i"+itoa(i)), "202 Accepted"))
		}
		c.send(bob, ann, invite("/call/65", "i65"), "503 Too Many Waiting Messages")
		c.send(admin, ann, invite("/call/65", "i65"), "503 Too Many Waiting Messages")
		c.send(bob, cat, invite("/call/c", "c"), "202 Accepted")
		c.expect(bob, "CANCEL", login(ann)+"/"+ids[10], "", "200 OK")
		c.send(bob, ann, invite("/call/66", "i66"), "202 Accepted")
	})
}
