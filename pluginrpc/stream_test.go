package pluginrpc

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/internal/poll"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins/represent"
)

// slowRead sends request and reads the whole answer a few bytes at a time,
// pausing between reads, so that the server's writes block on the client.
func slowRead(t *testing.T, s *testServer, request string) string {
	t.Helper()
	c, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	// A small receive buffer, so the client's slowness reaches the server.
	c.(*net.TCPConn).SetReadBuffer(64 << 10)
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	buf := make([]byte, 16<<10)
	for i := 0; ; i++ {
		if i < 20 {
			time.Sleep(20 * time.Millisecond)
		}
		n, err := c.Read(buf)
		b.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dateLine.ReplaceAllString(b.String(), "")
}

// TestStreamContract streams the same events in process and through a
// plugin process, to a client that reads slowly, in both framings and
// in XML, and checks that every answer is complete, in order, and byte for
// byte the one the plugin gives in process.
func TestStreamContract(t *testing.T) {
	cases := []struct{ name, request string }{
		{"ndjson", req("GET", "/events/many")},
		{"sse", req("GET", "/events/many", "Accept: text/event-stream")},
		{"sse xml", req("GET", "/xml/events/many", "Accept: text/event-stream")},
		{"head", req("HEAD", "/events/many", "Accept: text/event-stream")},
	}
	ps := transports(t)
	answers := map[string][]string{}
	for _, name := range []string{"direct", "stream"} {
		t.Run(name, func(t *testing.T) {
			s := newTestServer(t, pluginhost.Entry{Name: "represent", Plugin: represent.Plugin{}}, pluginhost.Entry{Name: "test", Plugin: ps[name]})
			for _, c := range cases {
				answers[name] = append(answers[name], slowRead(t, s, c.request))
			}
		})
	}
	for i, c := range cases {
		direct := answers["direct"][i]
		head, body, _ := strings.Cut(direct, "\r\n\r\n")
		switch c.name {
		case "head":
			if body != "" || !strings.Contains(head, "Content-Type: text/event-stream") {
				t.Errorf("head: %q", direct)
			}
		case "ndjson":
			if !strings.Contains(head, "Content-Type: application/x-ndjson") || !strings.Contains(head, "Transfer-Encoding: chunked") {
				t.Errorf("ndjson header: %q", head)
			}
			if n := strings.Count(body, `{"event": {"n": `); n != manyCount {
				t.Errorf("ndjson: %d events, want %d", n, manyCount)
			}
		default:
			if n := strings.Count(body, "id: "); n != manyCount {
				t.Errorf("%s: %d events, want %d", c.name, n, manyCount)
			}
			if strings.Contains(body, "event: third") != true {
				t.Errorf("%s: no event names", c.name)
			}
		}
		if got := answers["stream"][i]; got != direct {
			t.Errorf("stream: %s: answer differs from in process (%d bytes, want %d):\n%.500s\n---\n%.500s", c.name, len(got), len(direct), got, direct)
		}
	}
}

// TestStreamCancel checks that a client that goes away cancels the
// stream's context in the plugin, and that the source is closed once.
func TestStreamCancel(t *testing.T) {
	for name, p := range transports(t) {
		t.Run(name, func(t *testing.T) {
			s := newTestServer(t, pluginhost.Entry{Name: "test", Plugin: p})
			c, err := net.Dial("tcp", s.srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(c, "GET /events/wait HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
			br := bufio.NewReader(c)
			head := readUntil(t, br, "\r\n\r\n")
			if !strings.HasPrefix(head, "HTTP/1.1 202 Streaming For You\r\n") {
				t.Errorf("head %q", head)
			}
			if ev := readUntil(t, br, "\n\n"); !strings.HasSuffix(ev, "id: 1\nevent: first\ndata: \"waiting\"\n\n") {
				t.Errorf("first event %q", ev)
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			poll.Until(t, 10*time.Second, "the source to see its context end and be closed", func() bool {
				v, _ := s.settings.Setting(t.Context(), "stream-cancelled")
				n, _ := s.settings.Setting(t.Context(), "stream-closed")
				return v == "yes" && n == "1"
			})
		})
	}
}

// readUntil reads from br up to and including the first sep.
func readUntil(t *testing.T, br *bufio.Reader, sep string) string {
	t.Helper()
	var b strings.Builder
	for !strings.HasSuffix(b.String(), sep) {
		c, err := br.ReadByte()
		if err != nil {
			t.Fatalf("reading up to %q: %v (got %q)", sep, err, b.String())
		}
		b.WriteByte(c)
	}
	return b.String()
}

// openSession starts a session request on path and returns the client end
// of its pipe, and a channel closed when the session is over (its end
// hooks have run).
func openSession(t testing.TB, s *testServer, path string) (core.Session, <-chan struct{}) {
	t.Helper()
	go func() {
		resp, err := http.Get(s.srv.URL + path)
		if err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case c := <-s.pipes:
		// The session outlives its request: it is over when the host
		// has run its end hooks.
		s.mu.Lock()
		done := s.endChan(c.ID())
		s.mu.Unlock()
		return c, done
	case <-time.After(10 * time.Second):
		t.Fatal("no session")
		return nil, nil
	}
}

func (s *testServer) endCount(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended[id]
}

// TestSessionContract sends messages both ways, text and binary and bytes
// that are not UTF-8, in process and through a plugin process; then the
// plugin closes one session and the client another.
func TestSessionContract(t *testing.T) {
	msgs := []core.Message{
		{Data: []byte("hello")},
		{Binary: true, Data: []byte{0, 0xff, 0xfe, 'x', 0x80}},
		{Data: []byte("caf\xe9 \xc3\x28")},
		{Binary: true},
		{Data: []byte(strings.Repeat("long ", 100000))},
	}
	for name, p := range transports(t) {
		t.Run(name, func(t *testing.T) {
			s := newTestServer(t, pluginhost.Entry{Name: "test", Plugin: p})
			ctx := t.Context()
			c, done := openSession(t, s, "/session/echo")
			for _, m := range msgs {
				if err := c.Send(ctx, m); err != nil {
					t.Fatal(err)
				}
				got, err := c.Recv(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if got.Binary != m.Binary || string(got.Data) != string(m.Data) {
					t.Errorf("echo of %.40q (binary %v): %.40q (binary %v)", m.Data, m.Binary, got.Data, got.Binary)
				}
			}
			// The plugin closes.
			c.Send(ctx, core.Message{Data: []byte("close")})
			_, err := c.Recv(ctx)
			if code, reason := core.CloseStatus(err); code != 4000 || reason != "bye" {
				t.Errorf("plugin's close: %d %q (%v)", code, reason, err)
			}
			<-done
			if n := s.endCount(c.ID()); n != 1 {
				t.Errorf("end hook called %d times", n)
			}
			// The client closes.
			c2, done2 := openSession(t, s, "/session/echo")
			if c2.ID() == c.ID() || c2.ID() == "" {
				t.Errorf("session ids %q %q", c.ID(), c2.ID())
			}
			c2.Close(core.CloseNormal, "")
			<-done2
			if n := s.endCount(c2.ID()); n != 1 {
				t.Errorf("end hook called %d times after the client closed", n)
			}
		})
	}
}

// holdBoth opens a session at /session/hold<rest>, which greets with
// "ready <rest>" and then waits, and the stream /events/wait, which sends
// "waiting" and then waits; it returns the session, the channel of its
// end and the stream after its first event.
func holdBoth(t *testing.T, s *testServer, rest string) (core.Session, <-chan struct{}, *bufio.Reader) {
	t.Helper()
	c, done := openSession(t, s, "/session/hold"+rest)
	if m, err := c.Recv(t.Context()); err != nil || string(m.Data) != "ready "+rest {
		t.Fatalf("first message %q, %v", m.Data, err)
	}
	resp, err := http.Get(s.srv.URL + "/events/wait")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	br := bufio.NewReader(resp.Body)
	if line, _ := br.ReadString('\n'); line != "\"waiting\"\n" {
		t.Errorf("first event %q", line)
	}
	return c, done, br
}

// TestGoAway checks that the server's shutdown ends open streams and
// closes open sessions with going away, the end hook called once.
func TestGoAway(t *testing.T) {
	for name, p := range transports(t) {
		t.Run(name, func(t *testing.T) {
			s := newTestServer(t, pluginhost.Entry{Name: "represent", Plugin: represent.Plugin{}}, pluginhost.Entry{Name: "test", Plugin: p})
			ctx := t.Context()
			c, done, br := holdBoth(t, s, "/x")
			s.mount.GoAway()
			if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
				t.Errorf("stream after going away: %q, %v", rest, err)
			}
			_, err := c.Recv(ctx)
			if code, _ := core.CloseStatus(err); code != core.CloseGoingAway {
				t.Errorf("session closed with %v, want going away", err)
			}
			<-done
			if n := s.endCount(c.ID()); n != 1 {
				t.Errorf("end hook called %d times", n)
			}
			poll.Until(t, 10*time.Second, "the stream's source to be closed", func() bool {
				n, _ := s.settings.Setting(t.Context(), "stream-closed")
				return n == "1"
			})
			// The plugin's Close runs at shutdown, in its process.
			if err := s.mount.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if v, _ := s.settings.Setting(ctx, "plugin-closed"); v != "yes" {
				t.Errorf("plugin not closed: %q", v)
			}
		})
	}
}

// TestKilledDuringStreams kills the plugin process while a stream and a
// session are open: the stream ends, the session is closed with 1011, and
// the end hook runs once.
func TestKilledDuringStreams(t *testing.T) {
	c := load(t, Config{Name: "test", Cmd: childCmd("serve")})
	s := newTestServer(t, pluginhost.Entry{Name: "test", Plugin: c})
	ctx := t.Context()
	sess, done, br := holdBoth(t, s, "")
	if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		rest, err := io.ReadAll(br)
		if len(rest) != 0 || err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("stream after the kill: %q, %v", rest, err)
		}
	})
	_, err := sess.Recv(ctx)
	if code, _ := core.CloseStatus(err); code != core.CloseInternal {
		t.Errorf("session closed with %v, want 1011", err)
	}
	<-done
	wg.Wait()
	if n := s.endCount(sess.ID()); n != 1 {
		t.Errorf("end hook called %d times", n)
	}
	_ = context.Background
}
