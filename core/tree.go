package core

import "context"

// Tree is the host service of the resource tree (package channel), offered
// to plugins as plugins.Services.Tree, compiled in or isolated.
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
	// is disconnected and its frames returned, it returns a *[TreeGone]
	// saying why (1000 "disconnected" after Disconnect, 1008 "slow
	// consumer" when the client's queue overflowed, ...). When ctx ends it
	// returns ctx's error; the client may then be unusable (an isolated
	// plugin's client is disconnected), so pass the context of the
	// client's whole life. Next is not safe for concurrent use.
	Next(ctx context.Context, buf []TreeFrame) ([]TreeFrame, error)
	// Disconnect detaches the client: its transient resources are deleted
	// and its subscriptions end. Later calls do nothing.
	Disconnect()
}

// TreeFrame is one message the tree sends a client: a reply or a
// notification, one JSON object. The Data of a notification may be shared
// by every client that receives it: never modify it.
type TreeFrame struct {
	Seq  uint64 // the seq of the change a notification reports; 0 for a reply
	Data []byte
}

// TreeGone is why the tree disconnected a client, as [TreeClient].Next
// reports it once the frames queued before have been returned: a close
// code (as WebSocket numbers them) and a short reason.
type TreeGone struct {
	Code   int
	Reason string
}

// Error returns "plugins: tree client disconnected: REASON".
func (g *TreeGone) Error() string { return "plugins: tree client disconnected: " + g.Reason }
