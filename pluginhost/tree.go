package pluginhost

import (
	"context"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

// hostTree is the tree as the host offers it to plugins: a client that a
// plugin connects with the id of an open session is disconnected when that
// session ends, however it ends, whatever became of the plugin that
// connected it (its process may have died). The clients it returns are the
// tree's own, so that what the tree's adapter offers besides the contract
// (a door's way to drain a client without a goroutine) stays within reach.
type hostTree struct {
	plugins.Tree
	l *live
}

// Connect connects a client to the tree and ties it to the open session
// of the same id, if any. A client of an open session connected without
// the caller's identity in ctx (an isolated plugin's, through pluginrpc)
// gets the session's in ctx, so that the tree sees how it was checked
// (core.Identity.Checked).
func (h hostTree) Connect(ctx context.Context, id, identity string) (plugins.TreeClient, error) {
	if core.IdentityFromContext(ctx) == nil {
		if who := h.l.identity(id); who != nil && who.Email == identity {
			ctx = core.NewIdentityContext(ctx, who)
		}
	}
	c, err := h.Tree.Connect(ctx, id, identity)
	if err != nil {
		return nil, err
	}
	h.l.attach(id, c)
	return c, nil
}

// identity returns the caller's identity of the open session id, nil when
// there is none or it is anonymous.
func (l *live) identity(id string) *core.Identity {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.sessions[id]; s != nil {
		return s.identity
	}
	return nil
}

// attach ties c to the open session id, whose end disconnects it; a client
// the session had already is disconnected now (the tree let a second client
// take the id, so the first is no longer reachable by it). c is not tied to
// anything when no session of that id is open: its plugin owns it.
func (l *live) attach(id string, c plugins.TreeClient) {
	l.mu.Lock()
	s := l.sessions[id]
	var old plugins.TreeClient
	if s != nil {
		old, s.client = s.client, c
	}
	l.mu.Unlock()
	if old != nil && old != c {
		old.Disconnect()
	}
}

var _ plugins.Tree = hostTree{}
