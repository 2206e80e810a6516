package channel

import (
	"context"
	"sync"
	"sync/atomic"
)

// Client is one connection attached to the tree: its subscriptions, the
// transient resources it owns and its bounded queue of frames. Create it
// with [Tree.Connect].
type Client struct {
	t *Tree
	// Its id and the transient resources it owns (its node is this one).
	connection
	identity string

	// Guarded by the tree's lock.
	ended bool
	pend  *batch // of the last change it proposed, until its end
	subs  subSet
	// lost is what its node's death deleted, to be made again when the
	// node rejoins (see Tree.Rejoin).
	lost []lost
	// pipelined counts its changes in batches whose replies are not
	// queued yet (see pipelining); written with the tree's lock held.
	pipelined atomic.Int32
	// member memoizes whether identity is in group, the last group it was
	// judged against at a delivery (groups are never changed, only
	// replaced), so that a fan-out looks each subscriber up once per
	// group rather than once per notification. Written with the tree's
	// write lock held.
	memo struct {
		group  *group
		member bool
	}

	mu     sync.Mutex // guards the queue
	q      []Frame
	qbytes int
	// replayed is how many frames a replay queued beyond QueueFrames
	// allows, until the client takes its queue: a replay is bounded by the
	// history and by QueueBytes, not by the count of one queue.
	replayed int
	gone     error // why the client ended; nil while it lives
	// wake is the channel Next waits on, made by its first call (under
	// mu), so that a client drained with TryNext holds none.
	wake  atomic.Pointer[chan struct{}]
	ready atomic.Pointer[func()] // set by OnReady

	// In a fleet: leaving is set once the connection ended here (its end
	// is then proposed to the log), proposed once it sent an entry;
	// inflight counts its proposals under way. leaving and proposed are
	// guarded by mu.
	leaving, proposed bool
	inflight          sync.WaitGroup
	// slots bounds the writes under way (see execConn); turn is closed
	// once the reply to the last message taken is queued.
	slots  chan struct{}
	turnMu sync.Mutex
	turn   chan struct{}
}

// closedTurn is the turn of a client's first message: nothing before it.
var closedTurn = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// nextTurn returns the turn of the message before (closed once its reply
// is queued) and the new message's, which the caller closes once its
// reply is queued.
func (c *Client) nextTurn() (prev <-chan struct{}, mine chan struct{}) {
	c.turnMu.Lock()
	defer c.turnMu.Unlock()
	prev = c.turn
	if prev == nil {
		prev = closedTurn
	}
	mine = make(chan struct{})
	c.turn = mine
	return prev, mine
}

// enter counts a proposal of the client under way; it reports false once
// the client is leaving. The caller calls c.inflight.Done when it is done.
func (c *Client) enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leaving {
		return false
	}
	c.proposed = true
	c.inflight.Add(1)
	return true
}

// ID returns the client's id.
func (c *Client) ID() string { return c.id }

// push queues f and reports whether it was queued. It never blocks: a
// full queue (frames or bytes) ends the client with [ErrSlowConsumer]
// instead, its cleanup run apart so that the caller, who may hold the
// tree's lock, never waits for it. A frame larger than the byte bound
// still goes into an empty queue.
func (c *Client) push(f Frame) bool {
	c.mu.Lock()
	if c.gone != nil {
		c.mu.Unlock()
		return false
	}
	if len(c.q) >= c.t.opt.QueueFrames+c.replayed || len(c.q) > 0 && c.qbytes+len(f.Data) > c.t.opt.QueueBytes {
		c.gone = ErrSlowConsumer
		c.mu.Unlock()
		c.t.counts.slow.Add(1)
		c.signal()
		go c.end(ErrSlowConsumer)
		return false
	}
	c.q = append(c.q, f)
	c.qbytes += len(f.Data)
	first := len(c.q) == 1
	c.mu.Unlock()
	if first {
		c.signal()
	}
	return true
}

// room returns how many bytes the client's queue can take now.
func (c *Client) room() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t.opt.QueueBytes - c.qbytes
}

// pushReplay queues the frames of a replay, in order, whatever their
// count (see replayed); their bytes were checked against room.
func (c *Client) pushReplay(fs []Frame) {
	if len(fs) == 0 {
		return
	}
	c.mu.Lock()
	if c.gone != nil {
		c.mu.Unlock()
		return
	}
	first := len(c.q) == 0
	c.q = append(c.q, fs...)
	c.replayed += len(fs)
	for _, f := range fs {
		c.qbytes += len(f.Data)
	}
	c.mu.Unlock()
	if first {
		c.signal()
	}
}

// signal wakes a waiting Next and calls the function set by OnReady. It
// is never called under c.mu.
func (c *Client) signal() {
	if w := c.wake.Load(); w != nil {
		select {
		case *w <- struct{}{}:
		default:
		}
	}
	if f := c.ready.Load(); f != nil {
		(*f)()
	}
}

// take appends the queued frames to buf and empties the queue; it reports
// the client's end (nil while it lives) when none was queued. c.mu is held.
func (c *Client) take(buf []Frame) ([]Frame, error) {
	if len(c.q) > 0 {
		buf = append(buf, c.q...)
		clear(c.q)
		c.q, c.qbytes, c.replayed = c.q[:0], 0, 0
		return buf, nil
	}
	return buf, c.gone
}

// Next waits until frames are queued and returns all of them appended to
// buf[:0], in order. Once the client has ended it returns the frames
// still queued, then the *[Gone] error: [ErrSlowConsumer] for a client
// that did not keep up, Code 1000 after [Client.Disconnect]. It returns
// ctx's error when ctx ends first.
func (c *Client) Next(ctx context.Context, buf []Frame) ([]Frame, error) {
	buf = buf[:0]
	for {
		c.mu.Lock()
		w := c.wake.Load()
		if w == nil {
			// Made before the queue is looked at, under mu: a push
			// after this look signals it.
			ch := make(chan struct{}, 1)
			w = &ch
			c.wake.Store(w)
		}
		buf, err := c.take(buf)
		c.mu.Unlock()
		if len(buf) > 0 || err != nil {
			return buf, err
		}
		select {
		case <-*w:
		case <-ctx.Done():
			return buf, ctx.Err()
		}
	}
}

// TryNext is Next without the wait: it returns the frames queued,
// appended to buf[:0] in order, or, with none queued, (buf[:0], nil) while
// the client lives and its *[Gone] error once it has ended. With
// [Client.OnReady] it lets a client be drained without a goroutine
// waiting in Next. Neither Next nor TryNext is safe for concurrent use.
func (c *Client) TryNext(buf []Frame) ([]Frame, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.take(buf[:0])
}

// Err returns why the client ended, its *[Gone] ([ErrSlowConsumer],
// Code 1000 after [Client.Disconnect], ...), or nil while it lives. Unlike
// Next and TryNext it takes no frame: a drainer whose own consumer is
// behind, and which therefore leaves the frames queued, still learns that
// the tree dropped the client. Err is safe for concurrent use.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gone
}

// OnReady sets f (nil: none) to be called whenever frames are queued
// while none were, and when the client ends, so that a drainer calling
// [Client.TryNext] sees every frame and then the *[Gone] error. It may
// also be called when there is nothing to take. When frames are queued
// or the client has ended already, OnReady calls f at once. f is never
// called under the client's lock, but it may be called by a goroutine
// that holds the tree's: it must return quickly and must not call the
// tree or the client (start a goroutine that does).
func (c *Client) OnReady(f func()) {
	c.mu.Lock()
	if f == nil {
		c.ready.Store(nil)
	} else {
		c.ready.Store(&f)
	}
	now := f != nil && (len(c.q) > 0 || c.gone != nil)
	c.mu.Unlock()
	if now {
		f()
	}
}

// Exec executes one message of this client (docs/channel.md#the-websocket-door). Its reply (when
// it has a msg_id, and the failed reply to a bad frame) is queued after
// the notifications it caused. When it changed a persistent resource it
// waits for the store (group commit) before queueing the reply; it never
// waits for other clients. ctx is not consulted yet: every step is
// bounded.
func (c *Client) Exec(ctx context.Context, msg []byte) {
	if c.t.replicated() {
		c.t.execConn(ctx, c, msg)
		return
	}
	reply := c.t.exec(&caller{c: c, from: c.id, identity: c.identity}, msg, false)
	if reply != nil {
		c.push(Frame{Data: reply})
	}
}

// Disconnect ends the client, once however often it is called: its
// subscriptions are removed and the transient resources it owns deleted
// with the usual DELETE and UPDATE notifications. Next then returns the
// frames still queued and *Gone{Code: 1000, Reason: "disconnected"}.
func (c *Client) Disconnect() {
	c.t.settle(c) // the replies of its pipelined changes come first
	c.end(&Gone{Code: 1000, Reason: "disconnected"})
}

// end ends the client with reason gone, exactly once.
func (c *Client) end(gone error) {
	c.mu.Lock()
	if c.gone == nil {
		c.gone = gone
	}
	first, proposed := !c.leaving, c.proposed
	c.leaving = true
	c.mu.Unlock()
	c.signal()

	t := c.t
	if t.replicated() {
		if first {
			c.leave(proposed)
		}
		return
	}
	t.mu.Lock()
	if c.ended {
		t.mu.Unlock()
		return
	}
	c.ended = true
	delete(t.clients, c.id)
	for p := range c.subs.all() {
		t.unsubscribe(c, p)
	}
	for {
		var w <-chan struct{}
		if b := c.pend; b != nil {
			// A change the client proposed is applied (or dropped)
			// first: it may leave the client a resource to remove.
			c.pend, w = nil, b.done
		} else {
			w = t.removeOwned(c)
		}
		if w == nil {
			break
		}
		t.mu.Unlock()
		<-w
		t.mu.Lock()
	}
	t.disownAll(&c.connection)
	t.mu.Unlock()
}

// removeOwned removes the entities c owns. It returns what it must wait
// for before going on, nil once done. Called with the lock.
func (t *Tree) removeOwned(c *Client) <-chan struct{} {
	for n := range t.ownedAll(&c.connection) {
		if w := t.conflict(n.path, touchRemove); w != nil {
			return w
		}
		out := t.remove(n, c.id, nil)
		if out.wait != nil {
			return out.wait
		}
		if out.b != nil { // stored: it leaves c.owned once applied
			t.disown(&c.connection, n)
			t.kickCommitter()
		}
	}
	return nil
}

// leave ends the client in a fleet: its subscriptions go at once; its
// transient resources go when the log says so, after the end entry that
// leave proposes once the client's proposals under way are done (so that
// none of them comes after it in the log). A client that never proposed
// anything owns nothing and needs no entry, nor does one whose node the
// log took for dead and that has not rejoined yet: the death removed what
// it owned, and the log refuses what it proposed since. A closing tree
// proposes the death of its node instead (see leaveFleet).
func (c *Client) leave(proposed bool) {
	t := c.t
	t.mu.Lock()
	for p := range c.subs.all() {
		t.unsubscribe(c, p)
	}
	closing := t.closed
	node := t.nodeID()
	if proposed && t.dead[node] {
		t.endConn(node, &c.connection)
		proposed = false
	}
	if !proposed && !c.ended {
		c.ended = true
		delete(t.clients, c.id)
	}
	t.mu.Unlock()
	if proposed && !closing {
		t.proposeLater(entry{V: entryVersion, K: kindEnd, P: proposalID(), Node: node, Conn: c.id}, c.inflight.Wait)
	}
}
