package pluginrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginrpc/pluginv3"
)

// Message sessions across the process boundary, the host's end: many
// sessions share a few bidirectional Sessions calls to the plugin process
// (sessionMux), each message tagged with the session's number on its call.
// The host keeps the client's connection (the session transport) and the
// session's id. The session's own goroutine (the handler's, as compiled
// in) reads the client and sends its messages up, while the session has
// credit: a plugin that does not read stops the host reading the client.
// What comes down is queued in the session, bounded by the session's
// window, and written to the client by a goroutine started when there is
// something to write, so an idle session costs no goroutine beyond its
// own. A call that breaks (the plugin process died) ends its sessions with
// ErrUnavailable, so the host closes them with core.CloseInternal; the
// host's end hooks run either way, since the session lives in the host.

// errSessionProtocol ends a session whose plugin sent past its credit.
var errSessionProtocol = errors.New("pluginrpc: session: the plugin sent past its credit")

// remoteSession forwards the sessions of one route to the plugin process.
type remoteSession struct {
	c     *Client
	route uint32
}

// ServeSession serves s in the plugin process and returns the handler's
// error; ErrUnavailable when the process is not running or dies.
func (h *remoteSession) ServeSession(ctx context.Context, req *core.Request, s core.Session) error {
	cn := h.c.cur.Load()
	if cn == nil {
		return ErrUnavailable
	}
	rs, err := cn.sessions.open(ctx, s)
	if err != nil {
		return sessionError(ctx, err)
	}
	// The plugin may connect a tree client for the session whose frames
	// the host writes itself (splice.go) until the session is over.
	cn.sessions.index.put(s.ID(), rs)
	defer cn.sessions.index.remove(s.ID(), rs)
	defer rs.unsplice()
	open := &pluginv3.SessionOpen{Route: h.route, Request: encodeRequest(req), Id: wire(s.ID())}
	if rs.send(&pluginv3.SessionUp{Kind: &pluginv3.SessionUp_Open{Open: open}}) != nil {
		// The call broke; its reader ends the session.
		return rs.wait(ctx)
	}
	// The client's messages, then its close, go up from this goroutine.
	for rs.up.wait(ctx, rs.done, nil) {
		m, err := s.Recv(ctx)
		if err != nil {
			if ctx.Err() == nil {
				code, reason := core.CloseStatus(err)
				_ = rs.send(&pluginv3.SessionUp{Kind: &pluginv3.SessionUp_Closed{Closed: &pluginv3.SessionClose{Code: int32(code), Reason: wire(reason)}}})
			}
			break
		}
		rs.up.spend(int64(len(m.Data)) + messageCost)
		if rs.send(&pluginv3.SessionUp{Kind: &pluginv3.SessionUp_Message{Message: &pluginv3.SessionMessage{Binary: m.Binary, Data: m.Data}}}) != nil {
			break
		}
	}
	return rs.wait(ctx)
}

// sessionError is the end of a session whose call broke: ctx's error when
// the host ended it, else ErrUnavailable.
func sessionError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if err == nil || errors.Is(err, io.EOF) {
		return ErrUnavailable
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.Canceled, codes.Aborted:
		return ErrUnavailable
	}
	return fmt.Errorf("pluginrpc: session: %s", status.Convert(err).Message())
}

// sessionMux is the host's Sessions calls to one plugin process: up to
// muxCalls, each opened when a session first needs it and again after it
// broke.
type sessionMux struct {
	rpc  pluginv3.PluginClient
	next atomic.Uint32
	// index holds the open sessions by id (splice.go).
	index sessionIndex
	// crossed counts the session messages that came down (splice.go).
	crossed *crossings

	mu    sync.Mutex
	calls [muxCalls]*sessionCall
}

// open registers a session of s on one of the calls.
func (m *sessionMux) open(ctx context.Context, s core.Session) (*hostSessionEnd, error) {
	i := m.next.Add(1) % muxCalls
	m.mu.Lock()
	c := m.calls[i]
	if c == nil || c.isBroken() {
		cctx, cancel := context.WithCancel(context.Background())
		call, err := m.rpc.Sessions(cctx)
		if err != nil {
			cancel()
			m.mu.Unlock()
			return nil, err
		}
		c = &sessionCall{call: call, cancel: cancel, sessions: make(map[uint64]*hostSessionEnd), out: newSender(call.Send), crossed: m.crossed}
		m.calls[i] = c
		go c.read()
	}
	m.mu.Unlock()
	return c.add(ctx, s)
}

// closeAll ends the calls (the process is going away).
func (m *sessionMux) closeAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, c := range m.calls {
		if c != nil {
			c.cancel()
			m.calls[i] = nil
		}
	}
}

// sessionCall is one Sessions call and the sessions on it.
type sessionCall struct {
	call    pluginv3.Plugin_SessionsClient
	cancel  context.CancelFunc
	out     *sender[*pluginv3.SessionUp]
	crossed *crossings

	mu       sync.Mutex
	sessions map[uint64]*hostSessionEnd
	last     uint64 // the last session number given
	broken   bool
}

func (c *sessionCall) isBroken() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken
}

// add registers a new session on the call.
func (c *sessionCall) add(ctx context.Context, s core.Session) (*hostSessionEnd, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken {
		return nil, ErrUnavailable
	}
	c.last++
	rs := &hostSessionEnd{
		c: c, n: c.last, ctx: ctx, s: s,
		up:   newCredit(sessionWindow),
		done: make(chan struct{}),
		down: grants{window: sessionWindow},
	}
	c.sessions[rs.n] = rs
	return rs, nil
}

// read passes what the plugin sends to its sessions until the call
// breaks, then ends every session left with ErrUnavailable.
func (c *sessionCall) read() {
	for {
		m, err := c.call.Recv()
		if err != nil {
			break
		}
		c.mu.Lock()
		rs := c.sessions[m.GetSession()]
		if _, end := m.GetKind().(*pluginv3.SessionDown_End); end && rs != nil {
			delete(c.sessions, rs.n)
		}
		c.mu.Unlock()
		if rs == nil {
			continue // a session the host ended already
		}
		switch k := m.GetKind().(type) {
		case *pluginv3.SessionDown_Message:
			c.crossed.add()
			rs.push(downItem{msg: core.Message{Binary: k.Message.GetBinary(), Data: k.Message.GetData()}, cost: int64(len(k.Message.GetData())) + messageCost, isMsg: true})
		case *pluginv3.SessionDown_Close:
			rs.push(downItem{close: &core.CloseError{Code: int(k.Close.GetCode()), Reason: string(k.Close.GetReason())}})
		case *pluginv3.SessionDown_End:
			var err error
			if e := k.End.GetError(); e != nil {
				err = decodeError(e)
			}
			rs.push(downItem{end: true, err: err})
		case *pluginv3.SessionDown_Credit:
			rs.up.add(int64(k.Credit.GetBytes()))
		}
	}
	c.mu.Lock()
	c.broken = true
	left := c.sessions
	c.sessions = nil
	c.mu.Unlock()
	c.cancel()
	c.out.stop(ErrUnavailable)
	for _, rs := range left {
		rs.push(downItem{end: true, err: ErrUnavailable})
	}
}

// downItem is one thing the plugin sent a session: a message, a close or
// the end.
type downItem struct {
	msg   core.Message
	cost  int64
	isMsg bool
	close *core.CloseError
	end   bool
	err   error // the handler's, with end
}

// hostSessionEnd is the host's end of one session on a Sessions call.
type hostSessionEnd struct {
	c    *sessionCall
	n    uint64
	ctx  context.Context // the session's
	s    core.Session
	up   *credit       // for the client's messages, granted by the plugin
	done chan struct{} // closed once the end was handled; err is set then
	err  error

	mu        sync.Mutex
	queue     []downItem // to write to the client, in order
	down      grants     // of the plugin's messages
	writing   bool       // a goroutine runs write
	ended     bool       // the end is queued: nothing more is
	failed    bool       // a write to the client failed: messages are dropped
	cancelled bool
	splice    *splice // the tree client whose frames the host writes here
}

// send sends m, tagged with the session's number, through the call's
// sender: the session's own goroutine sends this way (see sender). It
// waits for the send, not for the session's context: watching that would
// cost every idle session its context's Done channel. A plugin that reads
// nothing at all thus holds its sessions in send until its process ends
// (at shutdown, within the grace period).
func (rs *hostSessionEnd) send(m *pluginv3.SessionUp) error {
	m.Session = rs.n
	var sent chan error // not kept: an idle session holds none
	return rs.c.out.post(context.Background(), m, &sent)
}

// sendDirect sends m, tagged with the session's number, from a goroutine
// that lives briefly.
func (rs *hostSessionEnd) sendDirect(m *pluginv3.SessionUp) error {
	m.Session = rs.n
	return rs.c.out.direct(m)
}

// wait waits for the session's end and returns the handler's error: when
// ctx ends first, the plugin is told to cancel the handler.
func (rs *hostSessionEnd) wait(ctx context.Context) error {
	select {
	case <-rs.done:
		return rs.err
	case <-ctx.Done():
	}
	rs.c.mu.Lock()
	_, open := rs.c.sessions[rs.n]
	delete(rs.c.sessions, rs.n)
	rs.c.mu.Unlock()
	if open {
		// After anything the session posted, without waiting.
		rs.c.out.postAsync(&pluginv3.SessionUp{Session: rs.n, Kind: &pluginv3.SessionUp_Cancel{Cancel: &pluginv3.SessionCancel{}}})
	}
	rs.mu.Lock()
	rs.cancelled = true
	rs.mu.Unlock()
	return ctx.Err()
}

// push queues it and starts the writer unless one runs. A message past
// the session's credit ends the session instead: the host holds at most a
// window and one message for it.
func (rs *hostSessionEnd) push(it downItem) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.ended {
		return
	}
	if it.isMsg && !rs.down.arrive(it.cost) {
		rs.c.mu.Lock()
		delete(rs.c.sessions, rs.n)
		rs.c.mu.Unlock()
		go func() {
			_ = rs.sendDirect(&pluginv3.SessionUp{Kind: &pluginv3.SessionUp_Cancel{Cancel: &pluginv3.SessionCancel{}}})
		}()
		clear(rs.queue)
		rs.queue = rs.queue[:0]
		it = downItem{end: true, err: errSessionProtocol}
	}
	if it.end {
		rs.ended = true
	}
	rs.queue = append(rs.queue, it)
	if !rs.writing {
		rs.writing = true
		go rs.write()
	}
}

// write writes what is queued to the client, in order, until the queue
// is empty, and grants the plugin credit for the messages written.
func (rs *hostSessionEnd) write() {
	var batch []downItem
	var msgs []core.Message
	for {
		rs.mu.Lock()
		if len(rs.queue) == 0 {
			rs.writing = false
			rs.mu.Unlock()
			return
		}
		batch, rs.queue = rs.queue, batch[:0]
		failed := rs.failed
		rs.mu.Unlock()
		var written int64
		for i := 0; i < len(batch); {
			it := batch[i]
			switch {
			case it.isMsg:
				msgs = msgs[:0]
				for ; i < len(batch) && batch[i].isMsg; i++ {
					msgs = append(msgs, batch[i].msg)
					written += batch[i].cost
				}
				if !failed && core.SendAll(rs.ctx, rs.s, msgs) != nil {
					// The client is gone: its read ends too, which tells
					// the plugin; what comes meanwhile is dropped.
					failed = true
				}
				clear(msgs)
				continue
			case it.close != nil:
				_ = rs.s.Close(it.close.Code, it.close.Reason)
			case it.end:
				rs.err = it.err
				if it.err != nil {
					_ = rs.s.Close(core.CloseInternal, "")
				} else {
					_ = rs.s.Close(core.CloseNormal, "")
				}
				close(rs.done)
			}
			i++
		}
		clear(batch)
		rs.mu.Lock()
		rs.failed = failed
		grant := rs.down.take(written)
		stop := rs.ended || rs.cancelled
		rs.mu.Unlock()
		if grant > 0 && !stop {
			_ = rs.sendDirect(&pluginv3.SessionUp{Kind: &pluginv3.SessionUp_Credit{Credit: &pluginv3.Credit{Bytes: uint64(grant)}}})
		}
	}
}

var _ core.SessionHandler = (*remoteSession)(nil)
