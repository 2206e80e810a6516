package pluginrpc

import (
	"context"
	"errors"
	"net/http"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginrpc/pluginv3"
)

// GETs kept open of an isolated plugin, run where the tree is. A GET kept
// open (doors.Watch) is a tree client whose frames become the events of
// the request's answer; run in the plugin process, each of its
// notifications crossed the boundary twice (the client's frame down on
// Trees, the event up on Events), so a notification to a thousand
// watchers of one plugin cost two thousand messages. When the host offers
// it (capWatch, Config.Watch), the plugin's doors.Watch asks the host to
// run the stream instead (Host.Watch, naming the request by its id on
// Requests): the host runs Config.Watch on its own tree with its own
// request (identity, context, Last-Event-ID), holds the stream on the
// request's waiter, and serves it as the answer when the plugin's answer
// says so (Response.watch). Setting a stream up costs one call; its
// notifications cross no time at all, as a spliced session's (splice.go).
// The plugin keeps the decision: which resource, whether full, whether to
// answer with the stream at all; the tree keeps the permissions.

// WatchFunc runs a GET kept open of resource on t for req (doors.Watch):
// it returns once the tree accepted the subscription, with a response
// whose Stream carries the events, or the error to answer with.
type WatchFunc func(ctx context.Context, t core.Tree, req *core.Request, resource string, full bool) (*core.Response, error)

// errWatchGone answers Host.Watch for a request that no longer waits for
// its answer (it was cancelled or answered, or its call broke).
var errWatchGone = core.Status(http.StatusServiceUnavailable, "Request Gone")

// errNoWatch answers Host.Watch when the host does not run watches.
var errNoWatch = errors.New("pluginrpc: the host does not run watches")

// errWatchInPlugin is what the plugin gets from a stream the host runs if
// it reads it itself (a handler that wrapped doors.Watch's answer).
var errWatchInPlugin = errors.New("pluginrpc: the stream is the host's (Host.Watch); the plugin cannot read it")

// closeWatch closes the stream of a watch the host started; nil is none.
func closeWatch(resp *core.Response) {
	if resp != nil && resp.Stream != nil {
		_ = resp.Stream.Close()
	}
}

// Watch runs a GET kept open for a request the plugin is answering, with
// the request as the host's handler has it, and keeps the stream on the
// request's waiter for the answer (requestMux.call).
func (s *hostServer) Watch(_ context.Context, m *pluginv3.WatchRequest) (*pluginv3.WatchResponse, error) {
	if s.watch == nil || s.host.Tree == nil || s.requests == nil {
		return &pluginv3.WatchResponse{Error: encodeError(errNoWatch)}, nil
	}
	err := s.requests.watch(m.GetRequest(), func(ctx context.Context, req *core.Request) (*core.Response, error) {
		return s.watch(ctx, s.host.Tree, req, string(m.GetResource()), m.GetFull())
	})
	if err != nil {
		return &pluginv3.WatchResponse{Error: encodeError(err)}, nil
	}
	return &pluginv3.WatchResponse{}, nil
}

// watch runs run with the context and request of request id, which must
// wait for its answer, and keeps the stream on its waiter (closing one
// kept before: the answer has one stream). A stream that the request no
// longer waits for when run returns is closed.
func (x *requestMux) watch(id uint64, run func(context.Context, *core.Request) (*core.Response, error)) error {
	x.mu.Lock()
	c := x.cur
	x.mu.Unlock()
	if c == nil {
		return errWatchGone
	}
	c.mu.Lock()
	w := c.waiting[id]
	var ctx context.Context
	var req *core.Request
	if w != nil {
		ctx, req = w.ctx, w.req
	}
	c.mu.Unlock()
	if w == nil || req == nil {
		return errWatchGone
	}
	resp, err := run(ctx, req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return err
	}
	if resp == nil || resp.Stream == nil {
		return errors.New("pluginrpc: the host's watch gave no stream")
	}
	c.mu.Lock()
	if c.waiting[id] != w {
		c.mu.Unlock()
		closeWatch(resp)
		return errWatchGone
	}
	old := w.watch
	w.watch = resp
	c.mu.Unlock()
	closeWatch(old)
	return nil
}

// requestKey is the context key of the id of the request a handler
// answers on Requests, set when the host runs watches.
type requestKey struct{}

// withRequestID returns ctx carrying the request's id on Requests.
func withRequestID(ctx context.Context, id uint64) context.Context {
	return context.WithValue(ctx, requestKey{}, id)
}

// SpliceWatch asks the host to run a GET kept open of resource for the
// request the handler answers (the one of ctx, as the host has it), and
// reports whether it did: then its answer, a response whose stream the
// host serves itself, or the error to answer with (the tree's refusal
// with its status). It does not when the host does not offer it (an
// older host) or ctx carries no request of Requests (a request on
// Exchange): the caller then runs the stream itself. doors.Watch uses it.
func (t treeHost) SpliceWatch(ctx context.Context, resource string, full bool) (*core.Response, bool, error) {
	id, ok := ctx.Value(requestKey{}).(uint64)
	if !ok || !t.h.watch {
		return nil, false, nil
	}
	resp, err := t.h.client.Watch(ctx, &pluginv3.WatchRequest{Request: id, Resource: wire(resource), Full: full})
	if err != nil {
		return nil, true, hostCallError(ctx, err, "watch", resource)
	}
	if e := resp.GetError(); e != nil {
		return nil, true, decodeError(e)
	}
	return &core.Response{Stream: hostWatch{}}, true, nil
}

// hostWatch is, in the plugin, the stream of a GET kept open that the
// host runs: answering with it sets Response.watch, and the host serves
// its own stream.
type hostWatch struct{}

// Next fails: the events are the host's.
func (hostWatch) Next(context.Context) (core.Event, error) {
	return core.Event{}, errWatchInPlugin
}

// Close does nothing: the host closes its stream when the answer does
// not take it.
func (hostWatch) Close() error { return nil }

var _ core.EventSource = hostWatch{}
