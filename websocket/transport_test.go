package websocket

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/internal/poll"
)

// TestOriginHandshake checks the Origin check over a real connection: a
// refused origin gets 403 and no upgrade, an allowed pattern passes.
func TestOriginHandshake(t *testing.T) {
	tr := New(Options{Origins: []string{"*.example.org"}})
	var accepted atomic.Int64
	srv := server(t, tr, func(s core.Session) { accepted.Add(1); echo(s) })
	host := strings.TrimPrefix(srv.URL, "http://")
	tests := []struct {
		origin string
		want   int
	}{
		{"", http.StatusSwitchingProtocols},
		{"http://" + host, http.StatusSwitchingProtocols},
		{"https://app.example.org", http.StatusSwitchingProtocols},
		{"https://evil.test", http.StatusForbidden},
		{"https://example.org.evil.test", http.StatusForbidden},
	}
	want := int64(0)
	for _, tt := range tests {
		t.Run(tt.origin, func(t *testing.T) {
			h := http.Header{}
			if tt.origin != "" {
				h.Set("Origin", tt.origin)
			}
			c, resp, err := dial(t, srv, h)
			if resp == nil {
				t.Fatalf("no response: %v", err)
			}
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.want != http.StatusSwitchingProtocols {
				if c != nil || resp.Header.Get("Upgrade") != "" {
					t.Fatal("refused handshake was upgraded")
				}
				return
			}
			want++
			if err := c.WriteMessage(1, []byte("hi")); err != nil {
				t.Fatal(err)
			}
			if _, p, err := c.ReadMessage(); err != nil || string(p) != "hi" {
				t.Fatalf("echo: %q, %v", p, err)
			}
		})
	}
	if got := accepted.Load(); got != want {
		t.Errorf("%d sessions accepted, want %d", got, want)
	}
}

// TestAcceptWritesNothing checks that refused handshakes leave the
// response to the host.
func TestAcceptWritesNothing(t *testing.T) {
	tr := New(Options{})
	handshake := func() *http.Request {
		r := httptest.NewRequest("GET", "http://reso.test/channel", nil)
		r.Header.Set("Connection", "Upgrade")
		r.Header.Set("Upgrade", "websocket")
		r.Header.Set("Sec-WebSocket-Version", "13")
		r.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		return r
	}
	tests := []struct {
		name   string
		change func(r *http.Request)
		want   error
	}{
		{"cross origin", func(r *http.Request) { r.Header.Set("Origin", "http://evil.test") }, ErrForbiddenOrigin},
		{"plain GET", func(r *http.Request) { r.Header.Del("Upgrade") }, ErrNotWebSocket},
		{"POST", func(r *http.Request) { r.Method = "POST" }, ErrNotWebSocket},
		{"bad key", func(r *http.Request) { r.Header.Set("Sec-WebSocket-Key", "short") }, ErrNotWebSocket},
		{"old version", func(r *http.Request) { r.Header.Set("Sec-WebSocket-Version", "8") }, ErrVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := handshake()
			tt.change(r)
			w := httptest.NewRecorder()
			s, err := tr.Accept(w, r, "x")
			if err != tt.want || s != nil {
				t.Fatalf("Accept = %v, %v; want nil, %v", s, err, tt.want)
			}
			if w.Body.Len() != 0 || w.Code != http.StatusOK {
				t.Errorf("Accept wrote %d %q", w.Code, w.Body)
			}
			if tr.Open() != 0 {
				t.Errorf("Open() = %d after a refusal", tr.Open())
			}
		})
	}
}

// TestHandshakeStatus checks the status lines a refused handshake gets
// over a real connection.
func TestHandshakeStatus(t *testing.T) {
	srv := server(t, New(Options{}), echo)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plain GET: %s, want 400", resp.Status)
	}
}

// TestMaxConnections checks the cap: over it a handshake gets 503 Too
// Many Connections at once, with its reason as text and Retry-After; a
// closed connection frees its place.
func TestMaxConnections(t *testing.T) {
	tr := New(Options{MaxConnections: 2})
	srv := server(t, tr, echo)
	a := mustDial(t, srv)
	mustDial(t, srv)
	if tr.Open() != 2 {
		t.Fatalf("Open() = %d, want 2", tr.Open())
	}
	c, resp, err := dial(t, srv, nil)
	if c != nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third connection: %v, %v; want 503", resp, err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "503 Too Many Connections\n" ||
		resp.Header.Get("Retry-After") != RetryAfter || resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("third connection: %q %q, want the body 503 Too Many Connections and Retry-After %s", resp.Header, body, RetryAfter)
	}
	a.Close()
	poll.Until(t, wait, "a closed connection frees its place", func() bool { return tr.Open() == 1 })
	mustDial(t, srv)
}
