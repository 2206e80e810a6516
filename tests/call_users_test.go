package tests

import (
	"testing"
)

// TestCallUsers: the rows of docs/call.md#users-and-inboxes: POST /user
// with the caller's own e-mail (any for the administrator; 403 otherwise,
// 400 Missing Email without it), GET /user/<id> with the record's fields
// then url, login and message, messages left by anyone (400 Missing Url
// without url) and read and deleted only by that user and the
// administrator, DELETE of the record by them; users and messages survive
// a restart; unknown ones are 404, other methods 405.
func TestCallUsers(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		c := startCall(t, m)

		c.expect(anon, "POST", "/user", `{"email":"ann@example.org"}`, "401 Unauthorized")
		c.expect(bob, "POST", "/user", `{"email":"ann@example.org"}`, "403 Forbidden")
		c.expect(ann, "POST", "/user", `{"name":"Ann"}`, "400 Missing Email")
		c.expect(ann, "POST", "/user", `{}`, "400 Missing Email")
		c.expect(ann, "POST", "/user", `{"email":5}`, "400 Invalid Email")
		c.expect(ann, "POST", "/user", `{"email":`, "400 Invalid JSON content")
		uid, _ := created(t, c.req(ann, "POST", "/user", `{"email":"ann@example.org","name":"Ann","tags":["a",1]}`), "/user/")
		zid, _ := created(t, c.req(admin, "POST", "/user", `{"email":"zed@example.org"}`), "/user/")
		U := "/user/" + uid

		record := func(w who) {
			t.Helper()
			r := c.req(w, "GET", U, "")
			if !status(t, r, "200 OK", false) {
				return
			}
			parseObj(t, r.Body).want(t, "GET "+U+" as "+w.email,
				[]string{"email", "name", "tags", "url", "login", "message"},
				"email", `"ann@example.org"`, "name", `"Ann"`, "tags", `["a",1]`,
				"url", jsonString(U), "login", `"/login/ann@example.org"`, "message", jsonString(U+"/message"))
		}
		for _, w := range []who{ann, bob, cat, admin} {
			record(w)
		}
		r := c.req(cat, "GET", "/user/"+zid, "")
		status(t, r, "200 OK", false)
		parseObj(t, r.Body).want(t, "GET of zed", []string{"email", "url", "login", "message"},
			"email", `"zed@example.org"`, "login", `"/login/zed@example.org"`)
		c.expect(anon, "GET", U, "", "401 Unauthorized")
		c.expect(ann, "GET", "/user/nosuch", "", "404 Not Found")
		c.expect(ann, "DELETE", "/user/nosuch", "", "404 Not Found")
		c.expect(ann, "GET", "/user", "", "405 Method Not Allowed")
		c.expect(ann, "POST", U, `{}`, "405 Method Not Allowed")
		c.expect(ann, "GET", U+"/message/x/y", "", "404 Not Found")

		// Messages: anyone leaves one; only ann and the administrator read
		// and delete them.
		M := U + "/message"
		c.expect(bob, "POST", M, `{"text":"no url"}`, "400 Missing Url")
		c.expect(bob, "POST", M, `{"url":7}`, "400 Invalid Url")
		c.expect(bob, "POST", M, `nope`, "400 Invalid JSON content")
		c.expect(anon, "POST", M, `{"url":"/call/1"}`, "401 Unauthorized")
		c.expect(bob, "POST", "/user/nosuch/message", `{"url":"/call/1"}`, "404 Not Found")
		m1, _ := created(t, c.req(bob, "POST", M, `{"url":"/call/1","text":"call me"}`), M+"/")
		m2, _ := created(t, c.req(cat, "POST", M, `{"url":"/call/2"}`), M+"/")
		if m1 == m2 {
			t.Fatalf("two messages with the id %q", m1)
		}
		inbox := func(w who) []jobj {
			t.Helper()
			r := c.req(w, "GET", M, "")
			status(t, r, "200 OK", true)
			return parseList(t, r.Body)
		}
		for _, w := range []who{ann, admin} {
			got := inbox(w)
			if len(got) != 2 {
				t.Fatalf("GET %s as %s: %d messages, want 2", M, w.email, len(got))
			}
			got[0].want(t, "message 1", []string{"id", "from", "url", "text"},
				"id", jsonString(m1), "from", `"bob@example.org"`, "url", `"/call/1"`, "text", `"call me"`)
			got[1].want(t, "message 2", []string{"id", "from", "url"},
				"id", jsonString(m2), "from", `"cat@example.org"`, "url", `"/call/2"`)
		}
		c.expect(bob, "GET", M, "", "403 Forbidden")
		c.expect(anon, "GET", M, "", "401 Unauthorized")
		c.expect(bob, "DELETE", M+"/"+m1, "", "403 Forbidden")
		c.expect(cat, "DELETE", M+"/"+m2, "", "403 Forbidden")

		// A restart keeps users and messages.
		c.restart()
		record(cat)
		if got := inbox(ann); len(got) != 2 || got[0].compact("id") != jsonString(m1) || got[1].compact("id") != jsonString(m2) {
			t.Errorf("the inbox after a restart: %v", got)
		}

		r = c.req(ann, "DELETE", M+"/"+m1, "")
		status(t, r, "200 OK", false)
		parseObj(t, r.Body).want(t, "DELETE of a message", nil)
		c.expect(admin, "DELETE", M+"/"+m2, "", "200 OK")
		c.expect(ann, "DELETE", M+"/"+m1, "", "404 Not Found")
		if got := inbox(ann); len(got) != 0 {
			t.Errorf("the inbox after the DELETEs: %v", got)
		}
		if r := c.req(ann, "GET", M, ""); r.Body != "[]" {
			t.Errorf("an empty inbox: %q, want []", r.Body)
		}

		// The record: not deleted by others; by ann, then gone.
		c.expect(bob, "DELETE", U, "", "403 Forbidden")
		c.expect(anon, "DELETE", U, "", "401 Unauthorized")
		r = c.req(ann, "DELETE", U, "")
		status(t, r, "200 OK", false)
		parseObj(t, r.Body).want(t, "DELETE of the record", nil)
		c.expect(cat, "GET", U, "", "404 Not Found")
		c.expect(ann, "DELETE", U, "", "404 Not Found")
		c.expect(cat, "POST", M, `{"url":"/call/3"}`, "404 Not Found")
		c.expect(admin, "DELETE", "/user/"+zid, "", "200 OK")
	})
}
