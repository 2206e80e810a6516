package pluginrpc

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/internal/poll"
	"github.com/reso-project/reso/internal/treetest"
	"github.com/reso-project/reso/middleware"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
	channelplugin "github.com/reso-project/reso/plugins/channel"
)

// newTreeServer is a test server whose host offers tree, serving p.
func newTreeServer(t *testing.T, tree plugins.Tree, p plugins.Plugin) *testServer {
	t.Helper()
	return newTreeServerWith(t, tree, p, nil)
}

// newTreeServerWith is newTreeServer with the host's shared settings
// starting as initial.
func newTreeServerWith(t *testing.T, tree plugins.Tree, p plugins.Plugin, initial map[string]string) *testServer {
	t.Helper()
	settings := pluginhost.NewSettings(initial)
	pipes := make(chan core.Session, 16)
	m := &pluginhost.Host{
		Services: plugins.Services{Settings: settings, Tree: tree},
		Sessions: pipeTransport(pipes),
		Optional: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if u := r.Header.Get("X-User"); u != "" {
					r = r.WithContext(core.NewIdentityContext(r.Context(), &core.Identity{ID: 1, Email: u}))
				}
				next.ServeHTTP(w, r)
			})
		},
	}
	ts := &testServer{settings: settings, mount: m, pipes: pipes, ended: make(map[string]int)}
	m.OnSessionEnd(ts.sessionEnded)
	table, err := m.Routes(t.Context(), []pluginhost.Entry{{Name: "channel", Plugin: p}})
	if err != nil {
		t.Fatal(err)
	}
	router, err := core.NewRouter(table)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(core.ShowErrors(middleware.Recover(router)))
	srv.Listener = core.Listen(srv.Listener)
	srv.Config.ConnContext = core.ConnContext
	srv.Start()
	t.Cleanup(func() {
		m.GoAway()
		srv.Close()
	})
	ts.srv = srv
	return ts
}

// channelTransports is the doors' plugin in process and in a child
// process.
func channelTransports(t *testing.T) map[string]plugins.Plugin {
	return map[string]plugins.Plugin{
		"direct": channelplugin.New(),
		"stream": load(t, Config{Name: "channel", Cmd: childCmd("channel")}),
	}
}

func sendText(t *testing.T, s core.Session, msg string) {
	t.Helper()
	if err := s.Send(t.Context(), core.Message{Data: []byte(msg)}); err != nil {
		t.Fatalf("send %s: %v", msg, err)
	}
}

func expectText(t *testing.T, s core.Session, want string) {
	t.Helper()
	m, err := s.Recv(t.Context())
	if err != nil {
		t.Fatalf("waiting for %s: %v", want, err)
	}
	if string(m.Data) != want {
		t.Fatalf("got  %s\nwant %s", m.Data, want)
	}
}

// TestTreeContract runs the doors on the host's tree in process and in a
// plugin process: the frames reach the client byte for byte and in order,
// HTTP calls carry the caller's identity, and each session's client is
// disconnected once when the session ends.
func TestTreeContract(t *testing.T) {
	for name, p := range channelTransports(t) {
		t.Run(name, func(t *testing.T) {
			tree := treetest.New()
			s := newTreeServer(t, tree, p)
			a, doneA := openSession(t, s, "/channel")
			b, doneB := openSession(t, s, "/channel")
			sendText(t, a, `{"method":"SUBSCRIBE","resource":"/r","msg_id":1}`)
			expectText(t, a, `{"msg_id":1,"code":"success","epoch":"`+treetest.Epoch+`"}`)
			// Bytes that JSON allows but a re-encoding would change.
			entity := `{"z":"caf\u00e9 \u00fc","a":[1.50,"\ud83d\ude00"],"e":"ü\t"}`
			sendText(t, b, `{"method":"PUT","resource":"/r","msg_id":"p","entity":`+entity+`}`)
			expectText(t, b, `{"msg_id":"p","code":"success"}`)
			expectText(t, a, `{"notify":"PUT","resource":"/r","type":"application/json","entity":`+entity+`,"from":"`+b.ID()+`","seq":1}`)
			const n = 50
			for i := range n {
				sendText(t, b, fmt.Sprintf(`{"method":"NOTIFY","resource":"/r","msg_id":%d,"data":%d}`, i, i))
			}
			for i := range n {
				expectText(t, b, fmt.Sprintf(`{"msg_id":%d,"code":"success","sent_count":1}`, i))
			}
			for i := range n {
				expectText(t, a, fmt.Sprintf(`{"notify":"NOTIFY","resource":"/r","data":%d,"from":"%s","seq":%d}`, i, b.ID(), i+2))
			}

			// The HTTP door and a GET kept open through the same tree.
			post, _ := http.NewRequestWithContext(t.Context(), "POST", s.srv.URL+"/channel/r", strings.NewReader(`{"m":1}`))
			post.Header.Set("X-User", "ann@example.com")
			resp, err := http.DefaultClient.Do(post)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 201 || resp.Header.Get("Location") != "/channel/r/n1" {
				t.Errorf("POST: %s, Location %q", resp.Status, resp.Header.Get("Location"))
			}
			calls := tree.Calls()
			if len(calls) != 1 || calls[0].Identity != "ann@example.com" || calls[0].Msg != `{"method":"POST","resource":"/r","msg_id":1,"entity":{"m":1}}` {
				t.Errorf("calls %+v", calls)
			}
			if answer := s.raw(t, req("GET", "/channel/nothing")); !strings.HasPrefix(answer, "HTTP/1.1 404 Not Found\r\n") {
				t.Errorf("GET of nothing: %.40q", answer)
			}
			conn, br := openWatch(t, s, "/channel/r?watch")
			if l, _ := br.ReadString('\n'); l != `{"resource":"/r","type":"application/json","entity":`+entity+"}\n" {
				t.Errorf("state %q", l)
			}
			sendText(t, b, `{"method":"DELETE","resource":"/r","msg_id":9}`)
			expectText(t, b, `{"msg_id":9,"code":"success"}`)
			if l, _ := br.ReadString('\n'); l != `{"notify":"DELETE","resource":"/r","type":null,"entity":null,"from":"`+b.ID()+`","seq":53}`+"\n" {
				t.Errorf("watch notification %q", l)
			}
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()

			a.Close(core.CloseNormal, "")
			b.Close(core.CloseNormal, "")
			<-doneA
			<-doneB
			for _, id := range []string{a.ID(), b.ID()} {
				if n := tree.Disconnects(id); n != 1 {
					t.Errorf("client %s disconnected %d times", id, n)
				}
			}
			poll.Until(t, 10*time.Second, "every client to be disconnected", func() bool { return len(tree.Connected()) == 0 })
		})
	}
}

// openWatch opens a GET kept open on its own connection and reads up to
// the body.
func openWatch(t *testing.T, s *testServer, target string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	r, _ := http.NewRequest("GET", s.srv.URL+target, nil)
	if err := r.Write(c); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), r)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET kept open: %s", resp.Status)
	}
	return c, bufio.NewReader(resp.Body)
}

// TestTreeKilled kills the doors' plugin process while a session and a
// GET kept open are attached to the tree: the session is closed with
// 1011, and every client is disconnected exactly once.
func TestTreeKilled(t *testing.T) {
	c := load(t, Config{Name: "channel", Cmd: childCmd("channel")})
	tree := treetest.New()
	s := newTreeServer(t, tree, c)
	sess, done := openSession(t, s, "/channel")
	sendText(t, sess, `{"method":"PUT","resource":"/mine","msg_id":1}`)
	expectText(t, sess, `{"msg_id":1,"code":"success"}`)
	_, br := openWatch(t, s, "/channel/mine?watch")
	if l, _ := br.ReadString('\n'); !strings.HasPrefix(l, `{"resource":"/mine"`) {
		t.Fatalf("state %q", l)
	}
	ids := tree.Connected()
	if len(ids) != 2 {
		t.Fatalf("clients %v", ids)
	}
	if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, err := sess.Recv(t.Context())
	if code, _ := core.CloseStatus(err); code != core.CloseInternal {
		t.Errorf("session closed with %v, want 1011", err)
	}
	<-done
	if n := s.endCount(sess.ID()); n != 1 {
		t.Errorf("end hook called %d times", n)
	}
	poll.Until(t, 10*time.Second, "every client to be disconnected", func() bool { return len(tree.Connected()) == 0 })
	for id := range ids {
		if n := tree.Disconnects(id); n != 1 {
			t.Errorf("client %s disconnected %d times", id, n)
		}
	}
}
