package doors_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/internal/treetest"
	"github.com/reso-project/reso/middleware"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
)

// server is a reso server with the doors on the stand-in tree.
type server struct {
	srv   *httptest.Server
	tree  *treetest.Tree // the stand-in tree, nil on another
	pipes chan core.Session

	mu   sync.Mutex
	endc map[string]chan struct{} // closed when a session has ended
}

// pipes is the session transport of the tests.
type pipes chan core.Session

func (p pipes) Accept(_ http.ResponseWriter, _ *http.Request, id string) (core.Session, error) {
	server, client := core.Pipe(id)
	p <- client
	return server, nil
}

// xUser is the optional authentication of the tests: X-User names the
// caller.
func xUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get("X-User"); u != "" {
			r = r.WithContext(core.NewIdentityContext(r.Context(), &core.Identity{ID: 1, Email: u}))
		}
		next.ServeHTTP(w, r)
	})
}

// challenge is the credentials challenge of the tests.
func challenge(w http.ResponseWriter) { w.Header().Set("WWW-Authenticate", `X-User realm="test"`) }

// newServer serves p on the stand-in tree.
func newServer(t *testing.T, p plugins.Plugin) *server {
	t.Helper()
	tree := treetest.New()
	s := newServerOn(t, tree, p)
	s.tree = tree
	return s
}

// newServerOn serves p on tree.
func newServerOn(t *testing.T, tree plugins.Tree, p plugins.Plugin) *server {
	t.Helper()
	s := &server{pipes: make(chan core.Session, 8)}
	h := &pluginhost.Host{Services: plugins.Services{Settings: pluginhost.NewSettings(nil), Tree: tree}, Sessions: pipes(s.pipes), Optional: xUser, Challenge: challenge, BodyLimit: 1 << 10}
	table, err := h.Routes(t.Context(), []pluginhost.Entry{{Name: "channel", Plugin: p}})
	if err != nil {
		t.Fatal(err)
	}
	// After the host's own hook, which disconnects the session's client.
	h.OnSessionEnd(s.ended)
	rt, err := core.NewRouter(table)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(core.ShowErrors(middleware.Recover(rt)))
	srv.Listener = core.Listen(srv.Listener)
	srv.Config.ConnContext = core.ConnContext
	srv.Start()
	t.Cleanup(func() {
		h.GoAway()
		srv.Close()
	})
	s.srv = srv
	return s
}

// raw sends request on a new connection and returns the status line,
// the headers named and the body.
func (s *server) do(t *testing.T, method, target, body string, header ...string) (status string, h http.Header, respBody string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, s.srv.URL+target, r)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	// A raw connection reads the status line as sent.
	c, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	req.Close = true
	if err := req.Write(c); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(io.MultiReader(strings.NewReader(line), br)), req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.TrimRight(line, "\r\n"), resp.Header, string(b)
}

// session opens GET /channel with header and returns the client end of
// its session and a channel closed when the session is over (the host's
// end hooks have run: the session outlives its request).
func (s *server) session(t *testing.T, header ...string) (core.Session, <-chan struct{}) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.WithoutCancel(t.Context()), "GET", s.srv.URL+"/channel", nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case c := <-s.pipes:
		return c, s.endChan(c.ID())
	case <-time.After(10 * time.Second):
		t.Fatal("no session")
		return nil, nil
	}
}

// ended is the host's session end hook of the test server.
func (s *server) ended(id string) {
	c := s.endChan(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-c:
	default:
		close(c)
	}
}

// endChan returns the channel closed when session id ends.
func (s *server) endChan(id string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endc == nil {
		s.endc = make(map[string]chan struct{})
	}
	c, ok := s.endc[id]
	if !ok {
		c = make(chan struct{})
		s.endc[id] = c
	}
	return c
}
