package doors

import (
	"context"

	"github.com/reso-project/reso/core"
)

// sessionConnector is a tree that can write the frames of a client
// connected for a session to that session itself: an isolated plugin's
// tree (package pluginrpc), whose host holds both the tree and the
// session's connection, so that a notification fans out where the
// connections are instead of crossing the process boundary twice per
// session (docs/plugins.md#notifications-of-isolated-plugins). Like
// readier, it is the adapters' business, not part of the host's contract.
type sessionConnector interface {
	// ConnectSession is Connect with the session's id; spliced reports
	// that the tree writes the client's frames to s itself, closing s
	// with the tree's code and reason when it ends the client: the
	// client's Next then returns nothing but its end.
	ConnectSession(ctx context.Context, s core.Session, identity string) (c core.TreeClient, spliced bool, err error)
}

// connect attaches the client of session s to tree: through
// ConnectSession when tree offers it, else with Connect.
func connect(ctx context.Context, tree core.Tree, s core.Session, identity string) (core.TreeClient, bool, error) {
	if sc, ok := tree.(sessionConnector); ok {
		return sc.ConnectSession(ctx, s, identity)
	}
	c, err := tree.Connect(ctx, s.ID(), identity)
	return c, false, err
}
