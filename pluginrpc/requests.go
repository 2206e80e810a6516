package pluginrpc

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginrpc/pluginv3"
)

// The host's end of the Requests call: all the requests to one plugin
// process ride one long-lived call, each tagged with an id. A request
// queues itself and waits for its answer; whatever queued while the
// previous message went out goes in one message (batcher), and one
// goroutine per call reads the answers and hands each to its waiter. The
// waiters are pooled, and so are the queue's arrays: under load a request
// costs a share of one message each way, not a message of its own.

// errNoRequests is what a call gives when the plugin does not serve
// Requests (an older build of protocol version 3): the request is sent on
// Exchange instead.
var errNoRequests = errors.New("pluginrpc: the plugin does not serve Requests")

// maxBatchBytes bounds the estimated size of one message of several
// requests or answers, well below gRPC's limit of 4 MiB a message; an item
// larger than the bound goes alone.
const maxBatchBytes = 1 << 20

// requestMux carries the requests of one plugin process.
type requestMux struct {
	ctx context.Context // the process's life
	rpc pluginv3.PluginClient
	// next numbers the requests: an id names one request of the process,
	// whichever call carries it, so that a Host.Watch of a request that a
	// broken call carried finds no other (watch.go).
	next atomic.Uint64

	mu          sync.Mutex
	cur         *requestCall // nil before the first request and after a call broke
	unsupported bool         // the plugin answered Unimplemented
}

// requestCall is one Requests call and the requests waiting on it.
type requestCall struct {
	mux    *requestMux
	stream pluginv3.Plugin_RequestsClient
	cancel context.CancelFunc
	out    batcher[*pluginv3.TaggedRequest]
	batch  pluginv3.RequestBatch // the message being sent; only the sender touches it

	mu      sync.Mutex
	waiting map[uint64]*waiter
	err     error // why the call ended; set once, then no request joins it
}

// waiter is a request waiting for its answer; nil on ch means the call
// ended first.
type waiter struct {
	ch chan *pluginv3.TaggedAnswer
	// The request as the host's handler has it, for a GET kept open
	// that the plugin asks the host to run (watch.go); set before the
	// waiter is in the call's table.
	ctx context.Context
	req *core.Request
	// watch is the stream the host started for the request, until the
	// answer takes it; guarded by the call's mu while the waiter is in
	// its table.
	watch *core.Response
}

var waiters = sync.Pool{New: func() any { return &waiter{ch: make(chan *pluginv3.TaggedAnswer, 1)} }}

// putWaiter closes the stream w holds, if any, and pools w.
func putWaiter(w *waiter) {
	closeWatch(w.watch)
	w.ctx, w.req, w.watch = nil, nil, nil
	waiters.Put(w)
}

func newRequestMux(ctx context.Context, rpc pluginv3.PluginClient) *requestMux {
	return &requestMux{ctx: ctx, rpc: rpc}
}

// call sends the request m (req as encoded) to the handler of route and
// waits for its answer, and returns with it the GET kept open the host
// started for the request (Host.Watch), if any: the caller serves it or
// closes it. When ctx ends first, the request is cancelled in the plugin
// (which cancels its handler's context) and call returns ctx.Err(); an
// answer that comes later is released. A call that ends (the process
// died) fails every request waiting on it with the call's error.
func (x *requestMux) call(ctx context.Context, route uint32, m *pluginv3.Request, req *core.Request) (*pluginv3.TaggedAnswer, *core.Response, error) {
	c, err := x.open()
	if err != nil {
		return nil, nil, err
	}
	w := waiters.Get().(*waiter)
	w.ctx, w.req = ctx, req
	id := x.next.Add(1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		putWaiter(w)
		return nil, nil, err
	}
	c.waiting[id] = w
	c.mu.Unlock()
	c.out.add(&pluginv3.TaggedRequest{Id: id, Route: route, Request: m})
	select {
	case a := <-w.ch:
		// Out of the table (receive or end took it): the watch is
		// ours.
		watch := w.watch
		w.watch = nil
		putWaiter(w)
		if a == nil {
			closeWatch(watch)
			return nil, nil, c.failure()
		}
		return a, watch, nil
	case <-ctx.Done():
	}
	c.mu.Lock()
	_, waiting := c.waiting[id]
	delete(c.waiting, id)
	c.mu.Unlock()
	if waiting {
		putWaiter(w)
		c.out.add(&pluginv3.TaggedRequest{Id: id, Cancel: true})
		return nil, nil, ctx.Err()
	}
	// The answer (or the call's end) is on its way: take it, so that the
	// waiter is empty when reused, and release what it holds open.
	a := <-w.ch
	putWaiter(w)
	if a != nil {
		x.release(a)
	}
	return nil, nil, ctx.Err()
}

// open returns the open call, opening one if none is.
func (x *requestMux) open() (*requestCall, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.unsupported {
		return nil, errNoRequests
	}
	if x.cur != nil {
		return x.cur, nil
	}
	ctx, cancel := context.WithCancel(x.ctx)
	stream, err := x.rpc.Requests(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	c := &requestCall{mux: x, stream: stream, cancel: cancel, waiting: make(map[uint64]*waiter)}
	c.out.send = c.send
	x.cur = c
	go c.receive()
	return c, nil
}

// send sends queued requests, in messages of at most maxBatchBytes (as
// estimated). A failed send cancels the call, whose receiver then fails
// the requests waiting on it.
func (c *requestCall) send(items []*pluginv3.TaggedRequest) {
	for len(items) > 0 {
		n, size := 1, requestSize(items[0].GetRequest())
		for n < len(items) {
			size += requestSize(items[n].GetRequest())
			if size > maxBatchBytes {
				break
			}
			n++
		}
		c.batch.Requests = items[:n]
		err := c.stream.Send(&c.batch)
		c.batch.Requests = nil
		if err != nil {
			c.cancel()
			return
		}
		items = items[n:]
	}
}

// receive hands each answer to its waiter until the call ends, then fails
// the requests still waiting.
func (c *requestCall) receive() {
	var ready []*waiter
	for {
		b, err := c.stream.Recv()
		if err != nil {
			c.end(err)
			return
		}
		answers := b.GetAnswers()
		ready = ready[:0]
		c.mu.Lock()
		for _, a := range answers {
			w := c.waiting[a.GetId()]
			delete(c.waiting, a.GetId())
			ready = append(ready, w)
		}
		c.mu.Unlock()
		for i, w := range ready {
			if w == nil {
				c.mux.release(answers[i]) // its request was cancelled
				continue
			}
			w.ch <- answers[i]
		}
		clear(ready)
	}
}

// end records why the call ended and fails the requests waiting on it;
// the next request opens another call, or learns that the plugin has no
// Requests.
func (c *requestCall) end(err error) {
	c.cancel()
	switch {
	case status.Code(err) == codes.Unimplemented:
		err = errNoRequests
	case errors.Is(err, io.EOF):
		// The plugin ended the call with requests on it: they are lost
		// as when its process dies.
		err = status.Error(codes.Unavailable, "pluginrpc: the plugin ended the Requests call")
	}
	c.mu.Lock()
	c.err = err
	waiting := c.waiting
	c.waiting = nil
	c.mu.Unlock()
	x := c.mux
	x.mu.Lock()
	if x.cur == c {
		x.cur = nil
	}
	if err == errNoRequests {
		x.unsupported = true
	}
	x.mu.Unlock()
	for _, w := range waiting {
		w.ch <- nil
	}
}

// failure returns why the call ended.
func (c *requestCall) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// releaseTimeout bounds the release of an answer nobody waits for.
const releaseTimeout = 5 * time.Second

// release closes the download or streamed answer that the answer a holds
// open in the plugin, for an answer that came after its request gave up.
func (x *requestMux) release(a *pluginv3.TaggedAnswer) {
	r := a.GetResponse()
	content, stream := r.GetContent().GetHandle(), r.GetStream()
	if content == 0 && stream == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(x.ctx, releaseTimeout)
		defer cancel()
		if content != 0 {
			_, _ = x.rpc.CloseContent(ctx, &pluginv3.CloseContentRequest{Handle: content})
		}
		if stream != 0 {
			_, _ = x.rpc.CloseEvents(ctx, &pluginv3.CloseEventsRequest{Handle: stream})
		}
	}()
}

// requestSize estimates the encoded size of m: what its variable parts
// hold, plus a little for each field.
func requestSize(m *pluginv3.Request) int {
	n := 64 + len(m.GetPath()) + len(m.GetConsumed()) + len(m.GetQuery()) + len(m.GetBody().GetData())
	for _, h := range m.GetHeader() {
		n += 8 + len(h.GetName())
		for _, v := range h.GetValues() {
			n += 4 + len(v)
		}
	}
	for _, v := range m.GetVars() {
		n += 8 + len(v.GetName()) + len(v.GetValue())
	}
	return n
}
