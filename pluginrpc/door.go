package pluginrpc

import (
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginrpc/pluginv3"
	"github.com/reso-project/reso/plugins"
)

// Door routes served by the host. The WebSocket door onto the host's tree
// (doors.Session over plugins.Services.Tree) holds nothing of the
// plugin's: each message of its client goes to the tree, which lives in
// the host, and each frame the tree queues goes back to the client, whose
// connection lives in the host too. Run in the plugin, every message
// crossed the boundary twice (up on Sessions, on to the tree on Trees),
// and cost both processes a gRPC message each way (1,000 channels of one
// publisher and one subscriber each: about twice the CPU a delivery of
// compiled in). So a plugin whose route's session handler is such a door
// says so (Route.door, for a host that offers it: capDoor), and the host
// serves the route's sessions itself with Config.Door, exactly as
// compiled in: the same code on the same tree with the same request. The
// plugin keeps the decision (a handler of its own, or a door onto a tree
// of its own, is served in the plugin as before); its process's end no
// longer ends those sessions, which never involved it.

// DoorFunc returns the session handler of a door onto tree whose clients
// may send messages of at most maxMessage bytes: the application passes
// doors.NewSession.
type DoorFunc func(tree core.Tree, maxMessage int) core.SessionHandler

// treeDoor is a session handler that is the WebSocket door onto a tree
// and nothing else (doors.Session): what Config.Door serves the same way.
// Like doors' sessionConnector, it is the adapters' business, not part of
// the host's contract.
type treeDoor interface {
	// TreeDoor returns the tree the door attaches its sessions to and
	// the largest message it accepts (0 or less: its default).
	TreeDoor() (tree core.Tree, maxMessage int)
}

// door returns the Route.door of a route whose session handler is s: set
// when the host serves door routes and s is a door onto the host's tree as
// the plugin sees it.
func (h *remoteHost) door(s core.SessionHandler) *pluginv3.RouteDoor {
	d, ok := s.(treeDoor)
	if !ok || !h.doors {
		return nil
	}
	tree, maxMessage := d.TreeDoor()
	if t, ok := tree.(treeHost); !ok || t.h != h {
		return nil
	}
	return &pluginv3.RouteDoor{MaxMessage: int64(max(maxMessage, 0))}
}

// sessionHandler returns the host's handler of the sessions of route r
// (its index i): the door Config.Door makes when the plugin declared r a
// door route onto the host's tree, else one that forwards them to the
// plugin process.
func (c *Client) sessionHandler(host plugins.Services, r *pluginv3.Route, i uint32) core.SessionHandler {
	if d := r.GetDoor(); d != nil && c.cfg.Door != nil && host.Tree != nil {
		return c.cfg.Door(host.Tree, int(min(d.GetMaxMessage(), 1<<30)))
	}
	return &remoteSession{c: c, route: i}
}
