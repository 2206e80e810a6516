package tests

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Black-box tests of the bundled call-control plugin "call"
// (docs/call.md): the helpers of the tests of call_*_test.go.
//
// Every test starts reso with ann, bob and cat registered (startRules) and
// talks to the routes /login/, /call and /user as one of them, as the
// administrator or without credentials, over raw connections so that the
// status lines are exact.

// The flags of the call plugin (docs/call.md#flags).
const (
	flagCallMaxExpires = "-call-max-expires"
	flagCallWait       = "-call-wait"
)

// callServer is a reso with ann, bob and cat registered and the
// administrator's cookie at hand.
type callServer struct {
	*rulesServer
}

// startCall starts reso in mode m for a call test.
func startCall(t *testing.T, m mode, args ...string) *callServer {
	t.Helper()
	return &callServer{startRules(t, m, args...)}
}

// req sends method target as w, with a JSON body when body is not "".
func (c *callServer) req(w who, method, target, body string, headers ...string) response {
	c.t.Helper()
	return c.httpJSON(method, target, body, append(c.headers(w), headers...)...)
}

// login is the path of the logins of w.
func login(w who) string { return "/login/" + w.email }

// jobj is a JSON object with its keys in the order sent.
type jobj struct {
	keys []string
	vals map[string]json.RawMessage
}

// parseObj reads a JSON object keeping the order of its keys, failing the
// test when body is none.
func parseObj(t testing.TB, body string) jobj {
	t.Helper()
	o, err := decodeObj([]byte(body))
	if err != nil {
		t.Fatalf("body %q: not a JSON object: %v", body, err)
	}
	return o
}

func decodeObj(data []byte) (jobj, error) {
	o := jobj{vals: map[string]json.RawMessage{}}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return o, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return o, &json.UnmarshalTypeError{Value: "not an object"}
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return o, err
		}
		k := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return o, err
		}
		o.keys = append(o.keys, k)
		o.vals[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return o, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return o, &json.UnmarshalTypeError{Value: "more after the object"}
	}
	return o, nil
}

// parseList reads a JSON array of objects.
func parseList(t testing.TB, body string) []jobj {
	t.Helper()
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(body), &raws); err != nil || raws == nil {
		t.Fatalf("body %q: not a JSON array: %v", body, err)
	}
	out := make([]jobj, len(raws))
	for i, r := range raws {
		o, err := decodeObj(r)
		if err != nil {
			t.Fatalf("item %d of %q: not a JSON object: %v", i, body, err)
		}
		out[i] = o
	}
	return out
}

// str returns the string value of key ("" and false when absent or not a
// string).
func (o jobj) str(key string) (string, bool) {
	var s string
	if json.Unmarshal(o.vals[key], &s) != nil {
		return "", false
	}
	return s, true
}

// compact returns the value of key as compact JSON ("<absent>" when absent).
func (o jobj) compact(key string) string {
	v, ok := o.vals[key]
	if !ok {
		return "<absent>"
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// want checks the keys of o, in order, and the compact JSON of the values
// given as key, value pairs ("*" for a value not checked).
func (o jobj) want(t testing.TB, what string, keys []string, pairs ...string) {
	t.Helper()
	if !slices.Equal(o.keys, keys) {
		t.Errorf("%s: keys %q, want %q", what, o.keys, keys)
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "*" {
			continue
		}
		if got := o.compact(pairs[i]); got != pairs[i+1] {
			t.Errorf("%s: %s is %s, want %s", what, pairs[i], got, pairs[i+1])
		}
	}
}

// status checks the status line of r, failing the test at once when
// fatal; on a success it also checks that the answer is JSON.
func status(t testing.TB, r response, want string, fatal bool) bool {
	t.Helper()
	if r.StatusLine != "HTTP/1.1 "+want {
		f := t.Errorf
		if fatal {
			f = t.Fatalf
		}
		f("status %q, want %q (body %q)", r.StatusLine, "HTTP/1.1 "+want, r.Body)
		return false
	}
	if strings.HasPrefix(want, "2") {
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q, want application/json", want, ct)
		}
	}
	return true
}

// expect sends a request as w and checks only its status line.
func (c *callServer) expect(w who, method, target, body, want string) response {
	c.t.Helper()
	r := c.req(w, method, target, body)
	if r.StatusLine != "HTTP/1.1 "+want {
		c.t.Errorf("%s %s %s as %s: status %q, want %q (body %q)", method, target, body, w.email, r.StatusLine, "HTTP/1.1 "+want, r.Body)
	}
	if strings.HasPrefix(want, "401") {
		if ch := r.Header.Values("Www-Authenticate"); len(ch) == 0 || !strings.HasPrefix(ch[0], "Basic realm=") {
			c.t.Errorf("%s %s: 401 with WWW-Authenticate %q, want the challenge", method, target, ch)
		}
	}
	return r
}

// created checks a 201 Created of a POST: Location and {"id", "url"} with
// url = prefix + id (plus the other keys given, in order, after them);
// it returns id and the object.
func created(t testing.TB, r response, prefix string, more ...string) (string, jobj) {
	t.Helper()
	status(t, r, "201 Created", true)
	o := parseObj(t, r.Body)
	id, ok := o.str("id")
	if !ok || id == "" || strings.ContainsAny(id, "/?#%") {
		t.Fatalf("201 Created: id %s in %q", o.compact("id"), r.Body)
	}
	u, _ := o.str("url")
	if u != prefix+id {
		t.Errorf("201 Created: url %s, want %q (body %q)", o.compact("url"), prefix+id, r.Body)
	}
	if loc := r.Header.Get("Location"); loc != prefix+id {
		t.Errorf("201 Created: Location %q, want %q", loc, prefix+id)
	}
	if len(more) == 0 {
		if !slices.Equal(o.keys, []string{"id", "url"}) && !slices.Equal(o.keys, []string{"url", "id"}) {
			t.Errorf("201 Created: keys %q, want id and url", o.keys)
		}
	}
	return id, o
}

// register registers contact for w as caller (with the expires field when
// expires is not "") and checks the answer {"url", "id", "expires"}; it
// returns the contact's id.
func (c *callServer) register(caller, w who, contact, expires, granted string) string {
	c.t.Helper()
	body := `{"contact":` + jsonString(contact)
	if expires != "" {
		body += `,"expires":` + expires
	}
	body += "}"
	id, o := created(c.t, c.req(caller, "POST", login(w), body), login(w)+"/", "expires")
	o.want(c.t, "POST "+login(w), []string{"url", "id", "expires"}, "expires", granted)
	return id
}

// contacts returns GET /login/<email> as w: the live contacts.
func (c *callServer) contacts(caller, w who) []jobj {
	c.t.Helper()
	r := c.req(caller, "GET", login(w), "")
	status(c.t, r, "200 OK", true)
	return parseList(c.t, r.Body)
}

// send sends SEND /login/<target> with body as from and checks the
// status; on 200 or 202 it returns the message id.
func (c *callServer) send(from, target who, body, want string) string {
	c.t.Helper()
	r := c.req(from, "SEND", login(target), body)
	if !status(c.t, r, want, false) || !strings.HasPrefix(want, "20") {
		return ""
	}
	o := parseObj(c.t, r.Body)
	id, ok := o.str("id")
	if !ok || id == "" || !slices.Equal(o.keys, []string{"id"}) {
		c.t.Fatalf("SEND %s: body %q, want {\"id\": \"<message id>\"}", login(target), r.Body)
	}
	return id
}

// invitation is the notification a session of target gets for a SEND of
// body (compact JSON, as sent) by from, seq replaced by N.
func invitation(target, from who, body string) string {
	return `{"notify":"NOTIFY","resource":` + jsonString(login(target)) + `,"data":` + body + `,"from":` + jsonString(from.email) + `,"seq":N}`
}

// invite returns an invitation body to call.
func invite(call, id string) string {
	return `{"command":"invite","url":` + jsonString(call) + `,"id":` + jsonString(id) + `}`
}

// watch opens the GET kept open of /login/<email> of w as caller (NDJSON,
// watch=diff) and checks its state: {"email": "<email>"}.
func (c *callServer) watch(caller, w who) *stream {
	c.t.Helper()
	s := c.openStream(login(w)+"?watch=diff", c.headers(caller)...)
	if s.Resp.StatusLine != "HTTP/1.1 200 OK" || s.Resp.Header.Get("Content-Type") != "application/x-ndjson" {
		c.t.Fatalf("GET %s?watch=diff: %s %v", login(w), s.Resp.StatusLine, s.Resp.Header)
	}
	st := parseObj(c.t, s.line())
	st.want(c.t, "the state of "+login(w), []string{"resource", "type", "entity"},
		"resource", jsonString(login(w)), "entity", `{"email":`+jsonString(w.email)+`}`)
	return s
}

// wantLine reads the next line of s and compares it, seq replaced by N.
func wantLine(t testing.TB, s *stream, what, want string) {
	t.Helper()
	if got, seq := withoutSeq(s.line()); got != want || seq == 0 {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// until reads frames of c until one has key with the value want (compact
// JSON), and returns it; the others are dropped.
func until(c *wsClient, key, want string) string {
	c.t.Helper()
	for {
		f := c.next()
		if field(f, key) == want {
			return f
		}
	}
}

// lineUntil is until for a stream.
func lineUntil(s *stream, key, want string) string {
	s.t.Helper()
	for {
		l := s.line()
		if field(l, key) == want {
			return l
		}
	}
}

// wellFormedXML checks that an XML fragment parses inside a root element.
func wellFormedXML(t testing.TB, body string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader("<root>" + body + "</root>"))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Errorf("XML %q: %v", body, err)
			return
		}
	}
}

// itoa is strconv.Itoa.
func itoa(n int) string { return strconv.Itoa(n) }
