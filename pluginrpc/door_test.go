package pluginrpc

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/doors"
	"github.com/reso-project/reso/internal/poll"
	"github.com/reso-project/reso/pluginrpc/pluginv3"
	"github.com/reso-project/reso/plugins"
	channelplugin "github.com/reso-project/reso/plugins/channel"
)

// ownSession is a session handler of a plugin's own.
type ownSession struct{}

func (ownSession) ServeSession(context.Context, *core.Request, core.Session) error { return nil }

// TestDoorDeclared: a plugin declares a route a door onto the host's tree
// only for a host that serves door routes and only for the WebSocket door
// onto the tree the host gave it, with the door's largest message; the
// host serves such a route with Config.Door, and forwards any other.
func TestDoorDeclared(t *testing.T) {
	h := &remoteHost{doors: true}
	other := &remoteHost{doors: true}
	cases := []struct {
		name string
		h    *remoteHost
		s    core.SessionHandler
		want *pluginv3.RouteDoor
	}{
		{"door onto the host's tree", h, &doors.Session{Tree: treeHost{h}, MaxMessage: 100}, &pluginv3.RouteDoor{MaxMessage: 100}},
		{"its default largest message", h, &doors.Session{Tree: treeHost{h}}, &pluginv3.RouteDoor{}},
		{"a host that does not serve doors", &remoteHost{}, &doors.Session{Tree: treeHost{h}}, nil},
		{"onto another host's tree", h, &doors.Session{Tree: treeHost{other}}, nil},
		{"onto a tree of the plugin's own", h, &doors.Session{Tree: channelhost.TreeOf(nil)}, nil},
		{"a handler of the plugin's own", h, ownSession{}, nil},
	}
	for _, tc := range cases {
		got := tc.h.door(tc.s)
		if (got == nil) != (tc.want == nil) || got != nil && got.GetMaxMessage() != tc.want.GetMaxMessage() {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}

	var gotMax int
	c := &Client{cfg: Config{Door: func(tree core.Tree, maxMessage int) core.SessionHandler {
		gotMax = maxMessage
		return doors.NewSession(tree, maxMessage)
	}}}
	tree := channelhost.TreeOf(nil)
	door := &pluginv3.Route{HasSession: true, Door: &pluginv3.RouteDoor{MaxMessage: 100}}
	if _, ok := c.sessionHandler(plugins.Services{Tree: tree}, door, 0).(*doors.Session); !ok || gotMax != 100 {
		t.Errorf("a door route: not served by Config.Door with its largest message (%d)", gotMax)
	}
	if _, ok := c.sessionHandler(plugins.Services{Tree: tree}, &pluginv3.Route{HasSession: true}, 0).(*remoteSession); !ok {
		t.Error("a route not declared a door: not forwarded to the plugin")
	}
	if _, ok := (&Client{}).sessionHandler(plugins.Services{Tree: tree}, door, 0).(*remoteSession); !ok {
		t.Error("a door route on a host without Config.Door: not forwarded to the plugin")
	}
}

// TestDoorServedByHost runs the channel plugin in a child process whose
// host serves door routes: its WebSocket door's sessions are served by
// the host, none of their messages crosses the boundary (the host opens no
// Sessions call to the plugin), a message past the door's largest (the
// plugin's setting) closes its session with 1009, and the sessions outlive
// the plugin's process, which they never involved.
func TestDoorServedByHost(t *testing.T) {
	const subscribers, notifications = 8, 5
	tree, err := channel.New(t.Context(), nil, channel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Close() })
	c := load(t, Config{Name: "channel", Cmd: childCmd("channel"), Door: doors.NewSession})
	s := newTreeServerWith(t, channelhost.TreeOf(tree), c, map[string]string{channelplugin.SettingMaxMessage: "1000"})

	pub, _ := openSession(t, s, "/channel")
	subs := subscribed(t, s, subscribers, "/news")
	notify := func(i int) {
		t.Helper()
		sendText(t, pub, fmt.Sprintf(`{"method":"NOTIFY","resource":"/news","data":{"n":%d},"msg_id":%d}`, i, i+1))
		if r, want := recvText(t, pub), fmt.Sprintf(`"sent_count":%d`, subscribers); !strings.Contains(r, want) {
			t.Fatalf("NOTIFY %d answered %s, want %s", i, r, want)
		}
		for j, sub := range subs {
			if got := recvText(t, sub); !strings.Contains(got, fmt.Sprintf(`"data":{"n":%d}`, i)) {
				t.Fatalf("subscriber %d, notification %d: got %s", j, i, got)
			}
		}
	}
	for i := 1; i <= notifications; i++ {
		notify(i)
	}
	cn := c.cur.Load()
	cn.sessions.mu.Lock()
	for i, call := range cn.sessions.calls {
		if call != nil {
			t.Errorf("the host opened Sessions call %d to the plugin: a door's session crossed", i)
		}
	}
	cn.sessions.mu.Unlock()
	if n := c.crossed.n.Load(); n != 0 {
		t.Errorf("%d messages with frames crossed the boundary, want 0", n)
	}

	big, _ := openSession(t, s, "/channel")
	sendText(t, big, `{"method":"NOTIFY","resource":"/news","data":"`+strings.Repeat("x", 1000)+`"}`)
	if _, err := big.Recv(t.Context()); !isClose(err, 1009, "message too big") {
		t.Errorf("a message past the plugin's 1,000 bytes: %v, want 1009 message too big", err)
	}

	pid := c.PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "the plugin to be restarted", func() bool { return c.PID() != 0 && c.PID() != pid })
	for i := notifications + 1; i <= notifications+3; i++ {
		notify(i) // the sessions were not ended with the process
	}
	for _, sub := range subs {
		if err := sub.Close(core.CloseNormal, ""); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, 10*time.Second, "the subscribers' clients to be disconnected", func() bool {
		return tree.Stats().Subscriptions == 0
	})
}

// isClose reports whether err is the close with code and reason.
func isClose(err error, code int, reason string) bool {
	c, r := core.CloseStatus(err)
	return c == code && r == reason
}
