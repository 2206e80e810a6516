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
		Query:         r.URL.RawQuery,
		Header:        r.Header,
		Body:          r.Body,
		ContentLength: contentLengthOf(r),
		Vars:          vars,
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
	// cur is the reqState of the request being routed, nil between
	// requests; read by [FromContext] from any goroutine.
	cur atomic.Pointer[reqState]
	// idle is the connection's reqState, reused by its next request.
	idle *reqState
}

// claim returns the connection's reqState started for r, or nil when the
// connection already has a request routed (a router inside a handler finds
// that one with [FromContext] instead) or r is not HTTP/1.
func (c *connState) claim(r *http.Request) *reqState {
	if r.ProtoMajor != 1 || c.cur.Load() != nil {
		return nil
	}
	x := c.idle
	if x == nil {
		x = new(reqState)
		c.idle = x
	}
	x.start(r)
	c.cur.Store(x)
	return x
}

// release ends the request of x, the connection's current reqState.
func (c *connState) release(x *reqState) {
	c.cur.Store(nil)
	x.finish()
}

// connContext is the context of a connection accepted by a [Listen]
// listener: it carries the connection for [WriteStatus] and answers
// [FromContext] with the request the router is routing on it, so that the
// router need not derive a request context of its own.
type connContext struct {
	context.Context
	c *reasonConn
}

// Value returns the connection for connKey, the routed request (or nil)
// for requestKey, and the parent's value for any other key.
func (c *connContext) Value(key any) any {
	switch key.(type) {
	case connKey:
		return c.c
	case requestKey:
		if x := c.c.state.cur.Load(); x != nil {
			return &x.req
		}
		return nil
	}
	return c.Context.Value(key)
}

// contentLengthOf returns the declared body length of r as
// [Request.ContentLength] holds it.
func contentLengthOf(r *http.Request) int64 {
	switch {
	case len(r.TransferEncoding) > 0:
		return -1
	case r.Header.Get("Content-Length") == "":
		return -2
	}
	return r.ContentLength
}

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
