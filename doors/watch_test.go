package doors_test

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/reso-project/reso/internal/poll"
	"github.com/reso-project/reso/internal/treetest"
	"github.com/reso-project/reso/plugins"
	channelplugin "github.com/reso-project/reso/plugins/channel"
)

// stream is a GET kept open.
type stream struct {
	resp *http.Response
	br   *bufio.Reader
	stop func()
}

// watch opens a GET kept open on its own connection; stop drops the
// connection.
func (s *server) watch(t *testing.T, target string, header ...string) *stream {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", s.srv.URL+target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	c, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := req.Write(c); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		t.Fatal(err)
	}
	return &stream{resp: resp, br: bufio.NewReader(resp.Body), stop: func() { c.(*net.TCPConn).SetLinger(0); c.Close() }}
}

// line returns the next line of the stream, without its line break;
// empty lines (keep-alives) skipped.
func (st *stream) line(t *testing.T) string {
	t.Helper()
	for {
		l, err := st.br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended: %v (%q)", err, l)
		}
		if l = strings.TrimRight(l, "\n"); l != "" {
			return l
		}
	}
}

// event returns the next SSE event's lines.
func (st *stream) event(t *testing.T) string {
	t.Helper()
	var lines []string
	for {
		l, err := st.br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended: %v", err)
		}
		l = strings.TrimRight(l, "\n")
		if l == "" {
			if len(lines) > 0 {
				return strings.Join(lines, "|")
			}
			continue
		}
		if !strings.HasPrefix(l, ":") {
			lines = append(lines, l)
		}
	}
}

// TestWatchDiff checks the GET kept open as NDJSON: the state, then the
// notifications as the tree made them; the client going away ends the
// stream's tree client.
func TestWatchDiff(t *testing.T) {
	s := newServer(t, channelplugin.New())
	s.do(t, "PUT", "/channel/room", `{"n":1}`)
	st := s.watch(t, "/channel/room?watch")
	if ct := st.resp.Header.Get("Content-Type"); st.resp.StatusCode != 200 || ct != "application/x-ndjson" {
		t.Fatalf("%d %q", st.resp.StatusCode, ct)
	}
	if l := st.line(t); l != `{"resource":"/room","type":"application/json","entity":{"n":1}}` {
		t.Errorf("state %s", l)
	}
	s.do(t, "PUT", "/channel/room", `{"n":2}`)
	if l := st.line(t); !strings.HasPrefix(l, `{"notify":"PUT","resource":"/room","type":"application/json","entity":{"n":2},"from":"http-`) || !strings.HasSuffix(l, `,"seq":2}`) {
		t.Errorf("notification %s", l)
	}
	var id string
	for k := range s.tree.Connected() {
		id = k
	}
	if !strings.HasPrefix(id, "watch-") {
		t.Fatalf("stream's client %q", id)
	}
	st.stop()
	poll.Until(t, 10e9, "the stream's client to be disconnected", func() bool { return s.tree.Disconnects(id) == 1 })
}

// TestWatchSSE checks Server-Sent Events with id lines, watch=full, a
// resource that does not exist yet, and a resume with Last-Event-ID.
func TestWatchSSE(t *testing.T) {
	s := newServer(t, channelplugin.New())
	st := s.watch(t, "/channel/new", "Accept", "text/event-stream")
	if ct := st.resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	if e := st.event(t); e != `data: {"resource":"/new","type":null,"entity":null}` {
		t.Errorf("state %s", e)
	}
	s.do(t, "PUT", "/channel/new", `[1]`)
	if e := st.event(t); !strings.HasPrefix(e, `id: `+treetest.Epoch+`:1|data: {"notify":"PUT","resource":"/new"`) {
		t.Errorf("event %s", e)
	}

	full := s.watch(t, "/channel/new?watch=full", "Accept", "text/event-stream")
	if e := full.event(t); e != `data: {"resource":"/new","type":"application/json","entity":[1]}` {
		t.Errorf("full state %s", e)
	}
	s.do(t, "PUT", "/channel/new", `[2]`)
	if e := full.event(t); e != `id: `+treetest.Epoch+`:2|data: {"resource":"/new","type":"application/json","entity":[2]}` {
		t.Errorf("full state after a change %s", e)
	}

	// Resumed where the tree's history still reaches: no state first.
	// In both forms of Last-Event-ID: "<epoch>:<seq>", and the bare seq
	// of older clients. One of another epoch gets the state first.
	resumed := s.watch(t, "/channel/new", "Accept", "text/event-stream", "Last-Event-ID", treetest.Epoch+":2")
	bare := s.watch(t, "/channel/new", "Accept", "text/event-stream", "Last-Event-ID", "2")
	other := s.watch(t, "/channel/new", "Accept", "text/event-stream", "Last-Event-ID", "0ther:2")
	if e := other.event(t); e != `data: {"resource":"/new","type":"application/json","entity":[2]}` {
		t.Errorf("state of a stream of another epoch %s", e)
	}
	s.do(t, "DELETE", "/channel/new", "")
	for name, st := range map[string]*stream{"resumed": resumed, "bare": bare, "other": other} {
		if e := st.event(t); !strings.HasPrefix(e, `id: `+treetest.Epoch+`:3|data: {"notify":"DELETE","resource":"/new"`) {
			t.Errorf("%s %s", name, e)
		}
	}
	if e := full.event(t); e != `id: `+treetest.Epoch+`:3|data: {"resource":"/new","type":null,"entity":null}` {
		t.Errorf("full state after the delete %s", e)
	}
}

// TestWatchRefused checks that a refused subscription answers with its
// status line before any stream starts (401 and the host's challenge for
// an anonymous caller, 403 for a known one), and leaves no client behind.
func TestWatchRefused(t *testing.T) {
	s := newServer(t, channelplugin.New())
	status, header, _ := s.do(t, "GET", "/channel/forbidden/x?watch=diff", "")
	if status != "HTTP/1.1 401 Unauthorized" || header.Get("WWW-Authenticate") != `X-User realm="test"` {
		t.Errorf("anonymous: %q %q", status, header)
	}
	status, header, _ = s.do(t, "GET", "/channel/forbidden/x?watch=diff", "", "X-User", "u@example.com")
	if status != "HTTP/1.1 403 Forbidden" || header.Get("WWW-Authenticate") != "" {
		t.Errorf("known caller: %q %q", status, header)
	}
	for _, id := range []string{"x", "-1", "1.5", "abc:", ":5", "ABC:5", "a-b:5", "a:b:5", "7e57:x", strings.Repeat("a", 33) + ":5"} {
		status, _, _ = s.do(t, "GET", "/channel/x", "", "Accept", "text/event-stream", "Last-Event-ID", id)
		if status != "HTTP/1.1 400 Invalid Last-Event-ID" {
			t.Errorf("Last-Event-ID %q: status %q", id, status)
		}
	}
	if left := s.tree.Connected(); len(left) != 0 {
		t.Errorf("clients left: %v", left)
	}
}

// sendingTree is a tree on which a message is sent to a resource just
// before a stream's GET of its state is read: the message reaches the
// stream's client between its SUBSCRIBE's reply and its GET's, as in a
// fleet, where the GET waits for the log first.
type sendingTree struct{ *treetest.Tree }

func (t sendingTree) Connect(ctx context.Context, id, identity string) (plugins.TreeClient, error) {
	c, err := t.Tree.Connect(ctx, id, identity)
	return sendingClient{c, t.Tree}, err
}

type sendingClient struct {
	plugins.TreeClient
	t *treetest.Tree
}

func (c sendingClient) Exec(ctx context.Context, msg []byte) error {
	if bytes.Contains(msg, []byte(`"method":"GET"`)) {
		if _, err := c.t.Call(ctx, "sender", "", []byte(`{"method":"NOTIFY","resource":"/inbox","data":"hi"}`)); err != nil {
			return err
		}
	}
	return c.TreeClient.Exec(ctx, msg)
}

// TestWatchStateFirst: a stream begins with the state, and a message that
// reached its client before the state was read follows it.
func TestWatchStateFirst(t *testing.T) {
	s := newServerOn(t, sendingTree{treetest.New()}, channelplugin.New())
	st := s.watch(t, "/channel/inbox?watch=diff")
	if l := st.line(t); l != `{"resource":"/inbox","type":null,"entity":null}` {
		t.Errorf("first line %s, want the state", l)
	}
	if l := st.line(t); !strings.HasPrefix(l, `{"notify":"NOTIFY","resource":"/inbox","data":"hi"`) {
		t.Errorf("second line %s, want the message", l)
	}
}
