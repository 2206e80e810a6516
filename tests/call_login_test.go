package tests

import (
	"strings"
	"testing"
)

// TestCallLogins: the rows of docs/call.md#logins-and-contacts: POST
// registers a contact (201 Created, Location, {"url", "id", "expires"},
// 3,600 s without expires), GET lists the live ones in registration order,
// PUT refreshes with a JSON body or the contact as a text body, DELETE
// removes; only the user and the administrator do so (403 for another
// user, 401 with the challenge without credentials); the failures Missing
// Contact, Invalid Contact, Invalid Expires, Invalid JSON content, 404 of
// an unknown contact and of a path of another shape, 405 of a method the
// resource does not have; GET of one contact; the e-mail of the path is percent-decoded.
func TestCallLogins(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		c := startCall(t, m)
		L := login(ann)

		// Without credentials: 401 with the challenge, on every method.
		c.expect(anon, "GET", L, "", "401 Unauthorized")
		c.expect(anon, "POST", L, `{"contact":"sip:x"}`, "401 Unauthorized")

		a1 := c.register(ann, ann, "sip:ann@desk", "", "3600")
		a2 := c.register(ann, ann, "sip:ann@phone", "120", "120")
		if a1 == a2 {
			t.Fatalf("two contacts with the id %q", a1)
		}
		// The administrator registers for anyone; the e-mail of the path is
		// percent-decoded.
		a3, _ := created(t, c.req(admin, "POST", "/login/ann%40example.org", `{"contact":"sip:ann@admin","expires":60}`), L+"/", "expires")

		list := c.contacts(ann, ann)
		if len(list) != 3 {
			t.Fatalf("GET %s: %d contacts, want 3", L, len(list))
		}
		keys := []string{"id", "contact", "expires"}
		list[0].want(t, "contact 1", keys, "id", jsonString(a1), "contact", `"sip:ann@desk"`, "expires", "3600")
		list[1].want(t, "contact 2", keys, "id", jsonString(a2), "contact", `"sip:ann@phone"`, "expires", "120")
		list[2].want(t, "contact 3", keys, "id", jsonString(a3), "contact", `"sip:ann@admin"`, "expires", "60")
		// The session cookies of a Basic login are credentials too.
		r := c.get(t, "/private/x", authBasic(ann.email, ann.password))
		tok, uid := cookieNamed(r, "token"), cookieNamed(r, "user_id")
		if r.StatusLine != "HTTP/1.1 200 OK" || tok == nil || uid == nil {
			t.Fatalf("a Basic login: %s, Set-Cookie %q", r.StatusLine, r.Header.Values("Set-Cookie"))
		}
		r = c.get(t, L, authCookies(uid.Value, tok.Value))
		status(t, r, "200 OK", false)
		if got := parseList(t, r.Body); len(got) != 3 {
			t.Errorf("GET %s with the session cookies: %d contacts, want 3", L, len(got))
		}
		if got := c.contacts(admin, ann); len(got) != 3 {
			t.Errorf("GET %s as the administrator: %d contacts, want 3", L, len(got))
		}

		// Refresh: a JSON body, then the contact as a text body.
		r = c.req(ann, "PUT", L+"/"+a2, `{"expires":300}`)
		status(t, r, "200 OK", false)
		parseObj(t, r.Body).want(t, "PUT with expires", []string{"url", "id", "expires"},
			"url", jsonString(L+"/"+a2), "id", jsonString(a2), "expires", "300")
		if list := c.contacts(ann, ann); len(list) != 3 || list[1].compact("expires") != "300" {
			t.Errorf("the listing after a refresh for 300 s: %v", list)
		}
		r = c.req(ann, "PUT", L+"/"+a3, `{"contact":"sip:ann@laptop","expires":45}`)
		status(t, r, "200 OK", false)
		parseObj(t, r.Body).want(t, "PUT with contact and expires", []string{"url", "id", "expires"},
			"url", jsonString(L+"/"+a3), "id", jsonString(a3), "expires", "45")
		if list := c.contacts(ann, ann); len(list) != 3 || list[2].compact("contact") != `"sip:ann@laptop"` || list[2].compact("expires") != "45" {
			t.Errorf("the listing after a refresh with a new contact: %v", list)
		}
		c.expect(ann, "PUT", L+"/"+a3, `{"contact":7}`, "400 Invalid Contact")
		r = c.do(t, "PUT", L+"/"+a2, "sip:ann@tablet", append(c.headers(ann), "Content-Type: text/plain")...)
		status(t, r, "200 OK", false)
		parseObj(t, r.Body).want(t, "PUT of a text body", []string{"url", "id", "expires"},
			"url", jsonString(L+"/"+a2), "id", jsonString(a2), "expires", "*")
		list = c.contacts(ann, ann)
		if len(list) != 3 || list[1].compact("contact") != `"sip:ann@tablet"` || list[1].compact("id") != jsonString(a2) {
			t.Errorf("after the refreshes: %v", list)
		}

		// Another user may not touch ann's logins.
		for _, w := range []who{bob, cat} {
			c.expect(w, "GET", L, "", "403 Forbidden")
			c.expect(w, "POST", L, `{"contact":"sip:intruder"}`, "403 Forbidden")
			c.expect(w, "PUT", L+"/"+a1, `{"expires":10}`, "403 Forbidden")
			c.expect(w, "DELETE", L+"/"+a1, "", "403 Forbidden")
		}
		c.expect(anon, "PUT", L+"/"+a1, `{"expires":10}`, "401 Unauthorized")
		c.expect(anon, "DELETE", L+"/"+a1, "", "401 Unauthorized")

		// Bodies.
		c.expect(ann, "POST", L, `{}`, "400 Missing Contact")
		c.expect(ann, "POST", L, `{"expires":60}`, "400 Missing Contact")
		c.expect(ann, "POST", L, `{"contact":5}`, "400 Invalid Contact")
		for _, e := range []string{`0`, `-1`, `"60"`, `1.5`, `null`} {
			c.expect(ann, "POST", L, `{"contact":"sip:x","expires":`+e+`}`, "400 Invalid Expires")
		}
		c.expect(ann, "PUT", L+"/"+a1, `{"expires":0}`, "400 Invalid Expires")
		for _, b := range []string{`{"contact":`, `not json`, `[1,2]`, `"sip:x"`} {
			c.expect(ann, "POST", L, b, "400 Invalid JSON content")
		}

		// Remove.
		r = c.req(ann, "DELETE", L+"/"+a1, "")
		status(t, r, "200 OK", false)
		parseObj(t, r.Body).want(t, "DELETE", nil)
		r = c.req(admin, "DELETE", L+"/"+a3, "")
		status(t, r, "200 OK", false)
		list = c.contacts(ann, ann)
		if len(list) != 1 || list[0].compact("id") != jsonString(a2) {
			t.Errorf("after two DELETEs: %v", list)
		}

		// Unknown contacts, other shapes, other methods.
		c.expect(ann, "DELETE", L+"/"+a1, "", "404 Not Found")
		c.expect(ann, "PUT", L+"/"+a1, `{"expires":60}`, "404 Not Found")
		c.expect(ann, "PUT", L+"/nosuch", `{"expires":60}`, "404 Not Found")
		c.expect(ann, "GET", L+"/"+a2+"/more", "", "404 Not Found")
		c.expect(ann, "GET", "/login/a/b/c", "", "404 Not Found")
		c.expect(ann, "PUT", L, `{"contact":"sip:x"}`, "405 Method Not Allowed")
		c.expect(ann, "DELETE", L, "", "405 Method Not Allowed")
		// GET of one contact: {"id", "contact", "expires"}, for the user and
		// the administrator.
		for _, w := range []who{ann, admin} {
			r = c.req(w, "GET", L+"/"+a2, "")
			if status(t, r, "200 OK", false) {
				parseObj(t, r.Body).want(t, "GET of a contact as "+w.email, []string{"id", "contact", "expires"},
					"id", jsonString(a2), "contact", `"sip:ann@tablet"`, "expires", "*")
			}
		}
		c.expect(bob, "GET", L+"/"+a2, "", "403 Forbidden")
		c.expect(anon, "GET", L+"/"+a2, "", "401 Unauthorized")
		c.expect(ann, "GET", L+"/"+a1, "", "404 Not Found")
		c.expect(ann, "SEND", L+"/"+a2, invite("/call/1", "i1"), "405 Method Not Allowed")
		c.expect(ann, "POST", L+"/"+a2, `{"contact":"sip:x"}`, "405 Method Not Allowed")
		c.expect(ann, "CANCEL", L, "", "405 Method Not Allowed")

		// bob's own list: created by his first request, empty.
		if got := c.contacts(bob, bob); len(got) != 0 {
			t.Errorf("GET %s: %v, want []", login(bob), got)
		}
		if r := c.req(bob, "GET", login(bob), ""); r.Body != "[]" {
			t.Errorf("GET %s: body %q, want []", login(bob), r.Body)
		}
	})
}

// TestCallForeignMethods: SEND and CANCEL anywhere but /login/ are 404 Not
// Found, like any method no route lists; so are paths of another shape.
func TestCallForeignMethods(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		c := startCall(t, m)
		c.register(ann, ann, "sip:ann@desk", "", "3600")
		id, _ := created(t, c.req(ann, "POST", "/call", `{"subject":"s"}`), "/call/")
		for _, target := range []string{"/call/x", "/call/" + id, "/call", "/config", "/user", "/files/sub", "/channel/x"} {
			c.expect(ann, "SEND", target, invite("/call/x", "i1"), "404 Not Found")
			c.expect(ann, "CANCEL", target, "", "404 Not Found")
		}
		c.expect(ann, "GET", "/call/a/b/c", "", "404 Not Found")
		c.expect(ann, "PUT", "/call/a/b/c", `{}`, "404 Not Found")
		c.expect(ann, "GET", "/call", "", "405 Method Not Allowed")
		c.expect(ann, "DELETE", "/call", "", "405 Method Not Allowed")
		c.expect(ann, "GET", "/user", "", "405 Method Not Allowed")
	})
}

// TestCallRepresentations: the /xml/ and /plain/ prefixes answer the same
// resources as XML and plain text (docs/wire.md#xml).
func TestCallRepresentations(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		c := startCall(t, m)
		a1 := c.register(ann, ann, "sip:ann@desk", "90", "90")

		r := c.req(ann, "GET", "/xml"+login(ann), "")
		wantHTTP(t, r, "200 OK", "-")
		if ct := r.Header.Get("Content-Type"); ct != "text/xml" {
			t.Errorf("GET /xml%s: Content-Type %q", login(ann), ct)
		}
		wellFormedXML(t, r.Body)
		for _, part := range []string{"<id>" + a1 + "</id>", "<contact>sip:ann@desk</contact>", "<expires>90</expires>"} {
			if !strings.Contains(r.Body, part) {
				t.Errorf("GET /xml%s: %q lacks %q", login(ann), r.Body, part)
			}
		}

		// POST /xml/login/<email>: 201 Created in XML.
		r = c.req(ann, "POST", "/xml"+login(ann), `{"contact":"sip:ann@xml","expires":30}`)
		wantHTTP(t, r, "201 Created", "-")
		if ct := r.Header.Get("Content-Type"); ct != "text/xml" {
			t.Errorf("POST /xml%s: Content-Type %q", login(ann), ct)
		}
		wellFormedXML(t, r.Body)
		if !strings.Contains(r.Body, "<expires>30</expires>") || !strings.Contains(r.Body, "<url>"+login(ann)+"/") {
			t.Errorf("POST /xml%s: %q", login(ann), r.Body)
		}

		call, _ := created(t, c.req(ann, "POST", "/call", `{"subject":"a & b"}`), "/call/")
		created(t, c.req(bob, "POST", "/call/"+call, `{"session":"sip:bob@desk"}`), "/call/"+call+"/")
		r = c.req(cat, "GET", "/xml/call/"+call, "")
		wantHTTP(t, r, "200 OK", "-")
		if ct := r.Header.Get("Content-Type"); ct != "text/xml" {
			t.Errorf("GET /xml/call: Content-Type %q", ct)
		}
		wellFormedXML(t, r.Body)
		for _, part := range []string{"<subject>a &amp; b</subject>", "<session>sip:bob@desk</session>", "<url>/call/" + call + "/"} {
			if !strings.Contains(r.Body, part) {
				t.Errorf("GET /xml/call/%s: %q lacks %q", call, r.Body, part)
			}
		}
		r = c.req(cat, "GET", "/plain/call/"+call, "")
		wantHTTP(t, r, "200 OK", "-")
		if ct := r.Header.Get("Content-Type"); ct != "text/plain" {
			t.Errorf("GET /plain/call: Content-Type %q", ct)
		}
		if !strings.Contains(r.Body, "subject: a & b\n") || !strings.Contains(r.Body, "session: sip:bob@desk\n") || !strings.HasSuffix(r.Body, "\n") {
			t.Errorf("GET /plain/call/%s: %q", call, r.Body)
		}

		r = c.req(ann, "POST", "/xml/user", `{"email":"ann@example.org"}`)
		wantHTTP(t, r, "201 Created", "-")
		if ct := r.Header.Get("Content-Type"); ct != "text/xml" {
			t.Errorf("POST /xml/user: Content-Type %q", ct)
		}
		wellFormedXML(t, r.Body)
		if loc := r.Header.Get("Location"); !strings.HasPrefix(loc, "/user/") || !strings.Contains(r.Body, "<url>"+loc+"</url>") {
			t.Errorf("POST /xml/user: Location %q, body %q", loc, r.Body)
		}
	})
}
