package plugins

import (
	"context"
	"sync"

	"github.com/reso-project/reso/channel"
)

// Tree is the host service of the resource tree (package channel): plugins
// find it by type assertion on [Services], compiled in or isolated,
//
//	tree, ok := host.(plugins.Tree)
//
// A door (a WebSocket session, an HTTP request, a GET kept open) attaches
// a client with Connect and passes it the client's messages, or sends one
// message with Call. Messages and the frames that come back are the JSON
// objects of the channel convention, passed through unchanged.
type Tree interface {
	// Connect attaches a client with id (unique in the server: a session
	// route uses its session's id) and identity (the caller's e-mail, ""
	// for an anonymous caller). The client lives until it is
	// disconnected; its transient resources and subscriptions end with it.
	Connect(ctx context.Context, id, identity string) (TreeClient, error)
	// Call executes one message for a caller that holds no connection (the
	// HTTP door) and returns its reply: from names the caller in
	// notifications, identity is as for Connect. Resources it creates are
	// persistent, or leases when the message has "expires". The error is a
	// failure to reach the tree, never a failed reply.
	Call(ctx context.Context, from, identity string, msg []byte) ([]byte, error)
}

// TreeClient is one client attached to the [Tree].
type TreeClient interface {
	// Exec executes one message of the client; its reply is queued after
	// the notifications it caused, and Next returns it. The error is a
	// failure to reach the tree, never a failed reply.
	Exec(ctx context.Context, msg []byte) error
	// Next appends to buf[:0] every frame queued for the client, in order,
	// waiting for one when none is queued, and returns it. Once the client
	// is disconnected and its frames returned, it returns a *channel.Gone
	// saying why (1000 "disconnected" after Disconnect, 1008 "slow
	// consumer" when the client's queue overflowed, ...). When ctx ends it
	// returns ctx's error; the client may then be unusable (an isolated
	// plugin's client is disconnected), so pass the context of the
	// client's whole life. Next is not safe for concurrent use.
	Next(ctx context.Context, buf []channel.Frame) ([]channel.Frame, error)
	// Disconnect detaches the client: its transient resources are deleted
	// and its subscriptions end. Later calls do nothing.
	Disconnect()
}

// TreeReadier is a [TreeClient] that can be drained without a goroutine
// waiting in Next, found by type assertion: a door with many idle clients
// then keeps no goroutine per client. The clients of the tree in process
// ([TreeOf]) implement it; those of an isolated plugin do not.
type TreeReadier interface {
	// TryNext is Next without the wait: it returns the frames queued,
	// appended to buf[:0] in order; with none queued it returns buf[:0]
	// and nil while the client lives, its *channel.Gone once it is
	// disconnected.
	TryNext(buf []channel.Frame) ([]channel.Frame, error)
	// OnReady sets f to be called when frames are queued while none
	// were, and when the client is disconnected; when either holds
	// already, f is called at once. f may be called with nothing to take,
	// and by a goroutine that holds the tree's lock: it must return
	// quickly and not call the client (start a goroutine that does).
	OnReady(f func())
	// Err returns the client's *channel.Gone once it is disconnected, nil
	// while it lives, without taking frames: a drainer that leaves them
	// queued while its own consumer catches up learns from it, when f is
	// called, that the tree dropped the client (1008 "slow consumer").
	Err() error
}

// WithTree returns services that offer tree and the capabilities of s that
// this package defines ([Settings]). [Host] uses it to offer its Tree.
func WithTree(s Services, tree Tree) Services {
	if st, ok := s.(Settings); ok {
		return settingsTree{st, tree}
	}
	return treeOnly{tree}
}

// treeOnly offers a Tree and nothing else.
type treeOnly struct{ Tree }

// settingsTree offers Settings and a Tree.
type settingsTree struct {
	Settings
	Tree
}

// hostTree is the Tree as the host offers it to plugins: it keeps the
// clients attached by id, so that the end of a session disconnects the
// client of the same id, whatever became of the plugin that connected it.
type hostTree struct {
	tree Tree

	mu      sync.Mutex
	clients map[string]*hostTreeClient
}

func newHostTree(t Tree) *hostTree {
	return &hostTree{tree: t, clients: make(map[string]*hostTreeClient)}
}

// Connect connects a client to the tree and keeps it under id.
func (h *hostTree) Connect(ctx context.Context, id, identity string) (TreeClient, error) {
	c, err := h.tree.Connect(ctx, id, identity)
	if err != nil {
		return nil, err
	}
	hc := &hostTreeClient{TreeClient: c, h: h, id: id}
	h.mu.Lock()
	old := h.clients[id]
	h.clients[id] = hc
	h.mu.Unlock()
	if old != nil {
		// The tree let a second client take the id: the first is no longer
		// reachable by id, so end it now rather than leak it.
		old.Disconnect()
	}
	if r, ok := c.(TreeReadier); ok {
		return readyHostTreeClient{hc, r}, nil
	}
	return hc, nil
}

// Call passes the call on.
func (h *hostTree) Call(ctx context.Context, from, identity string, msg []byte) ([]byte, error) {
	return h.tree.Call(ctx, from, identity, msg)
}

// end disconnects the client kept under id, if any: the session of that
// id ended.
func (h *hostTree) end(id string) {
	h.mu.Lock()
	c := h.clients[id]
	h.mu.Unlock()
	if c != nil {
		c.Disconnect()
	}
}

// open returns how many clients are attached.
func (h *hostTree) open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// hostTreeClient is a client attached through the host: its Disconnect
// reaches the tree once.
type hostTreeClient struct {
	TreeClient
	h    *hostTree
	id   string
	once sync.Once
}

// Disconnect disconnects the client the first time it is called.
func (c *hostTreeClient) Disconnect() {
	c.once.Do(func() {
		c.h.mu.Lock()
		if c.h.clients[c.id] == c {
			delete(c.h.clients, c.id)
		}
		c.h.mu.Unlock()
		c.TreeClient.Disconnect()
	})
}

// readyHostTreeClient is a hostTreeClient whose client is a TreeReadier:
// it is one too, so that a type assertion on what Connect returns tells
// the truth.
type readyHostTreeClient struct {
	*hostTreeClient
	r TreeReadier
}

// TryNext passes the call on.
func (c readyHostTreeClient) TryNext(buf []channel.Frame) ([]channel.Frame, error) {
	return c.r.TryNext(buf)
}

// OnReady passes the call on.
func (c readyHostTreeClient) OnReady(f func()) { c.r.OnReady(f) }

// Err passes the call on.
func (c readyHostTreeClient) Err() error { return c.r.Err() }

var (
	_ Services    = treeOnly{}
	_ Tree        = treeOnly{}
	_ Settings    = settingsTree{}
	_ Tree        = settingsTree{}
	_ Tree        = (*hostTree)(nil)
	_ TreeClient  = (*hostTreeClient)(nil)
	_ TreeClient  = readyHostTreeClient{}
	_ TreeReadier = readyHostTreeClient{}
)
