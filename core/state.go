package core

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// reqState is the state of one routed request: its request context and the
// scratch space of its answer (the rendered body and the [Response] that
// carries it), so that routing and answering a request allocate nothing.
//
// The [Router] takes an reqState for each request it routes and gives it
// back once the route's handler has returned, by which time the answer has
// been written: a connection accepted by a [Listen] listener keeps one for
// its requests, which HTTP/1 serves one after another, and other requests
// take one from a pool. Hence a handler must not keep the *Request, its
// Vars or a Response made by [Value] after it returns (net/http sets the
// same rule for the *http.Request and the ResponseWriter).
type reqState struct {
	req Request
	// resp is the Response that [Value] returns first for req; respUsed
	// says it was handed out.
	resp     Response
	respUsed bool
	// buf is the buffer the body of resp is rendered into; kept across
	// requests up to maxKeptBuffer bytes.
	buf []byte
}

// maxKeptBuffer bounds the render buffer an reqState keeps for its next
// request; a larger one is left to the garbage collector.
const maxKeptBuffer = 64 << 10

// start fills x in for r: the request context as [newRequest] builds it,
// with the variables map of the previous request cleared for reuse.
func (x *reqState) start(r *http.Request) *Request {
	vars := x.req.Vars
	clear(vars)
	x.req = Request{
		Method:        r.Method,
		Path:          r.URL.Path,
		Consumed:      Mount(r),
		Query:         r.URL.RawQuery,
		Header:        r.Header,
		Body:          r.Body,
		ContentLength: contentLengthOf(r),
		Vars:          vars,
		Identity:      IdentityFromContext(r.Context()),
		x:             x,
	}
	x.respUsed = false
	return &x.req
}

// finish drops what x holds of its request, so that nothing the request
// referred to stays reachable from an idle reqState.
func (x *reqState) finish() {
	vars := x.req.Vars
	x.req = Request{Vars: vars}
	x.resp = Response{}
	x.respUsed = false
	if cap(x.buf) > maxKeptBuffer {
		x.buf = nil
	}
}

// reqStates holds the reqStates of requests that arrive on connections
// without their own (another server's listener, HTTP/2).
var reqStates = sync.Pool{New: func() any { return new(reqState) }}

// connState is the reqState slot of a connection accepted by a [Listen]
// listener.
type connState struct {
	// mu guards cur and ctx, which [FromContext] reads from any goroutine.
	mu sync.Mutex
	// cur is the reqState of the request being routed, nil between
	// requests.
	cur *reqState
	// ctx is the context of cur's request.
	ctx context.Context
	// idle is the connection's reqState, reused by its next request.
	idle *reqState
}

// enter is [FromContext] and the claim of the connection's reqState in
// one: for ctx, the context of r, it returns the request being routed on
// the connection when there is one (a router inside a handler), or else the
// connection's reqState, reused by its every request, started for r;
// neither when r is not HTTP/1 or ctx was kept past its request (see
// [connState.request]).
func (c *connState) enter(ctx context.Context, r *http.Request) (*Request, *reqState) {
	c.mu.Lock()
	if x, rctx := c.cur, c.ctx; x != nil {
		c.mu.Unlock()
		if ctx != rctx && (ctx.Err() != nil || ctx.Done() == nil) {
			return nil, nil
		}
		return &x.req, nil
	}
	defer c.mu.Unlock()
	if r.ProtoMajor != 1 {
		return nil, nil
	}
	x := c.idle
	if x == nil {
		x = new(reqState)
		c.idle = x
	}
	x.start(r)
	c.cur, c.ctx = x, ctx
	return nil, x
}

// release ends the request of x, the connection's current reqState.
func (c *connState) release(x *reqState) {
	c.mu.Lock()
	c.cur, c.ctx = nil, nil
	c.mu.Unlock()
	x.finish()
}

// request returns the request context of the request being routed, for
// ctx, a context of that request or one derived from it; nil between
// requests, and for a context kept past its request, so that it never
// answers with the state of a later request on the same connection.
//
// A context of the request is its own, or one derived from it while the
// request lives; net/http cancels a request's context when the request
// ends, before the connection reads the next one, so a context kept past
// its request is cancelled by the time another is routed. A context
// detached from cancellation (context.WithoutCancel) could outlive its
// request without being cancelled, so it gets nil too.
func (c *connState) request(ctx context.Context) *Request {
	c.mu.Lock()
	x, rctx := c.cur, c.ctx
	c.mu.Unlock()
	if x == nil {
		return nil
	}
	if ctx != rctx && (ctx.Err() != nil || ctx.Done() == nil) {
		return nil
	}
	return &x.req
}

// connContext is the context of a connection accepted by a [Listen]
// listener: it carries the connection for [WriteStatus] and answers
// [FromContext] with the request the router is routing on it, so that the
// router need not derive a request context of its own.
type connContext struct {
	context.Context
	c *reasonConn
	// below holds the keys of core's values the parent context carries
	// (a context's values never change): a request's look for one that
	// only the contexts above this one carry, such as its identity, stops
	// here rather than going down the server's contexts.
	below keysBelow
}

// keysBelow says which of core's context values a connection's parent
// context carries.
type keysBelow struct {
	recorder, identity, showErrors bool
}

func newConnContext(parent context.Context, c *reasonConn) *connContext {
	return &connContext{Context: parent, c: c, below: keysBelow{
		recorder:   parent.Value(recorderKey{}) != nil,
		identity:   parent.Value(identityKey{}) != nil,
		showErrors: parent.Value(showErrorsKey{}) != nil,
	}}
}

// Value returns the connection for connKey, the connection's request
// slot for requestKey (which [FromContext] asks for the routed request),
// the recorder [ServeRecorded] keeps on the connection, if any, for
// recorderKey, and the parent's value for any other key (nil at once for
// core's keys the parent does not carry).
func (c *connContext) Value(key any) any {
	switch key.(type) {
	case connKey:
		return c.c
	case requestKey:
		return &c.c.state
	case recorderKey:
		if rec := c.c.route.Load(); rec != nil {
			return rec
		}
		if !c.below.recorder {
			return nil
		}
	case identityKey:
		if !c.below.identity {
			return nil
		}
	case showErrorsKey:
		if !c.below.showErrors {
			return nil
		}
	}
	return c.Context.Value(key)
}

// contentLengthOf returns the declared body length of r as
// [Request.ContentLength] holds it.
func contentLengthOf(r *http.Request) int64 {
	switch {
	case len(r.TransferEncoding) > 0:
		return -1
	case noValue(r.Header["Content-Length"]): // as Header.Get(...) == "", uncanonicalized
		return -2
	}
	return r.ContentLength
}

// noValue reports whether a header's values, as http.Header holds them,
// read as "" with Header.Get.
func noValue(vs []string) bool { return len(vs) == 0 || vs[0] == "" }

// contentLengths caches the header values of small Content-Lengths, shared
// (never changed) by every answer of that length, so that an answer costs
// no allocation for its Content-Length.
var contentLengths [4096]atomic.Pointer[[]string]

// contentLength returns the Content-Length header value for n bytes.
func contentLength(n int) []string {
	if n < 0 || n >= len(contentLengths) {
		return []string{strconv.Itoa(n)}
	}
	if v := contentLengths[n].Load(); v != nil {
		return *v
	}
	v := []string{strconv.Itoa(n)}
	contentLengths[n].Store(&v)
	return v
}
