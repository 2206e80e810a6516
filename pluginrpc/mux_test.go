package pluginrpc

import (
	"fmt"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	tree "github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/internal/poll"
	"github.com/reso-project/reso/pluginhost"
)

// The sizes of the flood of /session/flood.
const (
	floodCount = 100
	floodSize  = 8 << 10
)

// hostSessions returns the host's ends of the sessions open on the
// Sessions calls of c's current process.
func hostSessions(c *Client) []*hostSessionEnd {
	cn := c.cur.Load()
	if cn == nil {
		return nil
	}
	var all []*hostSessionEnd
	cn.sessions.mu.Lock()
	defer cn.sessions.mu.Unlock()
	for _, call := range cn.sessions.calls {
		if call == nil {
			continue
		}
		call.mu.Lock()
		for _, rs := range call.sessions {
			all = append(all, rs)
		}
		call.mu.Unlock()
	}
	return all
}

// TestIdleSessionGoroutines: sessions of the channel door in a plugin
// process, each subscribed and then idle, cost the host one goroutine
// each (the session's own, as compiled in): they share a few Sessions
// calls, and their tree clients a few Trees calls, whose goroutines are
// a few per plugin process. Protocol version 2 had a call per session and
// one per tree client: four goroutines per idle session.
func TestIdleSessionGoroutines(t *testing.T) {
	tr, err := tree.New(t.Context(), nil, tree.Options{Epoch: "e1"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	s := newTreeServer(t, channelhost.TreeOf(tr), load(t, Config{Name: "channel", Cmd: childCmd("channel")}))
	subscribe := func(i int) {
		c, _ := openSession(t, s, "/channel")
		sendText(t, c, fmt.Sprintf(`{"method":"SUBSCRIBE","resource":"/r%d","msg_id":1}`, i))
		expectText(t, c, `{"msg_id":1,"code":"success","epoch":"e1"}`)
	}
	// Sessions first, so that every call is open and the pools are warm.
	for i := range 2 * muxCalls {
		subscribe(-1 - i)
	}
	settled := func(limit int) func() bool {
		return func() bool {
			http.DefaultClient.CloseIdleConnections()
			return runtime.NumGoroutine() <= limit
		}
	}
	base := runtime.NumGoroutine()
	const n = 200
	for i := range n {
		subscribe(i)
	}
	// One per session, and a margin for the goroutines of the test's
	// HTTP connections and of the sessions' opening, which end soon.
	limit := base + n + n/4
	poll.Until(t, 15*time.Second, fmt.Sprintf("at most %d goroutines with %d idle sessions (%d before them)", limit, n, base), settled(limit))
}

// TestSessionPluginNotReading: a plugin whose handler reads nothing holds
// the host to one window of the session's messages: the host reads the
// client while the session has credit, then stops reading it (the client
// then waits in Send: back-pressure to its connection), however much the
// client sends, and holds none of it.
func TestSessionPluginNotReading(t *testing.T) {
	p := load(t, Config{Name: "test", Cmd: childCmd("serve")})
	s := newTestServer(t, pluginhost.Entry{Name: "test", Plugin: p})
	c, _ := openSession(t, s, "/session/deaf")
	if m, err := c.Recv(t.Context()); err != nil || string(m.Data) != "ready" {
		t.Fatalf("first message %q, %v", m.Data, err)
	}
	var sent atomic.Int64
	go func() {
		data := make([]byte, floodSize)
		for range 10 * floodCount {
			if c.Send(t.Context(), core.Message{Binary: true, Data: data}) != nil {
				return
			}
			sent.Add(1)
		}
	}()
	// The pipe's Send returns once the host has read the message: the
	// host reads while its credit is positive, and a message may overdraw
	// it, so it reads exactly this many.
	cost := int64(floodSize) + messageCost
	want := (sessionWindow + cost - 1) / cost
	poll.Until(t, 15*time.Second, fmt.Sprintf("the host to read %d messages, then stop reading the client for want of credit", want), func() bool {
		rs := hostSessions(p)
		return len(rs) == 1 && !rs[0].up.positive() && sent.Load() >= want
	})
	if got := sent.Load(); got != want {
		t.Errorf("the host read %d messages of %d bytes with a window of %d; want %d", got, floodSize, sessionWindow, want)
	}
}

// TestSessionClientNotReading: a client that does not read holds the
// host to one window of the plugin's messages (and the plugin's handler
// waits in Send); once the client reads, the rest comes, all in order.
func TestSessionClientNotReading(t *testing.T) {
	p := load(t, Config{Name: "test", Cmd: childCmd("serve")})
	s := newTestServer(t, pluginhost.Entry{Name: "test", Plugin: p})
	c, done := openSession(t, s, "/session/flood")
	cost := int64(floodSize) + messageCost
	var held int64
	poll.Until(t, 15*time.Second, "the host's queue of the session to fill its window", func() bool {
		rs := hostSessions(p)
		if len(rs) != 1 {
			return false
		}
		rs[0].mu.Lock()
		defer rs[0].mu.Unlock()
		held = rs[0].down.outstanding
		return held >= sessionWindow
	})
	if held > sessionWindow+cost {
		t.Errorf("the host holds %d bytes for a client that does not read; at most %d", held, sessionWindow+cost)
	}
	for i := range floodCount {
		m, err := c.Recv(t.Context())
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if want := fmt.Sprintf("%08d", i); len(m.Data) != floodSize || string(m.Data[:8]) != want {
			t.Fatalf("message %d: %d bytes starting %q", i, len(m.Data), m.Data[:min(8, len(m.Data))])
		}
	}
	if _, err := c.Recv(t.Context()); err == nil {
		t.Error("the session did not end after the flood")
	}
	select {
	case <-done:
	case <-time.After(15 * time.Second): // a hang guard
		t.Fatal("the session's end hooks never ran")
	}
}
