package doors_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/doors"
	"github.com/reso-project/reso/internal/poll"
	"github.com/reso-project/reso/internal/treetest"
	"github.com/reso-project/reso/plugins"
	channelplugin "github.com/reso-project/reso/plugins/channel"
)

func send(t *testing.T, s core.Session, msg string) {
	t.Helper()
	if err := s.Send(t.Context(), core.Message{Data: []byte(msg)}); err != nil {
		t.Fatalf("send %s: %v", msg, err)
	}
}

func expect(t *testing.T, s core.Session, want string) {
	t.Helper()
	m, err := s.Recv(t.Context())
	if err != nil {
		t.Fatalf("waiting for %s: %v", want, err)
	}
	if m.Binary || string(m.Data) != want {
		t.Fatalf("got %s (binary %v), want %s", m.Data, m.Binary, want)
	}
}

// TestSessionDoor checks the WebSocket door over pipe sessions: messages
// reach the tree as they were sent, replies come after the notifications
// they caused, binary messages are ignored, the identity reaches the
// tree, and the end of a session disconnects its client once.
func TestSessionDoor(t *testing.T) {
	s := newServer(t, channelplugin.New())
	a, doneA := s.session(t, "X-User", "ann@example.com")
	b, doneB := s.session(t)
	poll.Until(t, 10e9, "both clients to connect", func() bool { return len(s.tree.Connected()) == 2 })
	if who := s.tree.Connected(); who[a.ID()] != "ann@example.com" || who[b.ID()] != "" {
		t.Errorf("identities %v", who)
	}
	send(t, a, `{"method":"SUBSCRIBE","resource":"/room","msg_id":"s1"}`)
	expect(t, a, `{"msg_id":"s1","code":"success","epoch":"`+treetest.Epoch+`"}`)
	send(t, b, `{"method":"PUT","resource":"/room","msg_id":2,"entity":{"topic":"x"}}`)
	expect(t, b, `{"msg_id":2,"code":"success"}`)
	expect(t, a, `{"notify":"PUT","resource":"/room","type":"application/json","entity":{"topic":"x"},"from":"`+b.ID()+`","seq":1}`)
	// Self-notification first, then the reply.
	if err := a.Send(t.Context(), core.Message{Binary: true, Data: []byte(`{"method":"GET","resource":"/room","msg_id":9}`)}); err != nil {
		t.Fatal(err)
	}
	send(t, a, `{"method":"NOTIFY","resource":"/room","msg_id":3,"data":"hi"}`)
	expect(t, a, `{"notify":"NOTIFY","resource":"/room","data":"hi","from":"`+a.ID()+`","seq":2}`)
	expect(t, a, `{"msg_id":3,"code":"success","sent_count":1}`)
	send(t, a, `not json`)
	expect(t, a, `{"msg_id":null,"code":"failed","reason":"invalid JSON"}`)

	a.Close(core.CloseNormal, "")
	<-doneA
	if n := s.tree.Disconnects(a.ID()); n != 1 {
		t.Errorf("a disconnected %d times", n)
	}
	send(t, b, `{"method":"NOTIFY","resource":"/room","msg_id":4}`)
	expect(t, b, `{"msg_id":4,"code":"failed","reason":"no subscriber"}`)
	b.Close(core.CloseNormal, "")
	<-doneB
	if n := s.tree.Disconnects(b.ID()); n != 1 {
		t.Errorf("b disconnected %d times", n)
	}
}

// notifyUntilDropped sends NOTIFYs to path from w until the only other
// subscriber, which reads nothing, is dropped as a slow consumer. How many
// frames that subscriber's writer took before it blocked on the unread
// session is up to the scheduler, so a fixed count could fall short.
func notifyUntilDropped(t *testing.T, w core.Session, path string) {
	t.Helper()
	for range 100 * treetest.QueueLimit {
		send(t, w, `{"method":"NOTIFY","resource":"`+path+`","msg_id":1}`)
		m, err := w.Recv(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Data) == `{"msg_id":1,"code":"failed","reason":"no subscriber"}` {
			return
		}
	}
	t.Fatal("the subscriber was never dropped")
}

// TestSessionSlowConsumer checks that a client the tree disconnects for
// not reading is closed with the tree's code and reason, while the writer
// is never held up.
func TestSessionSlowConsumer(t *testing.T) {
	s := newServer(t, channelplugin.New())
	slow, done := s.session(t)
	w, _ := s.session(t)
	send(t, slow, `{"method":"SUBSCRIBE","resource":"/r","msg_id":1}`)
	expect(t, slow, `{"msg_id":1,"code":"success","epoch":"`+treetest.Epoch+`"}`)
	notifyUntilDropped(t, w, "/r")
	var err error
	for err == nil {
		var m core.Message
		m, err = slow.Recv(t.Context())
		if err == nil && !strings.Contains(string(m.Data), `"notify":"NOTIFY"`) {
			t.Errorf("unexpected %s", m.Data)
		}
	}
	if code, reason := core.CloseStatus(err); code != 1008 || reason != "slow consumer" {
		t.Errorf("closed with %d %q (%v), want 1008 slow consumer", code, reason, err)
	}
	<-done
	if n := s.tree.Disconnects(slow.ID()); n != 1 {
		t.Errorf("disconnected %d times", n)
	}
}

// TestSessionTooBig checks that a message past MaxMessage closes the
// session with 1009.
func TestSessionTooBig(t *testing.T) {
	s := newServer(t, &channelplugin.Plugin{MaxMessage: 100})
	c, done := s.session(t)
	send(t, c, `{"method":"PUT","resource":"/r","msg_id":1,"entity":"`+strings.Repeat("x", 100)+`"}`)
	_, err := c.Recv(context.WithoutCancel(t.Context()))
	if code, reason := core.CloseStatus(err); code != doors.CloseTooBig || reason != "message too big" {
		t.Errorf("closed with %d %q (%v)", code, reason, err)
	}
	<-done
	if n := s.tree.Disconnects(c.ID()); n != 1 {
		t.Errorf("disconnected %d times", n)
	}
	if status, _, _ := s.do(t, "GET", "/channel/r", ""); status != "HTTP/1.1 404 Not Found" {
		t.Errorf("the message reached the tree: GET answers %q", status)
	}
}

// countingTree passes a tree's clients on, counting their calls of Next;
// its clients can be drained without Next when the tree's can.
type countingTree struct {
	plugins.Tree
	nexts atomic.Int64
}

func (t *countingTree) Connect(ctx context.Context, id, identity string) (plugins.TreeClient, error) {
	c, err := t.Tree.Connect(ctx, id, identity)
	if err != nil {
		return nil, err
	}
	cc := countingClient{c, t}
	if r, ok := c.(treeReadier); ok {
		return readyCountingClient{cc, r}, nil
	}
	return cc, nil
}

type countingClient struct {
	plugins.TreeClient
	t *countingTree
}

func (c countingClient) Next(ctx context.Context, buf []plugins.TreeFrame) ([]plugins.TreeFrame, error) {
	c.t.nexts.Add(1)
	return c.TreeClient.Next(ctx, buf)
}

// treeReadier is what the doors find on the clients of channelhost.TreeOf to
// drain them without a goroutine waiting in Next.
type treeReadier interface {
	TryNext(buf []plugins.TreeFrame) ([]plugins.TreeFrame, error)
	OnReady(f func())
}

type readyCountingClient struct {
	countingClient
	treeReadier
}

// TestSessionWriters runs the session door with both writers: the pump
// waiting in Next (the stand-in tree, like an isolated plugin's) and the
// goroutine started on demand (the tree in process, drained without Next, whose
// Next is never called). Each sees replies and notifications in order,
// closes a slow consumer with 1008 and disconnects its client.
func TestSessionWriters(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tree  func(t *testing.T) plugins.Tree
		ready bool
	}{
		{"pump", func(*testing.T) plugins.Tree { return treetest.New() }, false},
		{"on demand", func(t *testing.T) plugins.Tree {
			tr, err := channel.New(t.Context(), nil, channel.Options{QueueFrames: treetest.QueueLimit, Epoch: treetest.Epoch})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tr.Close() })
			return channelhost.TreeOf(tr)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := &countingTree{Tree: tc.tree(t)}
			s := newServerOn(t, ct, channelplugin.New())
			a, doneA := s.session(t)
			b, doneB := s.session(t)
			send(t, a, `{"method":"SUBSCRIBE","resource":"/r","msg_id":0}`)
			expect(t, a, `{"msg_id":0,"code":"success","epoch":"`+treetest.Epoch+`"}`)
			const n = 50
			for i := 1; i <= n; i++ {
				send(t, b, fmt.Sprintf(`{"method":"PUT","resource":"/r","msg_id":%d}`, i))
			}
			for i := 1; i <= n; i++ {
				expect(t, b, fmt.Sprintf(`{"msg_id":%d,"code":"success"}`, i))
				m, err := a.Recv(t.Context())
				if err != nil || !strings.Contains(string(m.Data), `"notify":"PUT"`) || !strings.HasSuffix(string(m.Data), fmt.Sprintf(`"seq":%d}`, i)) {
					t.Fatalf("notification %d: %s %v", i, m.Data, err)
				}
			}
			// Self-notification first, then the reply.
			send(t, a, `{"method":"NOTIFY","resource":"/r","msg_id":"x","data":"hi"}`)
			if m, err := a.Recv(t.Context()); err != nil || !strings.Contains(string(m.Data), `"notify":"NOTIFY"`) {
				t.Fatalf("self-notification: %s %v", m.Data, err)
			}
			expect(t, a, `{"msg_id":"x","code":"success","sent_count":1}`)

			// a stops reading: the tree closes it as a slow consumer.
			notifyUntilDropped(t, b, "/r")
			var err error
			for err == nil {
				_, err = a.Recv(t.Context())
			}
			if code, reason := core.CloseStatus(err); code != 1008 || reason != "slow consumer" {
				t.Errorf("closed with %d %q (%v), want 1008 slow consumer", code, reason, err)
			}
			<-doneA
			b.Close(core.CloseNormal, "")
			<-doneB
			if got := ct.nexts.Load(); (got == 0) != tc.ready {
				t.Errorf("Next called %d times", got)
			}
		})
	}
}

// panickyTree passes a tree's clients on; their Exec panics on a message
// that holds "panic".
type panickyTree struct{ plugins.Tree }

func (t panickyTree) Connect(ctx context.Context, id, identity string) (plugins.TreeClient, error) {
	c, err := t.Tree.Connect(ctx, id, identity)
	return panickyClient{c}, err
}

type panickyClient struct{ plugins.TreeClient }

func (c panickyClient) Exec(ctx context.Context, msg []byte) error {
	if strings.Contains(string(msg), "panic") {
		panic("tree panicked")
	}
	return c.TreeClient.Exec(ctx, msg)
}

// Next waits for frames or the client's end, not for ctx: the session's
// writer then sees the client gone when the panic's unwinding disconnects
// it, as a writer starved of CPU may see that before the cancel. That
// race closed a session whose tree panicked with the tree's 1000 instead
// of 1011 (once under .ci/run).
func (c panickyClient) Next(ctx context.Context, buf []core.TreeFrame) ([]core.TreeFrame, error) {
	return c.TreeClient.Next(context.WithoutCancel(ctx), buf)
}

// TestSessionTreePanics checks that a panic of the tree, which runs on a
// goroutine of the pool (the first message) or on the session's own (a
// session that sent many), ends the session with 1011 and not the server.
func TestSessionTreePanics(t *testing.T) {
	for _, before := range []int{0, 100} {
		t.Run(fmt.Sprint(before, " messages before"), func(t *testing.T) { testSessionTreePanics(t, before) })
	}
}

func testSessionTreePanics(t *testing.T, before int) {
	s := newServerOn(t, panickyTree{treetest.New()}, channelplugin.New())
	a, doneA := s.session(t)
	send(t, a, `{"method":"SUBSCRIBE","resource":"/r","msg_id":1}`)
	expect(t, a, `{"msg_id":1,"code":"success","epoch":"`+treetest.Epoch+`"}`)
	for i := range before {
		send(t, a, fmt.Sprintf(`{"method":"UNSUBSCRIBE","resource":"/x","msg_id":%d}`, i+10))
		expect(t, a, fmt.Sprintf(`{"msg_id":%d,"code":"success"}`, i+10))
	}
	send(t, a, `{"method":"NOTIFY","resource":"/panic","msg_id":2}`)
	_, err := a.Recv(context.WithoutCancel(t.Context()))
	if code, _ := core.CloseStatus(err); code != core.CloseInternal {
		t.Errorf("closed with %d (%v), want %d", code, err, core.CloseInternal)
	}
	<-doneA
	b, doneB := s.session(t)
	send(t, b, `{"method":"SUBSCRIBE","resource":"/r","msg_id":1}`)
	expect(t, b, `{"msg_id":1,"code":"success","epoch":"`+treetest.Epoch+`"}`)
	b.Close(core.CloseNormal, "")
	<-doneB
}

// readsSession records whether the contexts of its reads can end.
type readsSession struct {
	core.Session
	reads, cancelable atomic.Int64
}

func (s *readsSession) Recv(ctx context.Context) (core.Message, error) {
	s.reads.Add(1)
	if ctx.Done() != nil {
		s.cancelable.Add(1)
	}
	return s.Session.Recv(ctx)
}

// With the tree in process the door reads without a watch on the
// session's context, which would cost an idle session what the transport
// registers on it for as long as it waits (half a KiB with the WebSocket
// transport), and still ends when the session is closed, as the host
// does when the server shuts down.
func TestSessionReadsWithoutWatch(t *testing.T) {
	tr, err := channel.New(t.Context(), nil, channel.Options{Epoch: treetest.Epoch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	server, client := core.Pipe("s1")
	rs := &readsSession{Session: server}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	h := &doors.Session{Tree: channelhost.TreeOf(tr)}
	served := make(chan error, 1)
	go func() { served <- h.ServeSession(ctx, &core.Request{}, rs) }()
	send(t, client, `{"method":"SUBSCRIBE","resource":"/r","msg_id":1}`)
	expect(t, client, `{"msg_id":1,"code":"success","epoch":"`+treetest.Epoch+`"}`)
	if rs.reads.Load() == 0 || rs.cancelable.Load() != 0 {
		t.Errorf("%d reads, %d of them with a context that can end: want none", rs.reads.Load(), rs.cancelable.Load())
	}
	// The host closes the session as it shuts down, then cancels.
	server.Close(core.CloseGoingAway, "server shutting down")
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ServeSession: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeSession still runs after its session was closed")
	}
}
