package core

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// listSource gives its events, then io.EOF, and counts closes.
type listSource struct {
	events []Event
	closed atomic.Int32
	sawCtx chan struct{} // closed when Next sees ctx end; nil: no waiting
}

func (s *listSource) Next(ctx context.Context) (Event, error) {
	if len(s.events) == 0 {
		if s.sawCtx == nil {
			return Event{}, io.EOF
		}
		<-ctx.Done()
		close(s.sawCtx)
		return Event{}, ctx.Err()
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev, nil
}

func (s *listSource) Close() error { s.closed.Add(1); return nil }

func streamServer(t *testing.T, src func() EventSource, opt StreamOptions) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := newRequest(r)
		if a := r.URL.Query().Get("accept"); a != "" {
			req.SetVar(VarAccept, a)
		}
		WriteStream(w, r.WithContext(NewContext(r.Context(), req)), &Response{Stream: src(), Header: http.Header{"X-Kind": {"events"}}}, opt)
	}))
	t.Cleanup(srv.Close)
	return srv
}

var sampleEvents = []Event{
	{ID: "1", Name: "greeting", Value: Node{Name: "hello", Content: "wörld"}},
	{Value: Record{{Name: "n", Value: 2}}},
	{ID: "3", Value: List{"a", "b"}},
}

func TestWriteStream(t *testing.T) {
	cases := []struct {
		name, accept, query, wantType, wantBody string
	}{
		{"ndjson", "", "", TypeNDJSON,
			"{\"hello\": \"w\\u00f6rld\"}\n{\"n\": 2}\n[\"a\", \"b\"]\n"},
		{"sse json", "text/event-stream", "", TypeEventStream,
			"id: 1\nevent: greeting\ndata: {\"hello\": \"w\\u00f6rld\"}\n\ndata: {\"n\": 2}\n\nid: 3\ndata: [\"a\", \"b\"]\n\n"},
		{"sse among others", "application/json, Text/Event-Stream;q=0.9", "", TypeEventStream, ""},
		{"sse xml", "text/event-stream", "?accept=text/xml", TypeEventStream,
			"id: 1\nevent: greeting\ndata: <hello>wörld</hello>\n\ndata: <n>2</n>\n\nid: 3\ndata: ab\n\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := &listSource{events: sampleEvents}
			srv := streamServer(t, func() EventSource { return src }, StreamOptions{KeepAlive: -1})
			rq, _ := http.NewRequest("GET", srv.URL+c.query, nil)
			if c.accept != "" {
				rq.Header.Set("Accept", c.accept)
			}
			resp, err := http.DefaultClient.Do(rq)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got := resp.Header.Get("Content-Type"); got != c.wantType {
				t.Errorf("Content-Type %q, want %q", got, c.wantType)
			}
			if resp.Header.Get("X-Kind") != "events" || resp.Header.Get("Cache-Control") != "no-cache" {
				t.Errorf("header %v", resp.Header)
			}
			if c.wantBody != "" && string(body) != c.wantBody {
				t.Errorf("body:\n%q\nwant\n%q", body, c.wantBody)
			}
			if n := src.closed.Load(); n != 1 {
				t.Errorf("closed %d times", n)
			}
		})
	}
}

func TestAppendSSE(t *testing.T) {
	cases := []struct{ id, name, data, want string }{
		{"", "", "", "data: \n\n"},
		{"7", "", "one\ntwo\r\nthree\rfour\n", "id: 7\ndata: one\ndata: two\ndata: three\ndata: four\n\n"},
		{"a\nb", "x\ry", "v", "id: a b\nevent: x y\ndata: v\n\n"},
		{"", "", "\n\n", "data: \ndata: \n\n"},
	}
	for _, c := range cases {
		if got := string(appendSSE(nil, c.id, c.name, []byte(c.data))); got != c.want {
			t.Errorf("appendSSE(%q, %q, %q) = %q, want %q", c.id, c.name, c.data, got, c.want)
		}
	}
}

func TestWriteStreamHead(t *testing.T) {
	src := &listSource{events: sampleEvents}
	srv := streamServer(t, func() EventSource { return src }, StreamOptions{})
	resp, err := http.Head(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != TypeNDJSON {
		t.Errorf("HEAD: %s %v", resp.Status, resp.Header)
	}
	if len(src.events) != len(sampleEvents) || src.closed.Load() != 1 {
		t.Errorf("HEAD read %d events, closed %d times", len(sampleEvents)-len(src.events), src.closed.Load())
	}
}

// TestWriteStreamGone checks that a client that goes away ends the stream:
// the source sees its context end, and is closed once. The source stays
// silent, so only a keep-alive write can notice the client is gone.
func TestWriteStreamGone(t *testing.T) {
	src := &listSource{events: sampleEvents[:1], sawCtx: make(chan struct{})}
	done := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		WriteStream(w, r, &Response{Stream: src}, StreamOptions{KeepAlive: 5 * time.Millisecond})
	}))
	srv.Listener = Listen(srv.Listener)
	srv.Config.ConnContext = ConnContext
	srv.Start()
	defer srv.Close()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
	br := bufio.NewReader(c)
	var got strings.Builder
	for !strings.Contains(got.String(), ":\n\n") {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(line)
	}
	if !strings.Contains(got.String(), "id: 1\nevent: greeting\ndata: {\"hello\": \"w\\u00f6rld\"}\n\n") {
		t.Errorf("stream so far: %q", got.String())
	}
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
	<-src.sawCtx
	<-done
	if n := src.closed.Load(); n != 1 {
		t.Errorf("closed %d times", n)
	}
}

// TestWriteStreamClosed checks that a client that closes its connection
// (a FIN, not a reset) ends a silent stream without keep-alives, although
// a Listen connection holds that io.EOF back from net/http.
func TestWriteStreamClosed(t *testing.T) {
	src := &listSource{events: sampleEvents[:1], sawCtx: make(chan struct{})}
	done := make(chan struct{})
	srv := newWireServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		WriteStream(w, r, &Response{Stream: src}, StreamOptions{KeepAlive: -1})
	}))
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "greeting") || strings.Contains(line, "hello") {
			break
		}
	}
	c.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end when its client closed the connection")
	}
	if n := src.closed.Load(); n != 1 {
		t.Errorf("closed %d times", n)
	}
}

// TestWriteStreamStop checks that closing Stop ends a stream.
func TestWriteStreamStop(t *testing.T) {
	src := &listSource{sawCtx: make(chan struct{})}
	stop := make(chan struct{})
	srv := streamServer(t, func() EventSource { return src }, StreamOptions{Stop: stop})
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	close(stop)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || len(body) != 0 {
		t.Errorf("body %q, %v", body, err)
	}
	<-src.sawCtx
	if n := src.closed.Load(); n != 1 {
		t.Errorf("closed %d times", n)
	}
}

func TestEventStream(t *testing.T) {
	for accept, want := range map[string]bool{
		"": false, "text/event-stream": true, "TEXT/EVENT-STREAM ; charset=utf-8": true,
		"application/json,text/event-stream": true, "text/event-streams": false, "*/*": false,
	} {
		if got := EventStream(http.Header{"Accept": {accept}}); got != want {
			t.Errorf("EventStream(%q) = %v", accept, got)
		}
	}
}

func TestPipe(t *testing.T) {
	a, b := Pipe("p1")
	ctx := context.Background()
	go a.Send(ctx, Message{Binary: true, Data: []byte{0xff, 0}})
	m, err := b.Recv(ctx)
	if err != nil || !m.Binary || string(m.Data) != "\xff\x00" {
		t.Fatalf("Recv: %+v, %v", m, err)
	}
	b.Close(CloseGoingAway, "bye")
	a.Close(CloseNormal, "")
	if _, err := a.Recv(ctx); err == nil {
		t.Fatal("Recv after close: no error")
	} else if code, reason := CloseStatus(err); code != CloseGoingAway || reason != "bye" {
		t.Errorf("close status %d %q", code, reason)
	}
	if a.ID() != "p1" || b.ID() != "p1" {
		t.Error("ids")
	}
}
