package plugins

import (
	"context"

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
