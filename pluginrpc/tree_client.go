package pluginrpc

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/reso-project/reso/pluginrpc/pluginv3"
	"github.com/reso-project/reso/plugins"
)

// The tree (plugins.Tree) as a plugin sees it: its clients attach through
// the host on a few Trees calls (treeCalls), each frame tagged with the
// client's number on its call. The call's reader queues a client's frames
// for its Next, which grants the host credit as it takes them.

// treeHost is the host's tree as the plugin sees it.
type treeHost struct{ h *remoteHost }

// Connect attaches a client through the host. Its frames come on one of
// the plugin's Trees calls until Disconnect (or a Next whose ctx ends, or
// the host's end).
func (t treeHost) Connect(ctx context.Context, id, identity string) (plugins.TreeClient, error) {
	c, _, err := t.connect(ctx, id, identity, false)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// connect attaches a client through the host; with session, it asks the
// host to write the client's frames to the session of the same id itself
// (splice.go) and reports whether the host does.
func (t treeHost) connect(ctx context.Context, id, identity string, session bool) (_ *remoteTreeClient, spliced bool, _ error) {
	tc, err := t.h.trees.call(t.h.client)
	if err != nil {
		return nil, false, hostCallError(ctx, err, "tree connect", id)
	}
	c := tc.add(t.h, id)
	if c == nil {
		return nil, false, hostCallError(ctx, errors.New("the call to the host broke"), "tree connect", id)
	}
	// Through the call's sender: the caller is a session's goroutine,
	// which then waits long for its client (see sender).
	var sent chan error
	if err := tc.out.post(ctx, &pluginv3.TreeUp{Client: c.n, Kind: &pluginv3.TreeUp_Connect{Connect: &pluginv3.TreeConnectRequest{Id: wire(id), Identity: wire(identity), Session: session}}}, &sent); err != nil {
		if tc.remove(c.n) && ctx.Err() != nil {
			// The connect may still go: the release goes after it.
			tc.out.postAsync(&pluginv3.TreeUp{Client: c.n, Kind: &pluginv3.TreeUp_Release{Release: &pluginv3.TreeRelease{}}})
		}
		return nil, false, hostCallError(ctx, err, "tree connect", id)
	}
	for {
		c.mu.Lock()
		ack, gone := c.ack, c.gone
		c.mu.Unlock()
		switch {
		case ack != nil:
			if e := ack.GetError(); e != nil {
				tc.remove(c.n)
				return nil, false, decodeError(e)
			}
			c.execOn = ack.GetExec()
			return c, ack.GetSession(), nil
		case gone != nil:
			return nil, false, hostCallError(ctx, errors.New("the call to the host broke"), "tree connect", id)
		}
		select {
		case <-c.wake:
		case <-ctx.Done():
			c.release()
			return nil, false, ctx.Err()
		}
	}
}

// Call asks the host's tree to execute one message.
func (t treeHost) Call(ctx context.Context, from, identity string, msg []byte) ([]byte, error) {
	resp, err := t.h.client.TreeCall(ctx, &pluginv3.TreeCallRequest{From: wire(from), Identity: wire(identity), Msg: msg})
	if err != nil {
		return nil, hostCallError(ctx, err, "tree call", from)
	}
	if e := resp.GetError(); e != nil {
		return nil, decodeError(e)
	}
	return resp.GetReply(), nil
}

// treeCalls is a plugin's Trees calls to its host: up to muxCalls, each
// opened when a client first needs it and again after it broke.
type treeCalls struct {
	next  atomic.Uint32
	mu    sync.Mutex
	calls [muxCalls]*treeCall
}

// call returns the call for the next client.
func (m *treeCalls) call(client pluginv3.HostClient) (*treeCall, error) {
	i := m.next.Add(1) % muxCalls
	m.mu.Lock()
	defer m.mu.Unlock()
	if tc := m.calls[i]; tc != nil && !tc.isBroken() {
		return tc, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := client.Trees(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	tc := &treeCall{stream: stream, cancel: cancel, clients: make(map[uint64]*remoteTreeClient), out: newSender(stream.Send)}
	m.calls[i] = tc
	go tc.read()
	return tc, nil
}

// treeCall is one Trees call and the clients on it.
type treeCall struct {
	stream pluginv3.Host_TreesClient
	cancel context.CancelFunc
	out    *sender[*pluginv3.TreeUp]

	mu      sync.Mutex
	clients map[uint64]*remoteTreeClient
	last    uint64
	broken  bool
}

func (tc *treeCall) isBroken() bool {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.broken
}

// add registers a new client; nil when the call broke.
func (tc *treeCall) add(h *remoteHost, id string) *remoteTreeClient {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.broken {
		return nil
	}
	tc.last++
	c := &remoteTreeClient{h: h, tc: tc, n: tc.last, id: id, wake: make(chan struct{}, 1), in: grants{window: treeWindow}, up: newCredit(treeWindow), over: make(chan struct{})}
	tc.clients[c.n] = c
	return c
}

func (tc *treeCall) get(n uint64) *remoteTreeClient {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.clients[n]
}

// remove forgets client n; false when it was forgotten already.
func (tc *treeCall) remove(n uint64) bool {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	_, ok := tc.clients[n]
	delete(tc.clients, n)
	return ok
}

// read passes what the host sends to its clients until the call breaks;
// the clients left then end with errHostGone.
func (tc *treeCall) read() {
	for {
		d, err := tc.stream.Recv()
		if err != nil {
			break
		}
		c := tc.get(d.GetClient())
		if c == nil {
			continue // released already
		}
		switch k := d.GetKind().(type) {
		case *pluginv3.TreeDown_Connected:
			c.mu.Lock()
			c.ack = k.Connected
			c.mu.Unlock()
			wakeUp(c.wake)
		case *pluginv3.TreeDown_Frames:
			c.arrive(k.Frames.GetFrames(), nil)
		case *pluginv3.TreeDown_Gone:
			tc.remove(c.n)
			c.arrive(nil, &plugins.TreeGone{Code: int(k.Gone.GetCode()), Reason: string(k.Gone.GetReason())})
		case *pluginv3.TreeDown_Credit:
			c.up.add(int64(k.Credit.GetBytes()))
		}
	}
	tc.mu.Lock()
	tc.broken = true
	left := tc.clients
	tc.clients = nil
	tc.mu.Unlock()
	tc.cancel()
	tc.out.stop(errHostGone)
	for _, c := range left {
		c.arrive(nil, errHostGone)
	}
}

// remoteTreeClient is a tree client attached through the host.
type remoteTreeClient struct {
	h  *remoteHost
	tc *treeCall
	n  uint64
	id string

	mu     sync.Mutex
	ack    *pluginv3.TreeConnected // the host's answer to connect
	frames []plugins.TreeFrame     // arrived, not yet taken by Next
	gone   error                   // the end, once it arrived
	in     grants
	wake   chan struct{} // a wake for Connect and Next
	ready  func()        // OnReady's function

	err          error // what Next returns from now on
	disconnected atomic.Bool
	once         sync.Once

	// Its messages on the call (tree_exec.go).
	execOn   bool          // the host takes them on the call; set before Connect returns
	up       *credit       // for them, granted by the host
	over     chan struct{} // closed at the client's end
	overOnce sync.Once
}

// errHostGone ends a client whose call to the host broke.
var errHostGone = &plugins.TreeGone{Code: 1011, Reason: "tree unavailable"}

// errDisconnected ends a client after Disconnect.
var errDisconnected = &plugins.TreeGone{Code: 1000, Reason: "disconnected"}

// arrive queues frames, or the end, for Next (or TryNext: it calls the
// OnReady function when there were none, or at the end).
func (c *remoteTreeClient) arrive(frames []*pluginv3.TreeFrame, gone error) {
	c.mu.Lock()
	ready := c.ready
	if len(c.frames) > 0 && (gone == nil || c.gone != nil) {
		ready = nil // called already for what is queued
	}
	for _, f := range frames {
		c.frames = append(c.frames, plugins.TreeFrame{Seq: f.GetSeq(), Data: f.GetData()})
		c.in.outstanding += int64(len(f.GetData())) + frameCost
	}
	if gone != nil && c.gone == nil {
		c.gone = gone
	}
	c.mu.Unlock()
	if gone != nil {
		c.end()
	}
	wakeUp(c.wake)
	if ready != nil {
		ready()
	}
}

// OnReady sets f to be called when frames arrive while none were queued,
// and at the client's end; at once when either holds already. f must
// return quickly. With it, the door of a session drains the client
// without a goroutine waiting in Next (an idle session of an isolated
// plugin then costs the plugin one goroutine, as compiled in).
func (c *remoteTreeClient) OnReady(f func()) {
	c.mu.Lock()
	c.ready = f
	now := f != nil && (len(c.frames) > 0 || c.gone != nil || c.disconnected.Load())
	c.mu.Unlock()
	if now {
		f()
	}
}

// TryNext is Next without the wait: the frames that arrived, or none and
// nil while the client lives, its end once it ended.
func (c *remoteTreeClient) TryNext(buf []plugins.TreeFrame) ([]plugins.TreeFrame, error) {
	buf, _, err := c.take(buf)
	return buf, err
}

// take returns the frames that arrived, granting credit for them, or the
// client's end; wait when there is neither.
func (c *remoteTreeClient) take(buf []plugins.TreeFrame) (_ []plugins.TreeFrame, wait bool, _ error) {
	buf = buf[:0]
	if c.err != nil {
		return buf, false, c.err
	}
	if c.disconnected.Load() {
		c.err = errDisconnected
		return buf, false, c.err
	}
	c.mu.Lock()
	if len(c.frames) > 0 {
		var cost int64
		for _, f := range c.frames {
			cost += int64(len(f.Data)) + frameCost
		}
		buf = append(buf, c.frames...)
		clear(c.frames)
		c.frames = c.frames[:0]
		grant := c.in.take(cost)
		c.mu.Unlock()
		if grant > 0 {
			_ = c.tc.out.direct(&pluginv3.TreeUp{Client: c.n, Kind: &pluginv3.TreeUp_Credit{Credit: &pluginv3.Credit{Bytes: uint64(grant)}}})
		}
		return buf, false, nil
	}
	gone := c.gone
	c.mu.Unlock()
	if gone != nil {
		c.err = gone
		c.release()
		return buf, false, c.err
	}
	return buf, true, nil
}

// Exec sends a message of the client to the host's tree: on the client's
// call when the host takes it there (it returns once sent), else with a
// TreeExec call.
func (c *remoteTreeClient) Exec(ctx context.Context, msg []byte) error {
	if c.execOn {
		return c.execOnCall(ctx, msg)
	}
	resp, err := c.h.client.TreeExec(ctx, &pluginv3.TreeExecRequest{Id: wire(c.id), Msg: msg})
	if err != nil {
		return hostCallError(ctx, err, "tree exec", c.id)
	}
	if e := resp.GetError(); e != nil {
		return decodeError(e)
	}
	return nil
}

// Next returns the frames that arrived, waiting for some; when ctx ends,
// the client is released (the host then disconnects it).
func (c *remoteTreeClient) Next(ctx context.Context, buf []plugins.TreeFrame) ([]plugins.TreeFrame, error) {
	for {
		var err error
		var wait bool
		buf, wait, err = c.take(buf)
		if !wait {
			return buf, err
		}
		select {
		case <-c.wake:
		case <-ctx.Done():
			c.err = ctx.Err()
			c.release()
			return buf, c.err
		}
	}
}

// release tells the host the plugin is done with the client, unless the
// host ended it.
func (c *remoteTreeClient) release() {
	if c.tc.remove(c.n) {
		_ = c.tc.out.direct(&pluginv3.TreeUp{Client: c.n, Kind: &pluginv3.TreeUp_Release{Release: &pluginv3.TreeRelease{}}})
	}
}

// Disconnect asks the host to disconnect the client, then releases it.
func (c *remoteTreeClient) Disconnect() {
	c.once.Do(func() {
		c.disconnected.Store(true)
		c.end()
		ctx, cancel := context.WithTimeout(context.Background(), disconnectTimeout)
		_, _ = c.h.client.TreeDisconnect(ctx, &pluginv3.TreeDisconnectRequest{Id: wire(c.id)})
		cancel()
		c.release()
		wakeUp(c.wake)
		c.mu.Lock()
		ready := c.ready
		c.mu.Unlock()
		if ready != nil {
			ready()
		}
	})
}

var _ plugins.Tree = treeHost{}
