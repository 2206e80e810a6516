package pluginrpc

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginrpc/pluginv3"
)

// Message sessions across the process boundary, the plugin's end: each
// Sessions call carries many sessions, each served by its route's handler
// on a goroutine of its own. The call's reader queues the client's
// messages for the handler's Recv, bounded by the session's window; the
// handler's Send waits for the host's credit.

// Sessions serves the sessions the host opens on one call.
func (s *server) Sessions(call pluginv3.Plugin_SessionsServer) error {
	s.mu.RLock()
	handlers := s.sessions
	s.mu.RUnlock()
	m := &pluginSessions{out: newSender(call.Send), open: make(map[uint64]*pluginSession), broken: make(chan struct{})}
	var running sync.WaitGroup
	for {
		up, err := call.Recv()
		if err != nil {
			break
		}
		n := up.GetSession()
		if open := up.GetOpen(); open != nil {
			// Not a child of the call's context, whose table of children
			// would cost every session a few hundred bytes: the end of
			// the call cancels every session itself (below).
			ctx, cancel := context.WithCancel(context.WithoutCancel(call.Context()))
			ps := &pluginSession{
				m: m, n: n, id: string(open.GetId()), ctx: ctx, cancel: cancel,
				down: newCredit(sessionWindow),
				wake: make(chan struct{}, 1),
				in:   grants{window: sessionWindow},
			}
			if !m.put(ps) {
				cancel()
				continue
			}
			// Decoded here, not on the handler's goroutine, which would
			// keep the stack that took for the session's life, nor in
			// its closure, which would keep the message.
			i := int(open.GetRoute())
			var h core.SessionHandler
			if i < len(handlers) {
				h = handlers[i]
			}
			req := decodeRequestFields(open.GetRequest())
			running.Go(func() {
				// The handler holds the request as long as it needs it;
				// the closure lets go of it.
				r := req
				req = nil
				var herr error
				if h == nil {
					herr = fmt.Errorf("pluginrpc: no session handler for route %d", i)
				} else {
					herr = serveSession(ctx, h, r, ps)
				}
				cancel()
				m.remove(n)
				end := &pluginv3.SessionEnd{}
				if herr != nil {
					end.Error = encodeError(herr)
				}
				_ = m.out.direct(&pluginv3.SessionDown{Session: n, Kind: &pluginv3.SessionDown_End{End: end}})
			})
			continue
		}
		ps := m.get(n)
		if ps == nil {
			continue // ended already
		}
		switch k := up.GetKind().(type) {
		case *pluginv3.SessionUp_Message:
			ps.arrive(up, int64(len(k.Message.GetData()))+messageCost)
		case *pluginv3.SessionUp_Closed:
			ps.arrive(up, 0)
		case *pluginv3.SessionUp_Credit:
			ps.down.add(int64(k.Credit.GetBytes()))
		case *pluginv3.SessionUp_Cancel:
			ps.cancel()
		}
	}
	// The call is over: every session on it breaks.
	close(m.broken)
	for _, ps := range m.closeAll() {
		ps.cancel()
	}
	running.Wait()
	m.out.stop(errSessionsOver)
	return nil
}

// serveSession runs h; a panic ends the session like core.NewPanicError.
func serveSession(ctx context.Context, h core.SessionHandler, req *core.Request, s core.Session) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = core.NewPanicError(v)
		}
	}()
	return h.ServeSession(ctx, req, s)
}

// errSessionsOver fails a send on a Sessions call that ended.
var errSessionsOver = errors.New("pluginrpc: the Sessions call ended")

// pluginSessions is the plugin's end of one Sessions call.
type pluginSessions struct {
	out    *sender[*pluginv3.SessionDown]
	broken chan struct{} // closed when the call ends

	mu     sync.Mutex
	open   map[uint64]*pluginSession
	closed bool
}

func (m *pluginSessions) put(ps *pluginSession) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.open[ps.n] != nil {
		return false
	}
	m.open[ps.n] = ps
	return true
}

func (m *pluginSessions) get(n uint64) *pluginSession {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.open[n]
}

func (m *pluginSessions) remove(n uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.open, n)
}

// closeAll forgets every session and returns them.
func (m *pluginSessions) closeAll() map[uint64]*pluginSession {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	open := m.open
	m.open = nil
	return open
}

// pluginSession is a session as a handler in the plugin process sees it.
type pluginSession struct {
	m      *pluginSessions
	n      uint64
	id     string
	ctx    context.Context // the handler's
	cancel context.CancelFunc
	down   *credit // for the handler's messages, granted by the host
	postMu sync.Mutex
	sent   chan error // the result of post; guarded by postMu

	inMu sync.Mutex
	inq  []*pluginv3.SessionUp // the client's messages and close, in order
	in   grants
	wake chan struct{} // a wake for Recv

	mu        sync.Mutex // guards the fields below
	peerClose *core.CloseError
	ownClose  *core.CloseError
}

// arrive queues what the host sent for Recv. A message past the
// session's credit (the host broke the protocol) ends the session.
func (ps *pluginSession) arrive(up *pluginv3.SessionUp, cost int64) {
	ps.inMu.Lock()
	ok := ps.in.arrive(cost)
	if ok {
		ps.inq = append(ps.inq, up)
	}
	ps.inMu.Unlock()
	if !ok {
		ps.cancel()
		return
	}
	select {
	case ps.wake <- struct{}{}:
	default:
	}
}

// post sends d through the call's sender (see sender): Recv and Close
// run on the handler's goroutine, which waits long for the client. postMu
// serializes the use of ps.sent.
func (ps *pluginSession) post(d *pluginv3.SessionDown) error {
	ps.postMu.Lock()
	defer ps.postMu.Unlock()
	return ps.m.out.post(ps.ctx, d, &ps.sent)
}

// ID returns the id the host assigned.
func (ps *pluginSession) ID() string { return ps.id }

// Recv returns the client's next message, or its close as a
// *core.CloseError.
func (ps *pluginSession) Recv(ctx context.Context) (core.Message, error) {
	for {
		ps.mu.Lock()
		pc := ps.peerClose
		ps.mu.Unlock()
		if pc != nil {
			return core.Message{}, pc
		}
		ps.inMu.Lock()
		if len(ps.inq) > 0 {
			m := ps.inq[0]
			ps.inq[0] = nil
			ps.inq = ps.inq[1:]
			if len(ps.inq) == 0 {
				ps.inq = nil
			}
			var grant int64
			if msg := m.GetMessage(); msg != nil {
				grant = ps.in.take(int64(len(msg.GetData())) + messageCost)
			}
			ps.inMu.Unlock()
			if grant > 0 {
				_ = ps.post(&pluginv3.SessionDown{Session: ps.n, Kind: &pluginv3.SessionDown_Credit{Credit: &pluginv3.Credit{Bytes: uint64(grant)}}})
			}
			if c := m.GetClosed(); c != nil {
				ce := &core.CloseError{Code: int(c.GetCode()), Reason: string(c.GetReason())}
				ps.mu.Lock()
				ps.peerClose = ce
				ps.mu.Unlock()
				return core.Message{}, ce
			}
			msg := m.GetMessage()
			return core.Message{Binary: msg.GetBinary(), Data: msg.GetData()}, nil
		}
		ps.inMu.Unlock()
		select {
		case <-ps.wake:
		case <-ps.m.broken:
			return core.Message{}, &core.CloseError{Code: core.CloseAbnormal}
		case <-ctx.Done():
			return core.Message{}, ctx.Err()
		}
	}
}

// closedErr returns the session's close, nil while it is open.
func (ps *pluginSession) closedErr() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.ownClose != nil {
		return ps.ownClose
	}
	if ps.peerClose != nil {
		return ps.peerClose
	}
	return nil
}

// Send sends m to the client once the host has credit for it.
func (ps *pluginSession) Send(ctx context.Context, m core.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ps.closedErr(); err != nil {
		return err
	}
	if !ps.down.wait(ctx, ps.ctx.Done(), ps.m.broken) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return &core.CloseError{Code: core.CloseAbnormal}
	}
	if err := ps.closedErr(); err != nil {
		return err
	}
	ps.down.spend(int64(len(m.Data)) + messageCost)
	return ps.m.out.direct(&pluginv3.SessionDown{Session: ps.n, Kind: &pluginv3.SessionDown_Message{Message: &pluginv3.SessionMessage{Binary: m.Binary, Data: m.Data}}})
}

// Close closes the session; only the first Close counts.
func (ps *pluginSession) Close(code int, reason string) error {
	ps.mu.Lock()
	if ps.ownClose != nil {
		ps.mu.Unlock()
		return nil
	}
	ps.ownClose = &core.CloseError{Code: code, Reason: reason}
	ps.mu.Unlock()
	return ps.post(&pluginv3.SessionDown{Session: ps.n, Kind: &pluginv3.SessionDown_Close{Close: &pluginv3.SessionClose{Code: int32(code), Reason: wire(reason)}}})
}

var _ core.Session = (*pluginSession)(nil)
