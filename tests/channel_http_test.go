package tests

import (
	"strconv"
	"strings"
	"testing"
)

// TestChannelHTTPDoor: GET, PUT, POST and DELETE under /channel/
// (docs/channel.md#the-http-door) with JSON bodies and status lines with reasons, private fields never
// sent back, 201 Created with Location and {"id"} for POST, and the same
// notifications to WebSocket subscribers as changes over the WebSocket.
func TestChannelHTTPDoor(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		g := clients(t, cs)
		root := "/" + uniq("http-")
		R := jsonString(root)
		w := g.dial("$W")
		w.call(`{"method":"SUBSCRIBE","resource":` + R + `,"msg_id":1}`)
		w.call(`{"method":"SUBSCRIBE","resource":"` + root + `/a","msg_id":2}`)

		wantHTTP(t, cs.httpJSON("PUT", "/channel"+root+"/a", `{"x": 1, "_p": 2, "y": [true]}`), "200 OK", "-")
		n := w.next()
		from := field(n, "from")
		if !strings.HasPrefix(from, `"`) || from == w.ID() {
			t.Errorf("from of an HTTP change: %s", n)
		}
		if got, _ := withoutSeq(n); got != `{"notify":"PUT","resource":"`+root+`/a","type":"application/json","entity":{"x":1,"y":[true]},"from":`+from+`,"seq":N}` {
			t.Errorf("PUT over HTTP: notification %s", n)
		}
		w.expect(`{"notify":"UPDATE","resource":` + R + `,"update":"a","type":"application/json","entity":{"x":1,"y":[true]},"seq":N}`)

		r := cs.httpJSON("GET", "/channel"+root+"/a", "")
		wantHTTP(t, r, "200 OK", `{"x":1,"y":[true]}`)
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("GET: Content-Type %q", ct)
		}
		wantHTTP(t, cs.httpJSON("GET", "/channel"+root+"/a%5By%5D", ""), "200 OK", `[true]`)
		wantHTTP(t, cs.httpJSON("GET", "/channel"+root+"?deep=0", ""), "200 OK", `{"count":1}`)
		wantHTTP(t, cs.httpJSON("GET", "/channel"+root+"/none", ""), "404 Not Found", "-")
		wantHTTP(t, cs.httpJSON("PUT", "/channel/"+strings.Repeat("s", 256), `{}`), "400 Invalid Resource", "-")
		if r := cs.httpJSON("PUT", "/channel"+root+"/bad", `{"x":`); !strings.HasPrefix(r.StatusLine, "HTTP/1.1 400 ") {
			t.Errorf("PUT of bad JSON: %s", r.StatusLine)
		}

		r = cs.httpJSON("POST", "/channel"+root, `{"t":"hi"}`)
		wantHTTP(t, r, "201 Created", "-")
		id := field(r.Body, "id")
		var plain string
		if len(id) > 2 {
			plain = id[1 : len(id)-1]
		}
		if r.Body != `{"id":`+id+`}` || plain == "" || strings.ContainsAny(plain, `/\"`) {
			t.Fatalf("POST: body %q", r.Body)
		}
		if loc := r.Header.Get("Location"); loc != "/channel"+root+"/"+plain {
			t.Errorf("POST: Location %q, want %q", loc, "/channel"+root+"/"+plain)
		}
		w.expect(`{"notify":"UPDATE","resource":` + R + `,"create":` + id + `,"type":"application/json","entity":{"t":"hi"},"seq":N}`)
		wantHTTP(t, cs.httpJSON("GET", r.Header.Get("Location"), ""), "200 OK", `{"t":"hi"}`)

		wantHTTP(t, cs.httpJSON("DELETE", "/channel"+root+"/a", ""), "200 OK", "-")
		n = w.next()
		from = field(n, "from")
		if got, _ := withoutSeq(n); got != `{"notify":"DELETE","resource":"`+root+`/a","type":null,"entity":null,"from":`+from+`,"seq":N}` || !strings.HasPrefix(from, `"`) {
			t.Errorf("DELETE over HTTP: notification %s", n)
		}
		w.expect(`{"notify":"UPDATE","resource":` + R + `,"delete":"a","type":null,"entity":null,"seq":N}`)
		wantHTTP(t, cs.httpJSON("DELETE", "/channel"+root+"/a", ""), "404 Not Found", "-")
		wantHTTP(t, cs.httpJSON("GET", "/channel"+root+"/a", ""), "404 Not Found", "-")
		w.quiet()

		// Over the WebSocket, the HTTP-created resources are there.
		if got, want := w.call(`{"method":"GET","resource":`+R+`,"msg_id":3}`),
			`{"msg_id":3,"code":"success","resource":`+R+`,"type":"application/json","entity":[`+id+`]}`; got != want {
			t.Errorf("GET over the WebSocket\n got %s\nwant %s", got, want)
		}
	})
}

// TestChannelExpires: a resource PUT over HTTP with ?expires=SECONDS is
// deleted, with notifications, when that time passes without a refresh.
func TestChannelExpires(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		g := clients(t, cs)
		root := "/" + uniq("lease-")
		R := jsonString(root)
		w := g.dial("$W")
		w.call(`{"method":"SUBSCRIBE","resource":` + R + `,"msg_id":1}`)
		wantHTTP(t, cs.httpJSON("PUT", "/channel"+root+"/stays", `{"s":1}`), "200 OK", "-")
		wantHTTP(t, cs.httpJSON("PUT", "/channel"+root+"/l?expires=1", `{"l":1}`), "200 OK", "-")
		w.expect(
			`{"notify":"UPDATE","resource":`+R+`,"update":"stays","type":"application/json","entity":{"s":1},"seq":N}`,
			`{"notify":"UPDATE","resource":`+R+`,"update":"l","type":"application/json","entity":{"l":1},"seq":N}`,
			`{"notify":"UPDATE","resource":`+R+`,"delete":"l","type":null,"entity":null,"seq":N}`)
		wantHTTP(t, cs.httpJSON("GET", "/channel"+root+"/l", ""), "404 Not Found", "-")
		wantHTTP(t, cs.httpJSON("GET", "/channel"+root+"/stays", ""), "200 OK", `{"s":1}`)
		wantHTTP(t, cs.httpJSON("PUT", "/channel"+root+"/x?expires=never", `{}`), "400 Invalid Expires", "-")
	})
}

// TestChannelSSE: a GET with Accept: text/event-stream is kept open: the
// current state first, then each change as the notification of docs/channel.md#the-websocket-door
// in an event whose id is "<epoch>:<seq>" (the epoch of SUBSCRIBE's
// reply); a new GET with Last-Event-ID resumes after that seq with
// exactly the changes missed.
func TestChannelSSE(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		g := clients(t, cs)
		a := g.dial("$A")
		p := "/" + uniq("sse-")
		P := jsonString(p)
		wantHTTP(t, cs.httpJSON("PUT", "/channel"+p, `{"v":1,"_p":0}`), "200 OK", "-")
		_, epoch := withoutEpoch(a.call(`{"method":"SUBSCRIBE","resource":"/` + uniq("ep-") + `","msg_id":"ep"}`))
		if epoch == "" {
			t.Fatal("SUBSCRIBE's reply carries no epoch")
		}

		s := cs.openStream("/channel"+p, "Accept: text/event-stream")
		if s.Resp.StatusLine != "HTTP/1.1 200 OK" || s.Resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%s %v", s.Resp.StatusLine, s.Resp.Header)
		}
		if e := s.event(); field(e.Data, "entity") != `{"v":1}` {
			t.Errorf("first event (the state): %v", e)
		}
		put := func(v int) {
			a.call(`{"method":"PUT","resource":` + P + `,"entity":{"v":` + strconv.Itoa(v) + `},"msg_id":"put"}`)
		}
		notification := func(v int) string {
			return `{"notify":"PUT","resource":` + P + `,"type":"application/json","entity":{"v":` + strconv.Itoa(v) + `},"from":$A,"seq":N}`
		}
		// check reads one event and compares it with the notification of
		// v, its id with its seq; it returns the id.
		check := func(s *stream, v int) string {
			t.Helper()
			e := s.event()
			got, seq := withoutSeq(e.Data)
			if want := g.fill(notification(v)); got != want {
				t.Errorf("event\n got %v\nwant %s", e, want)
			}
			if !e.HasID || e.ID != epoch+":"+strconv.FormatUint(seq, 10) {
				t.Errorf("event id %q, seq %d, epoch %s", e.ID, seq, epoch)
			}
			return e.ID
		}
		put(2)
		id2 := check(s, 2)
		put(3)
		id3 := check(s, 3)
		if n2, n3 := atou(id2), atou(id3); n3 <= n2 {
			t.Errorf("event ids %s then %s", id2, id3)
		}
		s.conn.Close()

		// Missed while away: 4 and 5.
		put(4)
		put(5)
		r := cs.openStream("/channel"+p, "Accept: text/event-stream", "Last-Event-ID: "+id3)
		if r.Resp.StatusLine != "HTTP/1.1 200 OK" {
			t.Fatalf("resume: %s", r.Resp.StatusLine)
		}
		check(r, 4)
		check(r, 5)
		put(6)
		check(r, 6)
	})
}

// atou returns the number s holds, or the seq of an event id
// "<epoch>:<seq>"; 0 when it holds none.
func atou(s string) uint64 {
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		s = s[i+1:]
	}
	n, _ := strconv.ParseUint(s, 10, 64)
	return n
}

// TestChannelNDJSON: a GET with ?watch (no SSE Accept) streams
// newline-delimited JSON: the state, then the notifications (watch and
// watch=diff), or the whole state again after each change (watch=full);
// a watch on a parent sees its children's UPDATEs.
func TestChannelNDJSON(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		g := clients(t, cs)
		a := g.dial("$A")
		root := "/" + uniq("nd-")
		p := root + "/n"
		P := jsonString(p)
		wantHTTP(t, cs.httpJSON("PUT", "/channel"+p, `{"v":0}`), "200 OK", "-")

		var diff, plain, full, parent *stream
		for _, st := range []struct {
			s     **stream
			query string
		}{{&plain, p + "?watch"}, {&diff, p + "?watch=diff"}, {&full, p + "?watch=full"}, {&parent, root + "?watch"}} {
			*st.s = cs.openStream("/channel" + st.query)
			s := *st.s
			if s.Resp.StatusLine != "HTTP/1.1 200 OK" || s.Resp.Header.Get("Content-Type") != "application/x-ndjson" {
				t.Fatalf("%s: %s %v", st.query, s.Resp.StatusLine, s.Resp.Header)
			}
		}
		for _, s := range []*stream{plain, diff, full} {
			if l := s.line(); field(l, "entity") != `{"v":0}` {
				t.Errorf("first line (the state): %s", l)
			}
		}
		if l := parent.line(); field(l, "entity") != `["n"]` {
			t.Errorf("first line of the parent (child ids): %s", l)
		}
		for v := 1; v <= 2; v++ {
			a.call(`{"method":"PUT","resource":` + P + `,"entity":{"v":` + strconv.Itoa(v) + `},"msg_id":"put"}`)
			want := g.fill(`{"notify":"PUT","resource":` + P + `,"type":"application/json","entity":{"v":` + strconv.Itoa(v) + `},"from":$A,"seq":N}`)
			for _, s := range []*stream{plain, diff} {
				if got, _ := withoutSeq(s.line()); got != want {
					t.Errorf("diff line\n got %s\nwant %s", got, want)
				}
			}
			if l := full.line(); field(l, "entity") != `{"v":`+strconv.Itoa(v)+`}` || field(l, "notify") != "" {
				t.Errorf("full line after v=%d: %s", v, l)
			}
			want = `{"notify":"UPDATE","resource":` + jsonString(root) + `,"update":"n","type":"application/json","entity":{"v":` + strconv.Itoa(v) + `},"seq":N}`
			if got, _ := withoutSeq(parent.line()); got != want {
				t.Errorf("parent line\n got %s\nwant %s", got, want)
			}
		}
		wantHTTP(t, cs.httpJSON("GET", "/channel"+p+"?watch=sometimes", ""), "400 Invalid Watch", "-")
	})
}
