package tests

import (
	"testing"

	"github.com/reso-project/reso/internal/poll"
)

// TestCallExpiry: with -call-max-expires 1s a contact that asks for 3,600
// s (or nothing) is granted 1; when it runs out it is deleted with the
// usual notifications: UPDATE delete to a GET kept open and a WebSocket
// subscriber of /login/<email>, DELETE (from null) to a subscriber of the
// contact; GET /login/<email> is then [] and SEND 404 Not Logged In.
// Calls and participants are leases bounded by the same flag.
func TestCallExpiry(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		c := startCall(t, m, flagCallMaxExpires, "1s")
		g := clients(t, c.chanServer)
		L := login(ann)
		s := c.watch(ann, ann)
		a := c.dialAs(g, "$A", ann)
		wantCall(t, a, msg("SUBSCRIBE", L, 1, ""), okReply(1, `"epoch":"E"`))

		id := c.register(ann, ann, "sip:ann@desk", "3600", "1")
		c.register(ann, ann, "sip:ann@phone", "", "1")
		wantCall(t, a, msg("SUBSCRIBE", L+"/"+id, 2, ""), okReply(2, `"epoch":"E"`))
		gone := `{"notify":"UPDATE","resource":` + jsonString(L) + `,"delete":` + jsonString(id) + `,"type":null,"entity":null,"seq":N}`

		if got, _ := withoutSeq(lineUntil(s, "delete", jsonString(id))); got != gone {
			t.Errorf("GET kept open: the end of the contact\n got %s\nwant %s", got, gone)
		}
		var del, upd string
		for del == "" || upd == "" {
			f := a.next()
			switch {
			case field(f, "notify") == `"DELETE"`:
				del = f
			case field(f, "delete") == jsonString(id):
				upd = f
			}
		}
		if got, _ := withoutSeq(upd); got != gone {
			t.Errorf("WebSocket: the end of the contact\n got %s\nwant %s", got, gone)
		}
		if got, _ := withoutSeq(del); got != `{"notify":"DELETE","resource":`+jsonString(L+"/"+id)+`,"type":null,"entity":null,"from":null,"seq":N}` {
			t.Errorf("WebSocket: DELETE of the contact: %s", del)
		}
		poll.Until(t, wait, "both contacts run out", func() bool { return len(c.contacts(ann, ann)) == 0 })
		if r := c.req(ann, "GET", L, ""); r.Body != "[]" {
			t.Errorf("GET %s: %q, want []", L, r.Body)
		}
		c.send(bob, ann, invite("/call/1", "i1"), "404 Not Logged In")
		c.expect(ann, "PUT", L+"/"+id, `{"expires":60}`, "404 Not Found")

		// A call and a participant run out too.
		call, _ := created(t, c.req(ann, "POST", "/call", `{"subject":"short","expires":3600}`), "/call/")
		created(t, c.req(bob, "POST", "/call/"+call, `{"session":"sip:bob@desk","expires":3600}`), "/call/"+call+"/")
		poll.Until(t, wait, "the call runs out", func() bool {
			r := c.req(ann, "GET", "/call/"+call, "")
			if r.StatusLine == "HTTP/1.1 404 Not Found" {
				return true
			}
			status(t, r, "200 OK", true)
			return false
		})
	})
}

// TestCallIsolateCall: with -isolate call (only this plugin in a process
// of its own) a contact, a SEND delivered to a GET kept open and a call
// joined under a WebSocket subscriber work as compiled in.
func TestCallIsolateCall(t *testing.T) {
	t.Parallel()
	c := startCall(t, mode{name: "isolate-call"}, "-isolate", "call")
	g := clients(t, c.chanServer)
	c.register(ann, ann, "sip:ann@desk", "", "3600")
	s := c.watch(ann, ann)
	body := invite("/call/x", "i1")
	c.send(bob, ann, body, "200 OK")
	wantLine(t, s, "the invitation", invitation(ann, bob, body))

	call, _ := created(t, c.req(ann, "POST", "/call", `{"subject":"s"}`), "/call/")
	w := c.dialAs(g, "$W", cat)
	wantCall(t, w, msg("SUBSCRIBE", "/call/"+call, 1, ""), okReply(1, `"epoch":"E"`))
	p, _ := created(t, c.req(bob, "POST", "/call/"+call, `{"session":"sip:bob@desk"}`), "/call/"+call+"/")
	w.expect(joined(call, p, "sip:bob@desk"))
	c.expect(bob, "DELETE", "/call/"+call+"/"+p, "", "200 OK")
	w.expect(left(call, p))
}
