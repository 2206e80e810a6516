package pluginrpc

import (
	"context"
	"fmt"
	"github.com/reso-project/reso/internal/poll"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/core"
)

// spliceServer runs the doors in a plugin process on a tree of package
// channel in the host (whose clients the host can splice) with opts.
func spliceServer(t *testing.T, opts channel.Options) (*testServer, *Client, *channel.Tree) {
	t.Helper()
	tree, err := channel.New(t.Context(), nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Close() })
	c := load(t, Config{Name: "channel", Cmd: childCmd("channel")})
	return newTreeServer(t, channelhost.TreeOf(tree), c), c, tree
}

// recvText returns the next text the session receives.
func recvText(t *testing.T, s core.Session) string {
	t.Helper()
	m, err := s.Recv(t.Context())
	if err != nil {
		t.Fatalf("recv: %v", err)
	}
	return string(m.Data)
}

// subscribed opens n sessions of the door and subscribes each to path.
func subscribed(t *testing.T, s *testServer, n int, path string) []core.Session {
	t.Helper()
	subs := make([]core.Session, n)
	for i := range subs {
		subs[i], _ = openSession(t, s, "/channel")
		sendText(t, subs[i], `{"method":"SUBSCRIBE","resource":"`+path+`","msg_id":1}`)
		if r := recvText(t, subs[i]); !strings.Contains(r, `"code":"success"`) {
			t.Fatalf("subscriber %d: SUBSCRIBE answered %s", i, r)
		}
	}
	return subs
}

// TestSpliceCrossings fans notifications out to many sessions of an
// isolated door: every session gets every notification, byte for byte
// and in order, while the messages that carry frames across the boundary
// do not grow with the subscribers: at most one per notification (the
// host writes the frames of a session's client to the session itself, so
// none cross at all). Before, each notification crossed twice per session.
func TestSpliceCrossings(t *testing.T) {
	const subscribers, notifications = 24, 10
	s, c, _ := spliceServer(t, channel.Options{})
	pub, _ := openSession(t, s, "/channel")
	subs := subscribed(t, s, subscribers, "/news")

	before := c.crossed.n.Load()
	for i := 1; i <= notifications; i++ {
		sendText(t, pub, fmt.Sprintf(`{"method":"NOTIFY","resource":"/news","data":{"n":%d},"msg_id":%d}`, i, i+1))
		want := fmt.Sprintf(`"sent_count":%d`, subscribers)
		if r := recvText(t, pub); !strings.Contains(r, want) {
			t.Fatalf("NOTIFY %d answered %s, want %s", i, r, want)
		}
	}
	var first []string
	for j, sub := range subs {
		for i := 1; i <= notifications; i++ {
			got := recvText(t, sub)
			if !strings.Contains(got, `"notify":"NOTIFY"`) || !strings.Contains(got, fmt.Sprintf(`"data":{"n":%d}`, i)) {
				t.Fatalf("subscriber %d, notification %d: got %s", j, i, got)
			}
			if j == 0 {
				first = append(first, got)
			} else if got != first[i-1] {
				t.Fatalf("subscriber %d, notification %d: %s, subscriber 0 got %s", j, i, got, first[i-1])
			}
		}
	}
	crossed := c.crossed.n.Load() - before
	t.Logf("%d notifications to %d subscribers: %d messages with frames crossed the boundary", notifications, subscribers, crossed)
	if crossed > notifications {
		t.Errorf("%d messages with frames crossed for %d notifications to %d sessions of one plugin, want at most %d (one per notification)",
			crossed, notifications, subscribers, notifications)
	}
}

// TestSpliceSlowConsumer: a session of an isolated door whose client does
// not read holds its own queue in the tree, and only its own: the tree
// ends it (1008 "slow consumer") while another subscriber gets every
// notification.
func TestSpliceSlowConsumer(t *testing.T) {
	const notifications = 40
	s, _, _ := spliceServer(t, channel.Options{QueueFrames: 8})
	pub, _ := openSession(t, s, "/channel")
	subs := subscribed(t, s, 2, "/news")
	slow, fast := subs[0], subs[1]
	got := make(chan error, 1)
	go func() {
		for i := 1; i <= notifications; i++ {
			m, err := fast.Recv(t.Context())
			if err != nil {
				got <- err
				return
			}
			if !strings.Contains(string(m.Data), fmt.Sprintf(`"data":{"n":%d}`, i)) {
				got <- fmt.Errorf("notification %d: %s", i, m.Data)
				return
			}
		}
		got <- nil
	}()
	for i := 1; i <= notifications; i++ {
		sendText(t, pub, fmt.Sprintf(`{"method":"NOTIFY","resource":"/news","data":{"n":%d},"msg_id":%d}`, i, i+1))
		if r := recvText(t, pub); !strings.Contains(r, `"code":"success"`) {
			t.Fatalf("NOTIFY %d answered %s", i, r)
		}
	}
	if err := <-got; err != nil {
		t.Fatalf("the reading subscriber: %v", err)
	}
	// The slow one now reads: what the tree queued before it ended the
	// client, then the close. A bound, not a timing: a session that held
	// more than its queue in the tree (frames buffered on their way
	// through the plugin) would get every notification and no close.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		_, err := slow.Recv(ctx)
		if err == nil {
			continue
		}
		if code, reason := core.CloseStatus(err); code != 1008 || reason != "slow consumer" {
			t.Fatalf("the slow subscriber ended with %v, want 1008 slow consumer", err)
		}
		break
	}
}

// TestSpliceKilled: when the plugin process dies, its sessions whose
// frames the host wrote close with 1011, as the others do, and their
// clients are disconnected once (their subscriptions end).
func TestSpliceKilled(t *testing.T) {
	s, c, tree := spliceServer(t, channel.Options{})
	subs := subscribed(t, s, 3, "/news")
	if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i, sub := range subs {
		_, err := sub.Recv(t.Context())
		if code, _ := core.CloseStatus(err); code != core.CloseInternal {
			t.Errorf("session %d closed with %v, want 1011", i, err)
		}
	}
	poll.Until(t, 10*time.Second, "every client to be disconnected", func() bool {
		st := tree.Stats()
		return st.Clients == 0 && st.Subscriptions == 0
	})
}
