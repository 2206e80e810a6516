package doors_test

import (
	"strings"
	"testing"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	channelplugin "github.com/reso-project/reso/plugins/channel"
)

// TestDoorsOnTheTree runs the doors on package channel's tree: the
// session door, the HTTP door and the GET kept open see each other's
// changes with the shapes of docs/channel.md#the-websocket-door and §4.
func TestDoorsOnTheTree(t *testing.T) {
	tr, err := channel.New(t.Context(), nil, channel.Options{Epoch: "e1"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	s := newServerOn(t, channelhost.TreeOf(tr), channelplugin.New())
	a, doneA := s.session(t, "X-User", "ann@example.com")
	send(t, a, `{"method":"SUBSCRIBE","resource":"/room","msg_id":1}`)
	expect(t, a, `{"msg_id":1,"code":"success","epoch":"e1"}`)
	send(t, a, `{"method":"PUT","resource":"/room/ann","msg_id":2,"entity":{"name":"Ann"}}`)
	expect(t, a, `{"notify":"UPDATE","resource":"/room","update":"ann","type":"application/json","entity":{"name":"Ann"},"seq":1}`)
	expect(t, a, `{"msg_id":2,"code":"success"}`)

	st := s.watch(t, "/channel/room?watch")
	if l := st.line(t); l != `{"resource":"/room","type":"application/json","entity":["ann"]}` {
		t.Errorf("state %s", l)
	}
	status, h, body := s.do(t, "POST", "/channel/room", `{"text":"hi"}`)
	if status != "HTTP/1.1 201 Created" || !strings.HasPrefix(h.Get("Location"), "/channel/room/") || !strings.HasPrefix(body, `{"id":`) {
		t.Errorf("POST: %s %q %s", status, h.Get("Location"), body)
	}
	if l := st.line(t); !strings.HasPrefix(l, `{"notify":"UPDATE","resource":"/room","create":`) {
		t.Errorf("stream after POST %s", l)
	}
	m, err := a.Recv(t.Context())
	if err != nil || !strings.HasPrefix(string(m.Data), `{"notify":"UPDATE","resource":"/room","create":`) {
		t.Errorf("session after POST %s %v", m.Data, err)
	}
	status, _, body = s.do(t, "GET", "/channel/room/ann", "")
	if status != "HTTP/1.1 200 OK" || body != `{"name":"Ann"}` {
		t.Errorf("GET: %s %s", status, body)
	}
	if status, _, _ := s.do(t, "GET", "/channel/nothing", ""); status != "HTTP/1.1 404 Not Found" {
		t.Errorf("GET of nothing: %s", status)
	}
	if status, _, _ := s.do(t, "PUT", "/channel/a/..", "{}"); status != "HTTP/1.1 400 Invalid Resource" {
		t.Errorf("PUT of an invalid path: %s", status)
	}

	// The session's transient resource goes with it.
	a.Close(1000, "")
	<-doneA
	if l := st.line(t); !strings.HasPrefix(l, `{"notify":"UPDATE","resource":"/room","delete":"ann"`) {
		t.Errorf("stream after the session ended %s", l)
	}
	if status, _, _ := s.do(t, "GET", "/channel/room/ann", ""); status != "HTTP/1.1 404 Not Found" {
		t.Errorf("transient resource after its session: %s", status)
	}
}

// TestWatchResumeOnTheTree resumes a GET kept open on package channel's
// tree, whose history replays the missed notifications before
// SUBSCRIBE's reply: their ids carry the epoch too, as those that follow;
// a Last-Event-ID of another epoch gets the state first.
func TestWatchResumeOnTheTree(t *testing.T) {
	tr, err := channel.New(t.Context(), nil, channel.Options{Epoch: "e1"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	s := newServerOn(t, channelhost.TreeOf(tr), channelplugin.New())
	for _, v := range []string{"1", "2", "3"} {
		if status, _, _ := s.do(t, "PUT", "/channel/r", v); status != "HTTP/1.1 200 OK" {
			t.Fatalf("PUT %s: %s", v, status)
		}
	}
	resumed := s.watch(t, "/channel/r", "Accept", "text/event-stream", "Last-Event-ID", "e1:1")
	other := s.watch(t, "/channel/r", "Accept", "text/event-stream", "Last-Event-ID", "e0:1")
	for _, want := range []string{`id: e1:2|data: {"notify":"PUT","resource":"/r","type":"application/json","entity":2,"from":"http-`, `id: e1:3|data: {"notify":"PUT","resource":"/r","type":"application/json","entity":3,"from":"http-`} {
		if e := resumed.event(t); !strings.HasPrefix(e, want) {
			t.Errorf("replayed %s, want %s…", e, want)
		}
	}
	if e := other.event(t); e != `data: {"resource":"/r","type":"application/json","entity":3}` {
		t.Errorf("another epoch: %s, want the state", e)
	}
	s.do(t, "PUT", "/channel/r", "4")
	for _, st := range []*stream{resumed, other} {
		if e := st.event(t); !strings.HasPrefix(e, `id: e1:4|data: {"notify":"PUT"`) {
			t.Errorf("after the replay %s", e)
		}
	}
}
