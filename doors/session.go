package doors

import (
	"context"
	"errors"
	"sync"

	"github.com/reso-project/reso/core"
)

// DefaultMaxMessage is the largest message a session client may send when
// [Session].MaxMessage sets none: the WebSocket transport's default read
// limit.
const DefaultMaxMessage = 64 << 10

// CloseTooBig is the close code of a message past the read limit (RFC
// 6455: 1009, message too big).
const CloseTooBig = 1009

// Session is the WebSocket door: a session handler that attaches each
// session to the tree as a client whose id is the session's id.
//
// The handler's goroutine reads the client's messages and passes each
// text message to the tree, waiting while a goroutine shared by all
// sessions works on it (see execPool), or, once the session has sent
// many (hotAfter), working on it itself; what the tree queues for the
// client (replies and notifications, in order) is written all at once
// when the transport can. When the client is a [readier] (the tree in
// process, or an isolated plugin's tree over pluginrpc) a goroutine of a
// pool shared by all sessions (see drainPool) writes when there is
// something to write, so an idle session costs one goroutine; otherwise
// one pump goroutine waits in Next for the session's whole life. When
// the tree writes the client's frames to the session itself (an isolated
// plugin's tree, see sessionConnector), the door only reads. A binary
// message is ignored: the
// convention's messages are text. When the tree disconnects the client
// (1008 "slow consumer", ...) the session is closed with its code and
// reason; however the session ends, the client is disconnected (its
// transient resources deleted), and the host disconnects it again at the
// session's end should the plugin have died first.
type Session struct {
	Tree core.Tree
	// MaxMessage is the largest message accepted, in bytes; a larger one
	// closes the session with 1009 "message too big". 0 or less means
	// DefaultMaxMessage.
	MaxMessage int
}

// NewSession returns the door onto tree whose clients may send messages
// of at most maxMessage bytes, as a session handler: what
// pluginrpc.Config.Door takes, for the host to serve an isolated plugin's
// door itself.
func NewSession(tree core.Tree, maxMessage int) core.SessionHandler {
	return &Session{Tree: tree, MaxMessage: maxMessage}
}

// TreeDoor returns the tree h attaches its sessions to and the largest
// message it accepts: an isolated plugin whose session route is h, over
// the host's tree, has the host serve its sessions with a Session of its
// own (pluginrpc.Config.Door), as compiled in.
func (h *Session) TreeDoor() (core.Tree, int) { return h.Tree, h.MaxMessage }

// ServeSession serves one session until the client or the tree ends it.
func (h *Session) ServeSession(ctx context.Context, req *core.Request, s core.Session) error {
	c, spliced, err := connect(ctx, h.Tree, s, identity(req))
	if err != nil {
		return err
	}
	defer func() {
		if v := recover(); v != nil {
			// The tree panicked (exec raises its panic here): the
			// session ends with 1011, as the host ends it, before the
			// client's end makes the drain or the pump close it with
			// the tree's 1000 "disconnected".
			_ = s.Close(core.CloseInternal, "")
			c.Disconnect()
			panic(v) // on to the host, which logs it
		}
		c.Disconnect()
	}()
	var wait func()
	var d *drainer // nil unless the tree's frames are drained here
	cancel := func() {}
	rctx := ctx // the context of the reads
	if spliced {
		// Nothing to write: the read, on the session's own context,
		// is all the door does.
		wait = func() {}
	} else if r, ok := c.(readier); ok {
		// No context of the session's own, and no watch on ctx while
		// reading: ctx ends when the server shuts down, which closes
		// the session first, or when the connection is lost
		// (core.SessionHandler), and when the drain ends the session,
		// closing it ends the read too. A cancelable context and what
		// Recv registers on it would cost an idle session half a KiB.
		rctx = context.WithoutCancel(ctx)
		d = &drainer{ctx: ctx, r: r, s: s}
		r.OnReady(d.wake)
		wait = d.stop
	} else {
		ctx, cancel = context.WithCancel(ctx)
		rctx = ctx // the pump's end cancels it: stop reading
		defer cancel()
		pumped := make(chan struct{})
		go func() {
			defer close(pumped)
			defer cancel() // the session is over: stop reading
			pump(ctx, c, s)
		}()
		wait = func() { <-pumped }
	}
	limit := h.MaxMessage
	if limit <= 0 {
		limit = DefaultMaxMessage
	}
	for sent := 1; ; sent++ {
		m, err := s.Recv(rctx)
		if err != nil {
			break
		}
		if m.Binary {
			continue
		}
		if len(m.Data) > limit {
			_ = s.Close(CloseTooBig, "message too big")
			break
		}
		run := exec
		if sent > hotAfter {
			run = execHere
		}
		// The replies to messages the client sent together go out
		// together: while the next message is here already, the drain
		// waits for it (one write for the lot, not one a reply).
		more := d != nil && core.Buffered(s)
		if more {
			d.hold()
		}
		err = run(ctx, c, m.Data)
		if !more && d != nil {
			d.release()
		}
		if err != nil {
			break
		}
	}
	if d != nil {
		d.release()
	}
	c.Disconnect()
	// The session is over (the host would close it so once this returns):
	// a write still waiting for the client ends.
	_ = s.Close(core.CloseNormal, "")
	cancel()
	wait()
	return nil
}

// drainer writes the frames of a readier client to its session from
// a goroutine of drainPool, taken when the tree has queued some and given
// back once the queue is empty: an idle session keeps no goroutine for
// writing.
type drainer struct {
	ctx context.Context
	r   readier
	s   core.Session

	mu      sync.Mutex
	running bool // a goroutine runs drain
	pending bool // woken since drain last looked at the queue
	held    bool // a wake waits for release (the session reads on)
	over    bool // the client is gone, a write failed or stop was called
	wg      sync.WaitGroup

	// Used by the running goroutine only.
	frames []core.TreeFrame
	msgs   []core.Message
}

// wake is the client's OnReady function: it starts the drain unless one
// runs, which then looks at the queue once more. It never blocks.
func (d *drainer) wake() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.over {
		return
	}
	d.pending = true
	if !d.held {
		d.startLocked()
	}
}

// startLocked starts the drain unless one runs or the session ended;
// d.mu is held.
func (d *drainer) startLocked() {
	if d.running || d.over {
		return
	}
	d.running = true
	d.wg.Add(1)
	startDrain(d)
}

// hold makes wakes wait until release: the session has more of the
// client's messages to work on before their replies are written.
func (d *drainer) hold() {
	d.mu.Lock()
	d.held = true
	d.mu.Unlock()
}

// release lets the drain start again, at once if it was woken meanwhile.
func (d *drainer) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.held {
		return
	}
	d.held = false
	if d.pending {
		d.startLocked()
	}
}

// drain writes what is queued until the queue stays empty; a wake that
// came meanwhile makes it look again rather than be lost.
func (d *drainer) drain() {
	defer d.wg.Done()
	for {
		d.mu.Lock()
		if !d.pending || d.over {
			d.running = false
			d.mu.Unlock()
			return
		}
		d.pending = false
		d.mu.Unlock()
		if !d.write() {
			d.mu.Lock()
			d.over, d.running = true, false
			d.mu.Unlock()
			return
		}
	}
}

// write writes the frames queued until there are none and reports whether
// the session goes on: it does not once the client is gone (the session
// is then closed with the tree's code and reason, which ends the
// session's read) or a write failed.
func (d *drainer) write() bool {
	for {
		var err error
		d.frames, err = d.r.TryNext(d.frames)
		if len(d.frames) > 0 {
			d.msgs = d.msgs[:0]
			for _, f := range d.frames {
				d.msgs = append(d.msgs, core.Message{Data: f.Data})
			}
			werr := core.SendAll(d.ctx, d.s, d.msgs)
			clear(d.msgs) // let the frames' bytes go while idle
			clear(d.frames)
			if werr != nil {
				// The transport ended the session already (or
				// the host did); make sure the read ends too.
				_ = d.s.Close(core.CloseAbnormal, "write failed")
				return false
			}
		}
		if err != nil {
			code, reason := core.CloseGoingAway, ""
			var gone *core.TreeGone
			if errors.As(err, &gone) {
				code, reason = gone.Code, gone.Reason
			}
			_ = d.s.Close(code, reason)
			return false
		}
		if len(d.frames) == 0 {
			return true
		}
	}
}

// stop ends the drain: no goroutine starts after it, and it waits for
// the one running.
func (d *drainer) stop() {
	d.mu.Lock()
	d.over = true
	d.mu.Unlock()
	d.r.OnReady(nil) // let the tree forget the session
	d.wg.Wait()
}

// pump writes the client's frames to s until the client is gone (the
// session is then closed with the tree's code and reason), a write fails
// or ctx ends.
func pump(ctx context.Context, c core.TreeClient, s core.Session) {
	var frames []core.TreeFrame
	var msgs []core.Message
	for {
		var err error
		frames, err = c.Next(ctx, frames)
		if len(frames) > 0 {
			msgs = msgs[:0]
			for _, f := range frames {
				msgs = append(msgs, core.Message{Data: f.Data})
			}
			if werr := core.SendAll(ctx, s, msgs); werr != nil {
				return
			}
			clear(msgs) // let the frames' bytes go while idle
			clear(frames)
		}
		if err != nil {
			var gone *core.TreeGone
			if errors.As(err, &gone) {
				_ = s.Close(gone.Code, gone.Reason)
			}
			return
		}
	}
}

var _ core.SessionHandler = (*Session)(nil)
