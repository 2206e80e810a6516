package pluginrpc

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

// Notifications to an isolated plugin's sessions, written where the
// sockets are. A session of an isolated plugin lives in the host (its
// client's connection, hostSessionEnd), and so does the tree; only the
// door's logic is in the plugin. When the door connects its tree client
// for a session (treeHost.ConnectSession, TreeConnectRequest.session),
// the host writes the client's frames to that session itself, as the
// door in process does (doors.Session's drainer): a notification to a
// thousand sessions of one plugin then crosses the boundary no time at
// all, instead of twice per session (Trees down, Sessions back). The
// client's messages still go up to the plugin, which executes them
// (TreeExec); the replies come back this way too. docs/plugins.md says why
// this rather than handing the plugin the sockets.

// sessionIndex is one plugin process's open sessions in the host, by id,
// for a tree client connected for one of them.
type sessionIndex struct {
	mu sync.Mutex
	m  map[string]*hostSessionEnd
}

func (x *sessionIndex) put(id string, rs *hostSessionEnd) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m == nil {
		x.m = make(map[string]*hostSessionEnd)
	}
	x.m[id] = rs
}

func (x *sessionIndex) get(id string) *hostSessionEnd {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.m[id]
}

func (x *sessionIndex) remove(id string, rs *hostSessionEnd) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m[id] == rs {
		delete(x.m, id)
	}
}

// splice writes the frames of a tree client in the host straight to a
// session in the host, from a goroutine started when the tree has queued
// some and ended once the queue is empty. While a write waits for a slow
// client the tree's queue of the client fills, and the tree ends the
// client (1008 "slow consumer") as it would in process; the tree's end of
// the client closes the session with its code and reason.
type splice struct {
	ctx context.Context // the session's
	s   core.Session
	r   treeReadier

	mu      sync.Mutex
	running bool // a goroutine runs drain
	pending bool // woken since drain last looked at the queue
	over    bool // halted, the client is gone or a write failed
	wg      sync.WaitGroup

	// Used by the running goroutine only.
	frames []plugins.TreeFrame
	msgs   []core.Message
}

// spliceTo makes rs the destination of r's frames and starts writing
// them; nil when the session is ending or has a client spliced already.
func (rs *hostSessionEnd) spliceTo(r treeReadier) *splice {
	rs.mu.Lock()
	if rs.ended || rs.cancelled || rs.splice != nil {
		rs.mu.Unlock()
		return nil
	}
	sp := &splice{ctx: rs.ctx, s: rs.s, r: r}
	rs.splice = sp
	rs.mu.Unlock()
	r.OnReady(sp.wake)
	return sp
}

// unsplice stops the session's splice, if any, and waits for its writes:
// the session is over.
func (rs *hostSessionEnd) unsplice() {
	rs.mu.Lock()
	sp := rs.splice
	rs.mu.Unlock()
	if sp != nil {
		sp.halt()
		sp.wg.Wait()
	}
}

// wake is the client's OnReady function: it starts the drain unless one
// runs, which then looks at the queue once more. It never blocks.
func (sp *splice) wake() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.over {
		return
	}
	sp.pending = true
	if sp.running {
		return
	}
	sp.running = true
	sp.wg.Add(1)
	go sp.drain()
}

// halt ends the splice without closing the session: no drain starts after
// it, and the one running stops after its write. The client's end that
// follows (the plugin released it, or its process died) is the session's
// business, not the splice's.
func (sp *splice) halt() {
	sp.mu.Lock()
	sp.over = true
	sp.mu.Unlock()
	sp.r.OnReady(nil)
}

// halted reports whether halt was called.
func (sp *splice) halted() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.over
}

// drain writes what is queued until the queue stays empty; a wake that
// came meanwhile makes it look again rather than be lost.
func (sp *splice) drain() {
	defer sp.wg.Done()
	for {
		sp.mu.Lock()
		if !sp.pending || sp.over {
			sp.running = false
			sp.mu.Unlock()
			return
		}
		sp.pending = false
		sp.mu.Unlock()
		if !sp.write() {
			sp.mu.Lock()
			sp.over, sp.running = true, false
			sp.mu.Unlock()
			return
		}
	}
}

// write writes the frames queued until there are none and reports whether
// the splice goes on: not once the tree ended the client (the session is
// then closed with its code and reason, unless the splice was halted) or
// a write failed.
func (sp *splice) write() bool {
	for {
		var err error
		sp.frames, err = sp.r.TryNext(sp.frames)
		if len(sp.frames) > 0 {
			sp.msgs = sp.msgs[:0]
			for _, f := range sp.frames {
				sp.msgs = append(sp.msgs, core.Message{Data: f.Data})
			}
			werr := core.SendAll(sp.ctx, sp.s, sp.msgs)
			clear(sp.msgs) // let the frames' bytes go while idle
			clear(sp.frames)
			if werr != nil {
				// The client is gone: its read ends too, which
				// tells the plugin.
				_ = sp.s.Close(core.CloseAbnormal, "write failed")
				return false
			}
		}
		if err != nil {
			var gone *plugins.TreeGone
			if errors.As(err, &gone) && !sp.halted() {
				_ = sp.s.Close(gone.Code, gone.Reason)
			}
			return false
		}
		if len(sp.frames) == 0 {
			return true
		}
	}
}

// crossings counts the messages that carried frames for a session across
// the boundary, either way: the TreeDown frames the host sends a plugin
// and the SessionDown messages it receives from one. This is what the
// fan-out of a notification costs the boundary; tests read it.
type crossings struct{ n atomic.Uint64 }

// add counts one message; a nil counter counts nothing.
func (c *crossings) add() {
	if c != nil {
		c.n.Add(1)
	}
}

// ConnectSession attaches a client for the session s, with its id, and
// asks the host to write the client's frames to s itself when s is a
// session the host opened in this process: it reports whether the host
// does. The client's Next and TryNext then return nothing but its end
// when the call to the host breaks; the tree's end of the client closes
// s in the host. Otherwise (another session, or a host that does not
// splice) it is Connect, and the frames come as usual.
func (t treeHost) ConnectSession(ctx context.Context, s core.Session, identity string) (plugins.TreeClient, bool, error) {
	_, ours := s.(*pluginSession)
	c, spliced, err := t.connect(ctx, s.ID(), identity, ours)
	if err != nil {
		return nil, false, err
	}
	return c, spliced, nil
}
