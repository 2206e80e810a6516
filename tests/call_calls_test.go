package tests

import (
	"testing"
)

// joined is the UPDATE a subscriber of /call/<id> gets when the
// participant pid joins with session.
func joined(call, pid, session string) string {
	return `{"notify":"UPDATE","resource":` + jsonString("/call/"+call) + `,"create":` + jsonString(pid) +
		`,"type":"application/json","entity":{"url":` + jsonString("/call/"+call+"/"+pid) + `,"session":` + jsonString(session) + `},"seq":N}`
}

// left is the UPDATE a subscriber of /call/<id> gets when pid leaves.
func left(call, pid string) string {
	return `{"notify":"UPDATE","resource":` + jsonString("/call/"+call) + `,"delete":` + jsonString(pid) + `,"type":null,"entity":null,"seq":N}`
}

// TestCallCalls: the rows of docs/call.md#calls: POST /call creates,
// POST /call/<id> joins, GET reads the call's fields then its children in
// joining order, PUT refreshes the call (replacing its fields) and a
// participant, DELETE of a participant leaves and DELETE of the call ends
// it with its participants. A WebSocket subscriber of /call/<id> (any
// authenticated user) sees each join as UPDATE create and each leave as
// UPDATE delete with the participant {"url", "session"}. Who may do what:
// any authenticated caller reads and joins; only the creator and the
// administrator change or end the call; a participant leaves by itself or
// is removed by the creator; others 403, no credentials 401. Unknown calls
// and participants 404, a join without session 400 Missing Session.
func TestCallCalls(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		c := startCall(t, m)
		g := clients(t, c.chanServer)

		c.expect(anon, "POST", "/call", `{"subject":"x"}`, "401 Unauthorized")
		call, _ := created(t, c.req(ann, "POST", "/call", `{"subject":"standup","room":"r1"}`), "/call/")
		C := "/call/" + call

		w := c.dialAs(g, "$W", cat)
		wantCall(t, w, msg("SUBSCRIBE", C, 1, ""), okReply(1, `"epoch":"E"`))

		// A GET kept open of the call, as Server-Sent Events: the state,
		// then the same notifications.
		sse := c.openStream(C, append(c.headers(bob), "Accept: text/event-stream")...)
		if sse.Resp.StatusLine != "HTTP/1.1 200 OK" || sse.Resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("GET %s as an event stream: %s %v", C, sse.Resp.StatusLine, sse.Resp.Header)
		}
		if e := sse.event(); field(e.Data, "resource") != jsonString(C) || field(e.Data, "entity") != `{"subject":"standup","room":"r1"}` {
			t.Errorf("first event (the state): %v", e)
		}

		bp, _ := created(t, c.req(bob, "POST", C, `{"session":"sip:bob@desk"}`), C+"/")
		w.expect(joined(call, bp, "sip:bob@desk"))
		e := sse.event()
		if got, seq := withoutSeq(e.Data); got != joined(call, bp, "sip:bob@desk") || !e.HasID || eventIDSeq(e.ID) != seq {
			t.Errorf("event of the join: %v\nwant %s with <epoch>:<seq> as id", e, joined(call, bp, "sip:bob@desk"))
		}
		sse.conn.Close()
		cp, _ := created(t, c.req(cat, "POST", C, `{"session":"sip:cat@desk"}`), C+"/")
		w.expect(joined(call, cp, "sip:cat@desk"))
		if bp == cp {
			t.Fatalf("two participants with the id %q", bp)
		}

		for _, reader := range []who{ann, bob, cat, admin} {
			r := c.req(reader, "GET", C, "")
			if !status(t, r, "200 OK", false) {
				continue
			}
			o := parseObj(t, r.Body)
			o.want(t, "GET "+C+" as "+reader.email, []string{"subject", "room", "children"},
				"subject", `"standup"`, "room", `"r1"`,
				"children", `[{"url":`+jsonString(C+"/"+bp)+`,"session":"sip:bob@desk"},{"url":`+jsonString(C+"/"+cp)+`,"session":"sip:cat@desk"}]`)
		}
		c.expect(anon, "GET", C, "", "401 Unauthorized")
		c.expect(anon, "POST", C, `{"session":"sip:anon"}`, "401 Unauthorized")

		// Leaves: a participant by itself, seen by the subscriber.
		c.expect(bob, "DELETE", C+"/"+cp, "", "403 Forbidden")
		c.expect(anon, "DELETE", C+"/"+cp, "", "401 Unauthorized")
		r := c.req(cat, "DELETE", C+"/"+cp, "")
		status(t, r, "200 OK", false)
		parseObj(t, r.Body).want(t, "DELETE of a participant", nil)
		w.expect(left(call, cp))
		c.expect(cat, "DELETE", C+"/"+cp, "", "404 Not Found")
		c.expect(cat, "PUT", C+"/"+cp, `{}`, "404 Not Found")
		w.quiet()
		w.close()

		// Failures of a join.
		c.expect(cat, "POST", C, `{}`, "400 Missing Session")
		c.expect(cat, "POST", C, `{"url":"sip:x"}`, "400 Missing Session")
		c.expect(cat, "POST", C, `{"session":5}`, "400 Invalid Session")
		c.expect(cat, "POST", C, `not json`, "400 Invalid JSON content")
		c.expect(cat, "POST", "/call/nosuch", `{"session":"sip:cat@desk"}`, "404 Not Found")
		c.expect(ann, "POST", "/call", `[1]`, "400 Invalid JSON content")

		// Refreshes.
		r = c.req(bob, "PUT", C+"/"+bp, `{}`)
		status(t, r, "200 OK", false)
		parseObj(t, r.Body).want(t, "PUT of a participant", []string{"id", "url"}, "id", jsonString(bp), "url", jsonString(C+"/"+bp))
		c.expect(cat, "PUT", C+"/"+bp, `{}`, "403 Forbidden")
		c.expect(bob, "PUT", C, `{"subject":"hijack"}`, "403 Forbidden")
		c.expect(cat, "PUT", C, `{"subject":"hijack"}`, "403 Forbidden")
		c.expect(anon, "PUT", C, `{"subject":"hijack"}`, "401 Unauthorized")
		r = c.req(ann, "PUT", C, `{"subject":"retro"}`)
		status(t, r, "200 OK", false)
		parseObj(t, r.Body).want(t, "PUT of the call", []string{"id", "url"}, "id", jsonString(call), "url", jsonString(C))
		r = c.req(cat, "GET", C, "")
		status(t, r, "200 OK", false)
		parseObj(t, r.Body).want(t, "GET after the PUT", []string{"subject", "children"},
			"subject", `"retro"`, "children", `[{"url":`+jsonString(C+"/"+bp)+`,"session":"sip:bob@desk"}]`)
		r = c.req(admin, "PUT", C, `{"subject":"by admin"}`)
		status(t, r, "200 OK", false)
		c.expect(ann, "PUT", "/call/nosuch", `{}`, "404 Not Found")
		c.expect(ann, "PUT", C+"/nosuch", `{}`, "404 Not Found")
		c.expect(ann, "DELETE", C+"/nosuch", "", "404 Not Found")
		c.expect(ann, "GET", "/call/nosuch", "", "404 Not Found")
		c.expect(ann, "DELETE", "/call/nosuch", "", "404 Not Found")
		c.expect(ann, "GET", C+"/"+bp, "", "405 Method Not Allowed")
		c.expect(ann, "POST", C+"/"+bp, `{"session":"sip:x"}`, "405 Method Not Allowed")

		// The creator removes a participant; a subscriber sees it leave.
		v := c.dialAs(g, "$V", bob)
		wantCall(t, v, msg("SUBSCRIBE", C, 2, ""), okReply(2, `"epoch":"E"`))
		r = c.req(ann, "DELETE", C+"/"+bp, "")
		status(t, r, "200 OK", false)
		v.expect(left(call, bp))
		ap, _ := created(t, c.req(ann, "POST", C, `{"session":"sip:ann@desk"}`), C+"/")
		v.expect(joined(call, ap, "sip:ann@desk"))
		v.quiet()

		// The end of a call: not by others; by the creator, with its
		// participants.
		c.expect(bob, "DELETE", C, "", "403 Forbidden")
		c.expect(cat, "DELETE", C, "", "403 Forbidden")
		c.expect(anon, "DELETE", C, "", "401 Unauthorized")
		r = c.req(ann, "DELETE", C, "")
		status(t, r, "200 OK", false)
		parseObj(t, r.Body).want(t, "DELETE of the call", nil)
		until(v, "delete", jsonString(ap))
		c.expect(ann, "GET", C, "", "404 Not Found")
		c.expect(ann, "DELETE", C, "", "404 Not Found")
		c.expect(ann, "PUT", C+"/"+ap, `{}`, "404 Not Found")
		c.expect(admin, "GET", "/channel"+C+"/"+ap, "", "404 Not Found")

		// The administrator ends a call of someone else.
		other, _ := created(t, c.req(bob, "POST", "/call", `{"subject":"bob's"}`), "/call/")
		c.expect(ann, "DELETE", "/call/"+other, "", "403 Forbidden")
		c.expect(admin, "DELETE", "/call/"+other, "", "200 OK")
		c.expect(bob, "GET", "/call/"+other, "", "404 Not Found")
	})
}
