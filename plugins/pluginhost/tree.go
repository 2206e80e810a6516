package pluginhost

import (
	"context"
	"sync"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/plugins"
)

// WithTree returns services that offer tree and the capabilities of s that
// this package defines ([Settings]). [Host] uses it to offer its Tree.
func WithTree(s plugins.Services, tree plugins.Tree) plugins.Services {
	if st, ok := s.(plugins.Settings); ok {
		return settingsTree{st, tree}
	}
	return treeOnly{tree}
}

// treeOnly offers a Tree and nothing else.
type treeOnly struct{ plugins.Tree }

// settingsTree offers Settings and a Tree.
type settingsTree struct {
	plugins.Settings
	plugins.Tree
}

// hostTree is the Tree as the host offers it to plugins: it keeps the
// clients attached by id, so that the end of a session disconnects the
// client of the same id, whatever became of the plugin that connected it.
type hostTree struct {
	tree plugins.Tree

	mu      sync.Mutex
	clients map[string]*hostTreeClient
}

func newHostTree(t plugins.Tree) *hostTree {
	return &hostTree{tree: t, clients: make(map[string]*hostTreeClient)}
}

// Connect connects a client to the tree and keeps it under id.
func (h *hostTree) Connect(ctx context.Context, id, identity string) (plugins.TreeClient, error) {
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
	if r, ok := c.(plugins.TreeReadier); ok {
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
	plugins.TreeClient
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
	r plugins.TreeReadier
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
	_ plugins.Services    = treeOnly{}
	_ plugins.Tree        = treeOnly{}
	_ plugins.Settings    = settingsTree{}
	_ plugins.Tree        = settingsTree{}
	_ plugins.Tree        = (*hostTree)(nil)
	_ plugins.TreeClient  = (*hostTreeClient)(nil)
	_ plugins.TreeClient  = readyHostTreeClient{}
	_ plugins.TreeReadier = readyHostTreeClient{}
)
