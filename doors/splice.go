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

// watchSplicer is a tree that can run a GET kept open itself, where the
// tree is: an isolated plugin's tree (package pluginrpc), whose host then
// runs [Watch] on its own tree for the request being answered and serves
// the stream, so that a notification to many watchers crosses the
// process boundary no time at all instead of twice per watcher
// (docs/plugins.md#notifications-of-isolated-plugins). Like
// sessionConnector, it is the adapters' business, not the host's
// contract.
type watchSplicer interface {
	// SpliceWatch asks the tree's host to run the GET kept open of
	// resource (full or not) that answers the request of ctx, with the
	// request as the host has it (its identity, its Last-Event-ID), and
	// reports whether it does: then the answer to give (its stream the
	// host's) or the error to answer with. Not spliced (an older host, a
	// request the host cannot name), the caller runs the stream itself.
	SpliceWatch(ctx context.Context, resource string, full bool) (resp *core.Response, spliced bool, err error)
}
