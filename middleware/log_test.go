package middleware

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/justinas/alice"

	"github.com/reso-project/reso/core"
)

// lockedBuffer is a bytes.Buffer safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLogFields: over a real connection, the access log line has the
// client's address, the query string and the route that answered (its
// pattern, never the path).
func TestLogFields(t *testing.T) {
	started := make(chan struct{}, 1)
	rt, err := core.NewRouter([]core.Route{
		{Match: "GET /xml/(?P<path>.*)", Rewrite: "GET /%(path)s", Assign: []string{"ACCEPT=text/xml"}},
		{Match: `GET /files(?:/|$|\?)`, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "listing")
		})},
		{Match: "GET /gone", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			started <- struct{}{}
			<-r.Context().Done()
			core.WriteError(w, r, fmt.Errorf("plugin: %w", r.Context().Err()))
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf lockedBuffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	done := make(chan struct{}, 1)
	signal := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() { done <- struct{}{} }()
			next.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewUnstartedServer(alice.New(signal, Log(logger), Recover, Cookies).Then(rt))
	srv.Listener = core.Listen(srv.Listener)
	srv.Config.ConnContext = core.ConnContext
	srv.Start()
	defer srv.Close()

	cases := []struct {
		target string
		want   []string
	}{
		{"/files/sub/a?x=1&y=2", []string{`method=GET path=/files/sub/a status=200 bytes=7 `, ` query="x=1&y=2" remote=127.0.0.1:`, ` route="GET /files(?:/|$|\\?)"`}},
		{"/xml/files", []string{`path=/xml/files status=200`, ` query="" remote=`, ` route="GET /files(?:/|$|\\?)"`}},
		{"/nothing?q", []string{`path=/nothing status=404`, ` query=q remote=`, ` route=""`}},
	}
	for _, c := range cases {
		t.Run(c.target, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(conn, "GET "+c.target+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			io.Copy(io.Discard, bufio.NewReader(conn))
			<-done
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			last := lines[len(lines)-1]
			local := conn.LocalAddr().String()
			if !strings.Contains(last, " remote="+local+" ") {
				t.Errorf("log %q lacks remote=%s", last, local)
			}
			for _, w := range c.want {
				if !strings.Contains(last, w) {
					t.Errorf("log %q lacks %q", last, w)
				}
			}
		})
	}
	t.Run("client gone", func(t *testing.T) {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "GET /gone HTTP/1.1\r\nHost: x\r\n\r\n")
		<-started
		conn.(*net.TCPConn).SetLinger(0) // the close resets the connection
		conn.Close()
		<-done
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		last := lines[len(lines)-1]
		for _, w := range []string{`path=/gone status=499 bytes=0 `, ` route="GET /gone"`} {
			if !strings.Contains(last, w) {
				t.Errorf("log %q lacks %q", last, w)
			}
		}
	})
}

// BenchmarkLog measures the access log's cost per request (no network).
func BenchmarkLog(b *testing.B) {
	rt, err := core.NewRouter([]core.Route{{Match: "GET /config", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}})
	if err != nil {
		b.Fatal(err)
	}
	h := Log(slog.New(slog.NewTextHandler(io.Discard, nil)))(rt)
	r := httptest.NewRequest("GET", "/config", nil)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}
