package pluginrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins/pluginrpc/pluginv2"
)

// Message sessions across the process boundary: one bidirectional gRPC
// call (Session) per session. The host keeps the client's connection (the
// session transport) and the session's id; it pumps the client's messages
// into the call and the handler's messages, closes and return out of it.
// A call that breaks (the plugin process died) ends the session with
// ErrUnavailable, so the host closes it with core.CloseInternal; the host's
// end hooks run either way, since the session lives in the host.

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
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	var pump sync.WaitGroup
	defer func() {
		cancel()
		pump.Wait()
	}()
	call, err := cn.rpc.Session(ctx)
	if err != nil {
		return sessionError(parent, err)
	}
	open := &pluginv2.SessionOpen{Route: h.route, Request: encodeRequest(req), Id: wire(s.ID())}
	if err := call.Send(&pluginv2.SessionUp{Kind: &pluginv2.SessionUp_Open{Open: open}}); err != nil {
		_, err = call.Recv()
		return sessionError(parent, err)
	}
	// The client's messages, then its close, go up in this goroutine.
	pump.Go(func() {
		for {
			m, err := s.Recv(ctx)
			if err != nil {
				if ctx.Err() == nil {
					code, reason := core.CloseStatus(err)
					_ = call.Send(&pluginv2.SessionUp{Kind: &pluginv2.SessionUp_Closed{Closed: &pluginv2.SessionClose{Code: int32(code), Reason: wire(reason)}}})
				}
				return
			}
			up := &pluginv2.SessionUp{Kind: &pluginv2.SessionUp_Message{Message: &pluginv2.SessionMessage{Binary: m.Binary, Data: m.Data}}}
			if call.Send(up) != nil {
				return
			}
		}
	})
	for {
		down, err := call.Recv()
		if err != nil {
			return sessionError(parent, err)
		}
		switch k := down.GetKind().(type) {
		case *pluginv2.SessionDown_Message:
			_ = s.Send(ctx, core.Message{Binary: k.Message.GetBinary(), Data: k.Message.GetData()})
		case *pluginv2.SessionDown_Close:
			_ = s.Close(int(k.Close.GetCode()), string(k.Close.GetReason()))
		case *pluginv2.SessionDown_End:
			if e := k.End.GetError(); e != nil {
				return decodeError(e)
			}
			return nil
		}
	}
}

// sessionError is the end of a session call that broke: ctx's error when
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

// Session serves one message session with the handler of its route.
func (s *server) Session(call pluginv2.Plugin_SessionServer) error {
	first, err := call.Recv()
	if err != nil {
		return err
	}
	open := first.GetOpen()
	if open == nil {
		return status.Error(codes.InvalidArgument, "pluginrpc: a session starts with open")
	}
	s.mu.RLock()
	sessions := s.sessions
	s.mu.RUnlock()
	ps := &pluginSession{id: string(open.GetId()), call: call, in: make(chan *pluginv2.SessionUp), broken: make(chan struct{})}
	i := int(open.GetRoute())
	var herr error
	if i >= len(sessions) || sessions[i] == nil {
		herr = fmt.Errorf("pluginrpc: no session handler for route %d", i)
	} else {
		done := make(chan struct{})
		defer close(done)
		go ps.read(done)
		herr = serveSession(call.Context(), sessions[i], decodeRequestFields(open.GetRequest()), ps)
	}
	end := &pluginv2.SessionEnd{}
	if herr != nil {
		end.Error = encodeError(herr)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return call.Send(&pluginv2.SessionDown{Kind: &pluginv2.SessionDown_End{End: end}})
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

// pluginSession is a session as a handler in the plugin process sees it.
type pluginSession struct {
	id     string
	call   pluginv2.Plugin_SessionServer
	in     chan *pluginv2.SessionUp
	broken chan struct{} // closed when the call fails; readErr says why
	// readErr is set before broken is closed.
	readErr error

	mu        sync.Mutex // serializes sends; guards the fields below
	peerClose *core.CloseError
	ownClose  *core.CloseError
}

// read passes the host's messages to Recv until the call ends or done.
func (ps *pluginSession) read(done <-chan struct{}) {
	for {
		m, err := ps.call.Recv()
		if err != nil {
			ps.readErr = &core.CloseError{Code: core.CloseAbnormal}
			close(ps.broken)
			return
		}
		select {
		case ps.in <- m:
		case <-done:
			return
		}
	}
}

// ID returns the id the host assigned.
func (ps *pluginSession) ID() string { return ps.id }

// Recv returns the client's next message, or its close as a
// *core.CloseError.
func (ps *pluginSession) Recv(ctx context.Context) (core.Message, error) {
	ps.mu.Lock()
	pc := ps.peerClose
	ps.mu.Unlock()
	if pc != nil {
		return core.Message{}, pc
	}
	select {
	case m := <-ps.in:
		if c := m.GetClosed(); c != nil {
			ce := &core.CloseError{Code: int(c.GetCode()), Reason: string(c.GetReason())}
			ps.mu.Lock()
			ps.peerClose = ce
			ps.mu.Unlock()
			return core.Message{}, ce
		}
		msg := m.GetMessage()
		return core.Message{Binary: msg.GetBinary(), Data: msg.GetData()}, nil
	case <-ps.broken:
		return core.Message{}, ps.readErr
	case <-ctx.Done():
		return core.Message{}, ctx.Err()
	}
}

// Send sends m to the client.
func (ps *pluginSession) Send(ctx context.Context, m core.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.ownClose != nil {
		return ps.ownClose
	}
	if ps.peerClose != nil {
		return ps.peerClose
	}
	return ps.call.Send(&pluginv2.SessionDown{Kind: &pluginv2.SessionDown_Message{Message: &pluginv2.SessionMessage{Binary: m.Binary, Data: m.Data}}})
}

// Close closes the session; only the first Close counts.
func (ps *pluginSession) Close(code int, reason string) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.ownClose != nil {
		return nil
	}
	ps.ownClose = &core.CloseError{Code: code, Reason: reason}
	return ps.call.Send(&pluginv2.SessionDown{Kind: &pluginv2.SessionDown_Close{Close: &pluginv2.SessionClose{Code: int32(code), Reason: wire(reason)}}})
}

var (
	_ core.SessionHandler = (*remoteSession)(nil)
	_ core.Session        = (*pluginSession)(nil)
)
