package doors

import "github.com/reso-project/reso/core"

// readier is a tree client that can be drained without a goroutine
// waiting in Next: the clients of the tree in process (package
// channelhost's TreeOf), and those of an isolated plugin's tree (package
// pluginrpc). It is the adapters' own business, not part of the host's
// contract: a client that is not one is drained with Next.
type readier interface {
	// TryNext is Next without the wait: it returns the frames queued,
	// appended to buf[:0] in order; with none queued it returns buf[:0]
	// and nil while the client lives, its *core.TreeGone once it is
	// disconnected.
	TryNext(buf []core.TreeFrame) ([]core.TreeFrame, error)
	// OnReady sets f to be called when frames are queued while none
	// were, and when the client is disconnected; when either holds
	// already, f is called at once. f may be called with nothing to take,
	// and by a goroutine that holds the tree's lock: it must return
	// quickly and not call the client (start a goroutine that does).
	OnReady(f func())
}
