package pluginrpc

import (
	"context"
	"sync"

	"github.com/reso-project/reso/pluginrpc/pluginv3"
)

// Flow control of the multiplexed calls (Plugin.Sessions, Host.Trees):
// many sessions or tree clients share one call, so gRPC's window of the
// call cannot hold one back without holding back all. Each session and
// client has a credit window of its own instead, in bytes, in each
// direction: the sender sends while its credit is positive (a message may
// overdraw it) and the receiver grants credit back as it takes what it
// received. What a receiver holds for one session or client is thus at
// most its window and one message, whatever the peer does; a peer that
// sends past it breaks the protocol (see inbox.arrive).

const (
	// sessionWindow is a session's credit in each direction.
	sessionWindow = int64(pluginv3.SessionLimits_SESSION_WINDOW)
	// messageCost is what a session message costs beyond its data.
	messageCost = int64(pluginv3.SessionLimits_MESSAGE_COST)
	// treeWindow is a tree client's credit for its frames.
	treeWindow = int64(pluginv3.TreeLimits_TREE_WINDOW)
	// frameCost is what a tree frame costs beyond its data.
	frameCost = int64(pluginv3.TreeLimits_FRAME_COST)
)

// muxCalls is how many Sessions calls the host opens to a plugin process,
// and how many Trees calls a plugin process opens to its host, at most;
// sessions and clients are spread over them in turn.
const muxCalls = 4

// credit is a sender's credit on one session or client.
type credit struct {
	mu   sync.Mutex
	n    int64
	more chan struct{} // a wake for a waiter; made on the first wait
}

func newCredit(n int64) *credit { return &credit{n: n} }

// add adds n granted by the receiver and wakes a waiter.
func (c *credit) add(n int64) {
	c.mu.Lock()
	c.n += n
	more := c.more
	c.mu.Unlock()
	if more != nil {
		select {
		case more <- struct{}{}:
		default:
		}
	}
}

// positive reports whether a message may be sent now.
func (c *credit) positive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n > 0
}

// spend takes n for a message sent.
func (c *credit) spend(n int64) {
	c.mu.Lock()
	c.n -= n
	more := c.more
	pass := c.n > 0 && more != nil
	c.mu.Unlock()
	if pass {
		// Another waiter may go on too.
		select {
		case more <- struct{}{}:
		default:
		}
	}
}

// wait waits until the credit is positive; false when ctx or one of done
// ended first.
func (c *credit) wait(ctx context.Context, done1, done2 <-chan struct{}) bool {
	for {
		c.mu.Lock()
		if c.n > 0 {
			c.mu.Unlock()
			return true
		}
		if c.more == nil {
			c.more = make(chan struct{}, 1)
		}
		more := c.more
		c.mu.Unlock()
		select {
		case <-more:
		case <-ctx.Done():
			return false
		case <-done1:
			return false
		case <-done2:
			return false
		}
	}
}

// grants is a receiver's account of one session or client: what it
// received and has not granted back yet.
type grants struct {
	window      int64
	outstanding int64 // received, not yet granted back
	taken       int64 // taken, not yet granted back
}

// arrive accounts for a message of cost n that arrived; false when the
// sender had no credit for it (it broke the protocol).
func (g *grants) arrive(n int64) bool {
	if g.outstanding >= g.window {
		return false
	}
	g.outstanding += n
	return true
}

// take accounts for n taken by the receiver and returns the credit to
// grant now, 0 for none yet: credit goes back in grants of a quarter of
// the window at least, so a sender of small messages costs few grants,
// and never stalls (it stalls only when a whole window is outstanding).
func (g *grants) take(n int64) int64 {
	g.taken += n
	if g.taken < g.window/4 {
		return 0
	}
	n = g.taken
	g.taken = 0
	g.outstanding -= n
	return n
}
