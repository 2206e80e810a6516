package pluginrpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/doors"
	"github.com/reso-project/reso/internal/poll"
	"github.com/reso-project/reso/plugins"
	channelplugin "github.com/reso-project/reso/plugins/channel"
)

// openStream opens a GET kept open of target on its own connection, with
// the header lines given ("Name: value"), and returns the connection, the
// status line and a reader of the body.
func openStream(t *testing.T, s *testServer, target string, header ...string) (net.Conn, string, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(time.Minute))
	r, _ := http.NewRequest("GET", s.srv.URL+target, nil)
	for _, h := range header {
		name, value, _ := strings.Cut(h, ": ")
		r.Header.Set(name, value)
	}
	if err := r.Write(c); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), r)
	if err != nil {
		t.Fatal(err)
	}
	return c, resp.Status, bufio.NewReader(resp.Body)
}

// nextEvent reads the next Server-Sent Event, its lines as written,
// passing over keep-alives (comment lines) and the retry line.
func nextEvent(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var ev strings.Builder
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading an event: %v (so far %q)", err, ev.String())
		}
		switch {
		case strings.HasPrefix(l, ":"), strings.HasPrefix(l, "retry:"):
			continue
		case l == "\n":
			if ev.Len() > 0 {
				return ev.String()
			}
			continue
		}
		ev.WriteString(l)
	}
}

// watchServers runs the doors on one tree of package channel twice: in
// process, and in a plugin process whose host runs watches with watch (nil
// for a host that does not).
func watchServers(t *testing.T, watch WatchFunc) (isolated, inProcess *testServer, c *Client, tree *channel.Tree) {
	t.Helper()
	return watchServersOf(t, "channel", watch)
}

// watchServersOf is watchServers with the plugin process of child mode.
func watchServersOf(t *testing.T, mode string, watch WatchFunc) (isolated, inProcess *testServer, c *Client, tree *channel.Tree) {
	t.Helper()
	tree, err := channel.New(t.Context(), nil, channel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Close() })
	c = load(t, Config{Name: "channel", Cmd: childCmd(mode), Watch: watch})
	isolated = newTreeServer(t, channelhost.TreeOf(tree), c)
	inProcess = newTreeServer(t, channelhost.TreeOf(tree), channelplugin.New())
	return isolated, inProcess, c, tree
}

// TestWatchCrossings opens K GETs kept open of one resource on an
// isolated door and sends notifications: with a host that runs watches,
// every watcher gets every notification byte for byte as a watcher of the
// door compiled in (same tree, same ids with the epoch), and no message
// crosses the boundary for them whatever K; with a host that does not
// (an older host, Config.Watch nil), the plugin runs them as before and
// each notification crosses at least once per watcher (its event up on
// Events; its frame came down on Trees).
func TestWatchCrossings(t *testing.T) {
	const notifications = 6
	for _, tc := range []struct {
		name    string
		watch   WatchFunc
		spliced bool
	}{
		{"host runs watches", doors.Watch, true},
		{"old host", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []int{1, 8} {
				iso, inp, c, _ := watchServers(t, tc.watch)
				sse := "Accept: text/event-stream"
				_, status, ref := openStream(t, inp, "/channel/news?watch", sse)
				if status != "200 OK" {
					t.Fatalf("in process: %s", status)
				}
				want := []string{nextEvent(t, ref)}
				watchers := make([]*bufio.Reader, k)
				for i := range watchers {
					var status string
					_, status, watchers[i] = openStream(t, iso, "/channel/news?watch", sse)
					if status != "200 OK" {
						t.Fatalf("watcher %d: %s", i, status)
					}
				}
				pub, _ := openSession(t, inp, "/channel")
				before := c.crossed.n.Load()
				for i := 1; i <= notifications; i++ {
					sendText(t, pub, fmt.Sprintf(`{"method":"NOTIFY","resource":"/news","data":{"n":%d},"msg_id":%d}`, i, i))
					if r := recvText(t, pub); !strings.Contains(r, fmt.Sprintf(`"sent_count":%d`, k+1)) {
						t.Fatalf("NOTIFY %d answered %s, want %d subscribers", i, r, k+1)
					}
					want = append(want, nextEvent(t, ref))
				}
				for j, br := range watchers {
					for i, w := range want {
						if got := nextEvent(t, br); got != w {
							t.Fatalf("watcher %d, event %d: %q, in process %q", j, i, got, w)
						}
					}
				}
				crossed := c.crossed.n.Load() - before
				t.Logf("%d watchers, %d notifications: %d messages crossed", k, notifications, crossed)
				if tc.spliced && crossed != 0 {
					t.Errorf("%d messages crossed the boundary for %d notifications to %d watchers, want none", crossed, notifications, k)
				}
				if !tc.spliced && crossed < uint64(k*notifications) {
					t.Errorf("%d messages crossed for %d notifications to %d watchers the plugin runs, want at least %d (the counter counts events)", crossed, notifications, k, k*notifications)
				}
			}
		})
	}
}

// TestWatchSplice: through a host that runs watches, the request's
// Last-Event-ID reaches the watch (a bad one answers 400 as in process,
// and a good one resumes without the state); a client that goes away
// ends its watch in the host (its tree client is disconnected); and the
// plugin process's death does not end the streams the host runs, while a
// new one is served once the plugin is back.
func TestWatchSplice(t *testing.T) {
	iso, inp, c, tree := watchServers(t, doors.Watch)
	sse := "Accept: text/event-stream"
	for _, s := range []*testServer{iso, inp} {
		if _, status, _ := openStream(t, s, "/channel/news?watch", sse, "Last-Event-ID: nonsense:x"); status != "400 Invalid Last-Event-ID" {
			t.Errorf("bad Last-Event-ID: %s", status)
		}
	}
	pub, _ := openSession(t, inp, "/channel")
	conn, _, br := openStream(t, iso, "/channel/news?watch", sse)
	nextEvent(t, br) // the state
	sendText(t, pub, `{"method":"NOTIFY","resource":"/news","data":{"n":1},"msg_id":1}`)
	recvText(t, pub)
	first := nextEvent(t, br)
	id, _, _ := strings.Cut(strings.TrimPrefix(first, "id: "), "\n")
	if !strings.Contains(id, ":") {
		t.Fatalf("event id %q has no epoch", id)
	}
	conn.Close()
	poll.Until(t, 30*time.Second, "the watch of the client that went away to end", func() bool { return tree.Stats().Clients == 1 })

	sendText(t, pub, `{"method":"NOTIFY","resource":"/news","data":{"n":2},"msg_id":2}`)
	recvText(t, pub)
	_, status, br := openStream(t, iso, "/channel/news?watch", sse, "Last-Event-ID: "+id)
	if status != "200 OK" {
		t.Fatalf("resume: %s", status)
	}
	if ev := nextEvent(t, br); !strings.Contains(ev, `"data":{"n":2}`) {
		t.Fatalf("resumed with %q, want the notification after %s", ev, id)
	}

	if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "the plugin to be restarted", func() bool { return c.Restarts() > 0 && c.Running() })
	sendText(t, pub, `{"method":"NOTIFY","resource":"/news","data":{"n":3},"msg_id":3}`)
	recvText(t, pub)
	if ev := nextEvent(t, br); !strings.Contains(ev, `"data":{"n":3}`) {
		t.Fatalf("after the plugin's death: %q", ev)
	}
	_, status, br2 := openStream(t, iso, "/channel/news?watch", sse)
	if status != "200 OK" {
		t.Fatalf("after the restart: %s", status)
	}
	nextEvent(t, br2)
}

// TestWatchExchange: a request that comes on Exchange (a plugin without
// Requests) cannot be named to the host, so the plugin runs its GET kept
// open itself, as before: same bytes, its events crossing.
func TestWatchExchange(t *testing.T) {
	iso, inp, c, _ := watchServersOf(t, "channel-exchange", doors.Watch)
	sse := "Accept: text/event-stream"
	_, _, ref := openStream(t, inp, "/channel/news?watch", sse)
	_, status, br := openStream(t, iso, "/channel/news?watch", sse)
	if status != "200 OK" {
		t.Fatalf("GET kept open: %s", status)
	}
	pub, _ := openSession(t, inp, "/channel")
	before := c.crossed.n.Load()
	sendText(t, pub, `{"method":"NOTIFY","resource":"/news","data":{"n":1},"msg_id":1}`)
	recvText(t, pub)
	for i := range 2 {
		if got, want := nextEvent(t, br), nextEvent(t, ref); got != want {
			t.Fatalf("event %d: %q, in process %q", i, got, want)
		}
	}
	if crossed := c.crossed.n.Load() - before; crossed == 0 {
		t.Errorf("no message crossed: the plugin on Exchange cannot have its watch run by the host")
	}
}

// dropPlugin's handler starts a GET kept open of its path, then answers
// something else: 409 Dropped, or the stream wrapped, which only the host
// could read.
type dropPlugin struct{}

// errDropped is dropPlugin's answer.
var errDropped = core.Status(http.StatusConflict, "Dropped")

func (dropPlugin) Routes(_ context.Context, host plugins.Services) ([]plugins.Route, error) {
	tree := host.Tree
	if tree == nil {
		return nil, errors.New("drop plugin: the host offers no tree")
	}
	return []plugins.Route{
		{Match: `GET /drop/`, Handler: core.HandlerFunc(func(ctx context.Context, req *core.Request) (*core.Response, error) {
			if _, err := doors.Watch(ctx, tree, req, "/news", false); err != nil {
				return nil, err
			}
			return nil, errDropped
		})},
		{Match: `GET /wrap/`, Handler: core.HandlerFunc(func(ctx context.Context, req *core.Request) (*core.Response, error) {
			resp, err := doors.Watch(ctx, tree, req, "/news", false)
			if err != nil {
				return nil, err
			}
			return &core.Response{Stream: wrapped{resp.Stream}}, nil
		})},
	}, nil
}

// wrapped is a stream wrapped by a handler.
type wrapped struct{ core.EventSource }

// TestWatchDropped: a GET kept open that the host started for a request
// whose answer does not claim it (an error, a stream of the plugin's own)
// is closed: its tree client goes.
func TestWatchDropped(t *testing.T) {
	tree, err := channel.New(t.Context(), nil, channel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Close() })
	c := load(t, Config{Name: "drop", Cmd: childCmd("watchdrop"), Watch: doors.Watch})
	s := newTreeServer(t, channelhost.TreeOf(tree), c)
	for range 3 {
		if _, status, _ := openStream(t, s, "/drop/x"); status != "409 Dropped" {
			t.Fatalf("GET /drop/x: %s", status)
		}
	}
	_, status, br := openStream(t, s, "/wrap/x")
	if status != "200 OK" {
		t.Fatalf("GET /wrap/x: %s", status)
	}
	if _, err := br.ReadString('\n'); err == nil {
		t.Errorf("the wrapped stream gave an event; want its end")
	}
	poll.Until(t, 30*time.Second, "the watches not answered to be closed", func() bool { return tree.Stats().Clients == 0 })
}
