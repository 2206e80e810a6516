package pluginrpc

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/reso-project/reso/pluginrpc/pluginv3"
	"github.com/reso-project/reso/plugins"
)

// The tree (plugins.Tree) across the process boundary, the host's end:
// hostServer attaches clients to its tree and sends their frames on Trees
// calls; the plugin's end (treeHost, tree_client.go) is a plugins.Tree
// over the Host service. Frames and messages cross as bytes, unchanged.

// errNoTree answers a tree call when the host offers no tree.
var errNoTree = errors.New("pluginrpc: the host offers no tree")

// errNoTreeClient answers TreeExec for an id that no Trees call of this
// plugin process holds.
var errNoTreeClient = errors.New("pluginrpc: no tree client of that id")

// disconnectTimeout bounds a plugin's TreeDisconnect call, which has no
// context of its own: the host may be gone.
const disconnectTimeout = 5 * time.Second

// treeClients is the host's table of the tree clients one plugin process
// attached, by id.
type treeClients struct {
	mu sync.Mutex
	m  map[string]plugins.TreeClient
}

func (t *treeClients) get(id string) plugins.TreeClient {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

func (t *treeClients) put(id string, c plugins.TreeClient) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[string]plugins.TreeClient)
	}
	t.m[id] = c
}

func (t *treeClients) remove(id string, c plugins.TreeClient) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[id] == c {
		delete(t.m, id)
	}
}

// Trees serves the tree clients a plugin attaches on one call: the reader
// (this goroutine) connects, credits and releases them; one writer
// goroutine per call sends what their queues in the tree hold, in turn,
// while each has credit. A client of the tree in process (treeReadier)
// thus costs no goroutine of its own; another (a Tree other than the
// host's own) gets a pump that waits in Next. The call's end disconnects
// every client on it.
func (s *hostServer) Trees(stream pluginv3.Host_TreesServer) error {
	t := &hostTrees{srv: s, stream: stream, ctx: stream.Context(), clients: make(map[uint64]*hostTreeClient), wake: make(chan struct{}, 1), quit: make(chan struct{})}
	var workers sync.WaitGroup
	workers.Go(t.write)
	for {
		up, err := stream.Recv()
		if err != nil {
			break
		}
		n := up.GetClient()
		switch k := up.GetKind().(type) {
		case *pluginv3.TreeUp_Connect:
			hc := &hostTreeClient{n: n, id: string(k.Connect.GetId()), credit: newCredit(treeWindow)}
			if !t.put(hc) {
				continue
			}
			identity, session := string(k.Connect.GetIdentity()), k.Connect.GetSession()
			workers.Go(func() { t.connect(hc, identity, session, &workers) })
		case *pluginv3.TreeUp_Credit:
			if hc := t.get(n); hc != nil {
				hc.credit.add(int64(k.Credit.GetBytes()))
				t.ready(hc)
			}
		case *pluginv3.TreeUp_Release:
			if hc := t.get(n); hc != nil {
				t.finish(hc)
			}
		case *pluginv3.TreeUp_Exec:
			if hc := t.get(n); hc != nil {
				t.exec(hc, k.Exec.GetMsg(), &workers)
			}
		}
	}
	close(t.quit)
	for _, hc := range t.closeAll() {
		t.release(hc)
	}
	workers.Wait()
	return nil
}

// hostTrees is the host's end of one Trees call.
type hostTrees struct {
	srv    *hostServer
	stream pluginv3.Host_TreesServer
	ctx    context.Context
	smu    sync.Mutex    // serializes Send
	wake   chan struct{} // a wake for the writer
	quit   chan struct{} // closed when the call's reader is done

	mu      sync.Mutex
	clients map[uint64]*hostTreeClient
	queue   []*hostTreeClient // clients with something to send, in turn
	closed  bool
}

// hostTreeClient is one client on a Trees call.
type hostTreeClient struct {
	n      uint64
	id     string
	credit *credit // for its frames, granted by the plugin

	// Guarded by hostTrees.mu.
	c        plugins.TreeClient // nil while connecting
	r        treeReadier        // c's, when it has one and its frames go on the call
	sp       *splice            // writes c's frames to its session instead
	queued   bool               // in hostTrees.queue
	finished bool               // released: disconnected and forgotten

	execs execQueue // its messages for the tree (tree_exec.go)

	// Used by the writer only.
	frames []plugins.TreeFrame
}

func (t *hostTrees) put(hc *hostTreeClient) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.clients[hc.n] != nil {
		return false
	}
	t.clients[hc.n] = hc
	return true
}

func (t *hostTrees) get(n uint64) *hostTreeClient {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.clients[n]
}

// closeAll forgets every client and returns them.
func (t *hostTrees) closeAll() map[uint64]*hostTreeClient {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	m := t.clients
	t.clients = nil
	t.queue = nil
	return m
}

// send sends d on the call.
func (t *hostTrees) send(d *pluginv3.TreeDown) error {
	t.smu.Lock()
	defer t.smu.Unlock()
	return t.stream.Send(d)
}

// connect attaches hc to the tree and answers the plugin. With session,
// the client's frames go to the host's session of the same id, if the
// process has one open and the client can be drained without Next
// (splice.go); the answer says whether they do.
func (t *hostTrees) connect(hc *hostTreeClient, identity string, session bool, workers *sync.WaitGroup) {
	tree := t.srv.host.Tree
	if tree == nil {
		t.forget(hc)
		_ = t.send(&pluginv3.TreeDown{Client: hc.n, Kind: &pluginv3.TreeDown_Connected{Connected: &pluginv3.TreeConnected{Error: encodeError(errNoTree)}}})
		return
	}
	c, err := tree.Connect(t.ctx, hc.id, identity)
	if err != nil {
		t.forget(hc)
		_ = t.send(&pluginv3.TreeDown{Client: hc.n, Kind: &pluginv3.TreeDown_Connected{Connected: &pluginv3.TreeConnected{Error: encodeError(err)}}})
		return
	}
	r, _ := c.(treeReadier)
	var rs *hostSessionEnd
	if session && r != nil && t.srv.sessions != nil {
		rs = t.srv.sessions.index.get(hc.id)
	}
	var sp *splice
	if rs != nil {
		sp = rs.spliceTo(r)
	}
	t.mu.Lock()
	gone := hc.finished
	if !gone {
		hc.c, hc.r, hc.sp = c, r, sp
		if sp != nil {
			hc.r = nil // its frames do not go on the call
		}
	}
	t.mu.Unlock()
	if gone {
		// Released (or the call ended) while connecting.
		if sp != nil {
			sp.halt()
		}
		c.Disconnect()
		return
	}
	spliced := sp != nil
	t.srv.trees.put(hc.id, c)
	// The answer goes before any frame: the writer and the pump start
	// after it.
	_ = t.send(&pluginv3.TreeDown{Client: hc.n, Kind: &pluginv3.TreeDown_Connected{Connected: &pluginv3.TreeConnected{Session: spliced, Exec: true}}})
	if spliced {
		return
	}
	if r != nil {
		r.OnReady(func() { t.ready(hc) })
		t.ready(hc)
		return
	}
	workers.Go(func() { t.pump(hc, c) })
}

// forget drops hc from the call's table.
func (t *hostTrees) forget(hc *hostTreeClient) {
	t.mu.Lock()
	defer t.mu.Unlock()
	hc.finished = true
	if t.clients[hc.n] == hc {
		delete(t.clients, hc.n)
	}
}

// finish forgets hc and disconnects its client.
func (t *hostTrees) finish(hc *hostTreeClient) {
	t.forget(hc)
	t.release(hc)
}

// release disconnects the client of hc, once it is attached.
func (t *hostTrees) release(hc *hostTreeClient) {
	t.mu.Lock()
	hc.finished = true
	c, r, sp := hc.c, hc.r, hc.sp
	hc.c, hc.r, hc.sp = nil, nil, nil
	t.mu.Unlock()
	if c == nil {
		return
	}
	if sp != nil {
		// Before the client's end, which is the session's business now.
		sp.halt()
	}
	if r != nil {
		r.OnReady(nil)
	}
	t.srv.trees.remove(hc.id, c)
	c.Disconnect()
	hc.credit.add(1) // a pump waiting for credit looks again, and ends
}

// ready queues hc for the writer, unless it is queued already. It never
// blocks: it is the client's OnReady function.
func (t *hostTrees) ready(hc *hostTreeClient) {
	t.mu.Lock()
	if hc.queued || hc.finished || t.closed {
		t.mu.Unlock()
		return
	}
	hc.queued = true
	t.queue = append(t.queue, hc)
	t.mu.Unlock()
	wakeUp(t.wake)
}

// write sends the frames of the clients queued, in turn, until the call
// ends. A client without credit is passed over (its credit queues it
// again) unless the tree has ended it: its end goes at once, and what its
// queue held is dropped with it.
func (t *hostTrees) write() {
	var out []*pluginv3.TreeFrame
	for {
		select {
		case <-t.wake:
		case <-t.quit:
			return
		}
		for {
			t.mu.Lock()
			if len(t.queue) == 0 {
				t.queue = nil
				t.mu.Unlock()
				break
			}
			hc := t.queue[0]
			t.queue[0] = nil
			t.queue = t.queue[1:]
			hc.queued = false
			r := hc.r
			if hc.finished {
				r = nil
			}
			t.mu.Unlock()
			if r == nil {
				continue
			}
			var err error
			out, err = t.take(hc, r, out)
			if err != nil {
				t.sendGone(hc, err)
				t.finish(hc)
			}
		}
	}
}

// take sends what the queue of hc holds while it has credit, and returns
// the client's end once the tree ended it.
func (t *hostTrees) take(hc *hostTreeClient, r treeReadier, out []*pluginv3.TreeFrame) ([]*pluginv3.TreeFrame, error) {
	for {
		if !hc.credit.positive() {
			return out, r.Err()
		}
		var err error
		hc.frames, err = r.TryNext(hc.frames)
		if len(hc.frames) > 0 {
			var cost int64
			out = out[:0]
			for _, f := range hc.frames {
				out = append(out, &pluginv3.TreeFrame{Seq: f.Seq, Data: f.Data})
				cost += int64(len(f.Data)) + frameCost
			}
			hc.credit.spend(cost)
			t.srv.crossed.add()
			serr := t.send(&pluginv3.TreeDown{Client: hc.n, Kind: &pluginv3.TreeDown_Frames{Frames: &pluginv3.TreeFrames{Frames: out}}})
			clear(out)
			clear(hc.frames)
			if serr != nil {
				return out, nil // the call is over; its reader ends the clients
			}
			continue
		}
		return out, err
	}
}

// pump sends the frames of a client without TryNext: one Next, one
// message, while the client has credit.
func (t *hostTrees) pump(hc *hostTreeClient, c plugins.TreeClient) {
	var frames []plugins.TreeFrame
	var out []*pluginv3.TreeFrame
	for hc.credit.wait(t.ctx, t.quit, nil) {
		var err error
		frames, err = c.Next(t.ctx, frames)
		if len(frames) > 0 {
			var cost int64
			out = out[:0]
			for _, f := range frames {
				out = append(out, &pluginv3.TreeFrame{Seq: f.Seq, Data: f.Data})
				cost += int64(len(f.Data)) + frameCost
			}
			hc.credit.spend(cost)
			t.srv.crossed.add()
			if t.send(&pluginv3.TreeDown{Client: hc.n, Kind: &pluginv3.TreeDown_Frames{Frames: &pluginv3.TreeFrames{Frames: out}}}) != nil {
				return
			}
			clear(out)
			clear(frames)
		}
		if err != nil {
			t.sendGone(hc, err)
			t.finish(hc)
			return
		}
	}
}

// sendGone sends the client's end when err is its *plugins.TreeGone and
// the plugin has not released it.
func (t *hostTrees) sendGone(hc *hostTreeClient, err error) {
	var gone *plugins.TreeGone
	if !errors.As(err, &gone) {
		return
	}
	t.mu.Lock()
	finished := hc.finished
	t.mu.Unlock()
	if finished {
		return
	}
	_ = t.send(&pluginv3.TreeDown{Client: hc.n, Kind: &pluginv3.TreeDown_Gone{Gone: &pluginv3.TreeGone{Code: int32(gone.Code), Reason: wire(gone.Reason)}}})
}

// treeReadier is a tree client that can be drained without a goroutine
// waiting in Next: the clients of the tree in process (channelhost.TreeOf), which
// the host hands over as they are. How a client is drained is the tree
// adapter's business, not the plugin contract's, so this is found by type
// assertion; another client is drained with Next (hostTrees.pump).
type treeReadier interface {
	// TryNext is Next without the wait: the frames queued, appended to
	// buf[:0]; none and nil while the client lives, its *plugins.TreeGone
	// once it is disconnected.
	TryNext(buf []plugins.TreeFrame) ([]plugins.TreeFrame, error)
	// OnReady sets f to be called when frames are queued while none were,
	// and when the client is disconnected; f must return quickly.
	OnReady(f func())
	// Err returns the client's *plugins.TreeGone once it is disconnected,
	// nil while it lives, without taking frames.
	Err() error
}

// wakeUp makes sure a wake is pending on wake.
func wakeUp(wake chan struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}

// TreeExec executes a message of a client of this plugin process.
func (s *hostServer) TreeExec(ctx context.Context, req *pluginv3.TreeExecRequest) (*pluginv3.TreeExecResponse, error) {
	c := s.trees.get(string(req.GetId()))
	if c == nil {
		return &pluginv3.TreeExecResponse{Error: encodeError(errNoTreeClient)}, nil
	}
	if err := c.Exec(ctx, req.GetMsg()); err != nil {
		return &pluginv3.TreeExecResponse{Error: encodeError(err)}, nil
	}
	return &pluginv3.TreeExecResponse{}, nil
}

// TreeDisconnect disconnects a client of this plugin process; an unknown
// id is already gone.
func (s *hostServer) TreeDisconnect(_ context.Context, req *pluginv3.TreeDisconnectRequest) (*pluginv3.TreeDisconnectResponse, error) {
	if c := s.trees.get(string(req.GetId())); c != nil {
		c.Disconnect()
	}
	return &pluginv3.TreeDisconnectResponse{}, nil
}

// TreeCall executes one message without a client.
func (s *hostServer) TreeCall(ctx context.Context, req *pluginv3.TreeCallRequest) (*pluginv3.TreeCallResponse, error) {
	tree := s.host.Tree
	if tree == nil {
		return &pluginv3.TreeCallResponse{Error: encodeError(errNoTree)}, nil
	}
	reply, err := tree.Call(ctx, string(req.GetFrom()), string(req.GetIdentity()), req.GetMsg())
	if err != nil {
		return &pluginv3.TreeCallResponse{Error: encodeError(err)}, nil
	}
	return &pluginv3.TreeCallResponse{Reply: reply}, nil
}

var _ plugins.TreeClient = (*remoteTreeClient)(nil)
