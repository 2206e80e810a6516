package websocket

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/core"
)

// wait is the most a test waits for something that must happen; it only
// turns a hang into a failure, it asserts no speed.
const wait = 30 * time.Second

// server starts a test server whose every request goes through tr.Accept;
// each session goes to sessions, and the handler returns (as the host's
// does) when the session's serve function does.
func server(t testing.TB, tr *Transport, serve func(s core.Session)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := tr.Accept(w, r, "test")
		if err != nil {
			core.WriteError(w, r, err)
			return
		}
		serve(s)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// echo serves a session by sending back every message until Recv fails.
func echo(s core.Session) {
	ctx := context.Background()
	for {
		m, err := s.Recv(ctx)
		if err != nil {
			return
		}
		if err := s.Send(ctx, m); err != nil {
			return
		}
	}
}

// dial opens a client connection to srv with header h.
func dial(t testing.TB, srv *httptest.Server, h http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: wait}
	c, resp, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), h)
	if c != nil {
		t.Cleanup(func() { c.Close() })
		_ = c.SetReadDeadline(time.Now().Add(wait))
	}
	return c, resp, err
}

// mustDial is dial that fails the test on error.
func mustDial(t *testing.T, srv *httptest.Server) *websocket.Conn {
	t.Helper()
	c, _, err := dial(t, srv, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return c
}

// closeCode returns the code of a close error of the client library, or
// -1.
func closeCode(err error) int {
	if ce, ok := err.(*websocket.CloseError); ok {
		return ce.Code
	}
	return -1
}
