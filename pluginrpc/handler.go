package pluginrpc

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginrpc/pluginv3"
)

// Requests across the process boundary: the host's handler of a route
// sends the request to the plugin process; the plugin runs its handler and
// encodes the answer.

// remoteHandler forwards the requests of one route to the plugin process.
type remoteHandler struct {
	c     *Client
	route uint32
}

// Handle sends req to the plugin and returns its answer. The request's
// context crosses: cancelling it cancels the handler's context. When the
// request's context ends first, or the handler fails because it ended, the
// error is the context's own (context.Canceled when the client went away),
// as in process: never a new error with its text.
func (h *remoteHandler) Handle(ctx context.Context, req *core.Request) (*core.Response, error) {
	c := h.c
	cn := c.cur.Load()
	if cn == nil {
		return nil, ErrUnavailable
	}
	m := &pluginv3.HandleRequest{Route: h.route, Request: encodeRequest(req)}
	if req.Body != nil {
		body, token := c.bodies.encode(req.Body, req.ContentLength)
		if token != 0 {
			defer c.bodies.remove(token)
		}
		m.Request.Body = body
	}
	resp, watch, err := cn.exchange(ctx, m, req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		switch status.Code(err) {
		case codes.Unavailable, codes.Canceled, codes.Aborted:
			return nil, ErrUnavailable
		}
		return nil, fmt.Errorf("pluginrpc: plugin %q: %s", c.cfg.Name, status.Convert(err).Message())
	}
	r := resp.GetResponse()
	if !r.GetWatch() {
		// Not an answer with the stream the host started, if it did.
		closeWatch(watch)
		watch = nil
	}
	if e := resp.GetError(); e != nil {
		err := decodeError(e)
		if ctxErr := ctx.Err(); ctxErr != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			return nil, ctxErr
		}
		return nil, err
	}
	if r == nil {
		return nil, nil
	}
	out := decodeResponseFields(r)
	switch {
	case r.GetWatch():
		if watch == nil {
			return nil, errWatchGone
		}
		out.Stream = watch.Stream
	case r.GetStream() != 0:
		out.Stream = &remoteEvents{rpc: cn.rpc, handle: r.GetStream(), crossed: &c.crossed}
	}
	if ct := r.GetContent(); ct != nil {
		out.Content = &core.Content{
			Name:     string(ct.GetName()),
			ModTime:  decodeTime(ct.GetModTime()),
			Size:     ct.GetSize(),
			ReaderAt: &remoteContent{ctx: ctx, rpc: cn.rpc, handle: ct.GetHandle(), size: ct.GetSize()},
		}
	}
	return out, nil
}

// exchange sends m (req as encoded) on the Requests call, or on an
// Exchange stream to a plugin that does not serve Requests, and returns
// the answer and the GET kept open the host started for it (Host.Watch),
// if any.
func (cn *conn) exchange(ctx context.Context, m *pluginv3.HandleRequest, req *core.Request) (*pluginv3.HandleResponse, *core.Response, error) {
	a, watch, err := cn.requests.call(ctx, m.GetRoute(), m.GetRequest(), req)
	if errors.Is(err, errNoRequests) {
		resp, err := cn.pool.call(ctx, m)
		return resp, nil, err
	}
	if err != nil {
		return nil, nil, err
	}
	return &pluginv3.HandleResponse{Response: a.GetResponse(), Error: a.GetError()}, watch, nil
}

// handle runs the handler of req.Route and encodes its answer.
func (s *server) handle(ctx context.Context, m *pluginv3.HandleRequest) *pluginv3.HandleResponse {
	resp, err := s.answer(ctx, 0, m.GetRoute(), m.GetRequest())
	return &pluginv3.HandleResponse{Response: resp, Error: err}
}

// answer runs the handler of route for the request m, whose id on
// Requests is id (0 on Exchange), and encodes its answer: a response, an
// error, or neither for a nil response. A handler that panics answers
// like core.NewPanicError would, and the plugin lives on.
func (s *server) answer(ctx context.Context, id uint64, route uint32, m *pluginv3.Request) (out *pluginv3.Response, outErr *pluginv3.Error) {
	s.mu.RLock()
	handlers, host := s.handlers, s.host
	s.mu.RUnlock()
	if id != 0 && host != nil && host.watch {
		// For doors.Watch, which asks the host to run its stream.
		ctx = withRequestID(ctx, id)
	}
	i := int(route)
	if i >= len(handlers) || handlers[i] == nil {
		return nil, &pluginv3.Error{Message: fmt.Appendf(nil, "pluginrpc: no handler for route %d", i)}
	}
	req := decodeRequest(ctx, m, host)
	defer func() {
		if v := recover(); v != nil {
			out, outErr = nil, encodeError(core.NewPanicError(v))
		}
	}()
	resp, err := handlers[i].Handle(ctx, req)
	if err != nil {
		return nil, encodeError(err)
	}
	if resp == nil {
		return nil, nil
	}
	out = encodeResponse(resp)
	if _, ok := resp.Stream.(hostWatch); ok {
		out.Watch = true
	} else if resp.Stream != nil {
		out.Stream = s.streams.open(resp.Stream, req, core.EventStream(req.Header))
	}
	if c := resp.Content; c != nil {
		out.Content = &pluginv3.Content{
			Handle:  s.contents.open(c.ReaderAt),
			Name:    wire(c.Name),
			ModTime: encodeTime(c.ModTime),
			Size:    c.Size,
		}
	}
	return out, nil
}

// decodeRequest rebuilds the request a handler sees.
func decodeRequest(ctx context.Context, m *pluginv3.Request, host *remoteHost) *core.Request {
	req := decodeRequestFields(m)
	if b := m.GetBody(); b.GetPresent() {
		req.Body = &bodyReader{ctx: ctx, host: host, data: b.GetData(), token: b.GetToken(), err: b.GetError()}
	}
	return req
}

var _ core.Handler = (*remoteHandler)(nil)
