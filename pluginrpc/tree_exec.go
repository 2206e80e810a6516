package pluginrpc

import (
	"context"
	"sync"

	"github.com/reso-project/reso/pluginrpc/pluginv3"
	"github.com/reso-project/reso/plugins"
)

// A tree client's messages on its Trees call (TreeUp.exec), rather than
// one TreeExec call each: the plugin's Exec returns once the message is
// sent, so a session's next message goes up while the host executes this
// one, in order, and its reply comes back as one of the client's frames
// (written by the host itself to a spliced session, splice.go). With one
// round trip per message, a publisher's messages were as slow as the
// boundary's round trip, whatever it had in flight. The plugin sends while
// it has credit for the client (TREE_WINDOW bytes, FRAME_COST a message),
// granted back as the host executes, so the host holds at most a window
// of a client's messages.

// errExecProtocol ends a client whose plugin sent messages past its
// credit.
var errExecProtocol = &plugins.TreeGone{Code: 1011, Reason: "tree protocol error"}

// errTreeUnavailable ends a client whose message the tree could not take.
var errTreeUnavailable = &plugins.TreeGone{Code: 1011, Reason: "tree unavailable"}

// execQueue is the host's queue of a client's messages, executed in order
// by a goroutine started when it holds some.
type execQueue struct {
	mu      sync.Mutex
	msgs    [][]byte
	in      grants
	running bool
}

// exec queues msg of hc for the tree and starts its executor unless one
// runs. A message past the client's credit ends the client.
func (t *hostTrees) exec(hc *hostTreeClient, msg []byte, workers *sync.WaitGroup) {
	q := &hc.execs
	q.mu.Lock()
	if q.in.window == 0 {
		q.in.window = treeWindow
	}
	if !q.in.arrive(int64(len(msg)) + frameCost) {
		q.mu.Unlock()
		t.end(hc, errExecProtocol)
		return
	}
	q.msgs = append(q.msgs, msg)
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		workers.Go(func() { t.runExecs(hc) })
	}
}

// runExecs executes the messages of hc in order until its queue is empty
// or the client is over, and grants the plugin credit for them.
func (t *hostTrees) runExecs(hc *hostTreeClient) {
	q := &hc.execs
	for {
		q.mu.Lock()
		if len(q.msgs) == 0 {
			q.msgs = nil
			q.running = false
			q.mu.Unlock()
			return
		}
		msg := q.msgs[0]
		q.msgs[0] = nil
		q.msgs = q.msgs[1:]
		q.mu.Unlock()
		t.mu.Lock()
		c := hc.c
		if hc.finished {
			c = nil
		}
		t.mu.Unlock()
		if c == nil {
			q.mu.Lock()
			q.msgs, q.running = nil, false
			q.mu.Unlock()
			return
		}
		if err := c.Exec(t.ctx, msg); err != nil {
			if t.ctx.Err() == nil {
				t.end(hc, errTreeUnavailable)
			}
			q.mu.Lock()
			q.msgs, q.running = nil, false
			q.mu.Unlock()
			return
		}
		q.mu.Lock()
		grant := q.in.take(int64(len(msg)) + frameCost)
		q.mu.Unlock()
		if grant > 0 {
			_ = t.send(&pluginv3.TreeDown{Client: hc.n, Kind: &pluginv3.TreeDown_Credit{Credit: &pluginv3.Credit{Bytes: uint64(grant)}}})
		}
	}
}

// end ends hc with gone: a spliced client's session is closed with it,
// another's plugin is told; then the client is disconnected and
// forgotten.
func (t *hostTrees) end(hc *hostTreeClient, gone *plugins.TreeGone) {
	t.mu.Lock()
	sp := hc.sp
	t.mu.Unlock()
	if sp != nil {
		sp.halt()
		_ = sp.s.Close(gone.Code, gone.Reason)
	}
	t.sendGone(hc, gone)
	t.finish(hc)
}

// execOnCall sends msg on the client's Trees call, once the client has
// credit for it; it does not wait for the host to execute it. Its error is
// the client's end, or ctx's.
func (c *remoteTreeClient) execOnCall(ctx context.Context, msg []byte) error {
	if err := c.endErr(); err != nil {
		return err
	}
	if !c.up.wait(ctx, c.over, nil) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return c.endErr()
	}
	c.up.spend(int64(len(msg)) + frameCost)
	// Directly, not through the call's sender: the caller does the
	// tree's work of a message (the door's exec pool, or a busy
	// session's goroutine), whose stack is deep already.
	if err := c.tc.out.direct(&pluginv3.TreeUp{Client: c.n, Kind: &pluginv3.TreeUp_Exec{Exec: &pluginv3.TreeMessage{Msg: msg}}}); err != nil {
		return hostCallError(ctx, err, "tree exec", c.id)
	}
	return nil
}

// endErr returns the client's end once it came (or Disconnect), nil while
// it lives.
func (c *remoteTreeClient) endErr() error {
	if c.disconnected.Load() {
		return errDisconnected
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gone
}

// end marks the client over for a waiting Exec.
func (c *remoteTreeClient) end() {
	c.overOnce.Do(func() { close(c.over) })
}
