package pluginrpc

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/reso-project/reso/pluginrpc/pluginv3"
)

// The plugin's end of the Requests call: every request runs on a goroutine
// of its own (an idle worker of the call's, or a new one), with a context
// the host can cancel by the request's id; the
// answers go back in as few messages as the batcher can make of them.

// requestsCall is the plugin's state of one Requests call.
type requestsCall struct {
	s      *server
	stream pluginv3.Plugin_RequestsServer
	out    batcher[*pluginv3.TaggedAnswer]
	batch  pluginv3.AnswerBatch // the message being sent; only the sender touches it
	broken atomic.Bool          // a send failed: answers are released, not sent
	wg     sync.WaitGroup       // the requests running
	work   chan *runningRequest // to an idle worker
	idle   atomic.Int32         // workers waiting on work

	mu      sync.Mutex
	running map[uint64]*runningRequest
}

// runningRequest is a request whose handler runs.
type runningRequest struct {
	m         *pluginv3.TaggedRequest
	ctx       context.Context
	cancel    context.CancelFunc
	cancelled bool // the host cancelled it: it waits for no answer
}

var runningRequests = sync.Pool{New: func() any { return new(runningRequest) }}

// Requests runs the requests of one call, each on a worker goroutine of
// the call, until the host ends the call; then it waits for the handlers still running
// (whose contexts end with the call's, unless the host ended it cleanly)
// so that no answer is sent after it returned.
func (s *server) Requests(stream pluginv3.Plugin_RequestsServer) error {
	c := &requestsCall{s: s, stream: stream, running: make(map[uint64]*runningRequest), work: make(chan *runningRequest)}
	c.out.send = c.send
	c.out.handoff = func(f func()) {
		c.wg.Add(1) // the handler's goroutine that hands off still counts
		go func() {
			defer c.wg.Done()
			f()
		}()
	}
	ctx := stream.Context()
	for {
		b, err := stream.Recv()
		if err != nil {
			break
		}
		for _, m := range b.GetRequests() {
			if m.GetCancel() {
				c.cancelRequest(m.GetId())
				continue
			}
			r := runningRequests.Get().(*runningRequest)
			r.ctx, r.cancel = context.WithCancel(ctx)
			r.m = m
			c.mu.Lock()
			c.running[m.GetId()] = r
			c.mu.Unlock()
			c.wg.Add(1)
			select {
			case c.work <- r:
			default:
				go c.worker(r)
			}
		}
	}
	close(c.work)
	c.wg.Wait()
	return nil
}

// maxIdleWorkers bounds the goroutines of a call that wait for requests.
// A request runs on an idle one, or on a new one when none waits: a
// worker's stack has grown to what a handler and gRPC's send need, where a
// new goroutine's would grow again (copied, frame by frame) each time.
const maxIdleWorkers = 64

// worker runs r, then the requests it is given, until the call ends or
// enough other workers wait.
func (c *requestsCall) worker(r *runningRequest) {
	for {
		c.run(r)
		if c.idle.Add(1) > maxIdleWorkers {
			c.idle.Add(-1)
			return
		}
		var ok bool
		r, ok = <-c.work
		c.idle.Add(-1)
		if !ok {
			return
		}
	}
}

// run runs one request and queues its answer, unless the host cancelled
// it: then what the answer holds open is released at once.
func (c *requestsCall) run(r *runningRequest) {
	defer c.wg.Done()
	m := r.m
	resp, err := c.s.answer(r.ctx, m.GetId(), m.GetRoute(), m.GetRequest())
	id := m.GetId()
	c.mu.Lock()
	delete(c.running, id)
	cancelled := r.cancelled
	c.mu.Unlock()
	r.cancel()
	*r = runningRequest{}
	runningRequests.Put(r)
	if cancelled || c.broken.Load() {
		c.s.release(resp)
		return
	}
	c.out.add(&pluginv3.TaggedAnswer{Id: id, Response: resp, Error: err})
}

// cancelRequest cancels the request id if it still runs.
func (c *requestsCall) cancelRequest(id uint64) {
	c.mu.Lock()
	r := c.running[id]
	if r != nil {
		r.cancelled = true
		r.cancel()
	}
	c.mu.Unlock()
}

// send sends queued answers, in messages of at most maxBatchBytes (as
// estimated). Once a send failed (the call ended), answers are released
// instead: the host will read none.
func (c *requestsCall) send(items []*pluginv3.TaggedAnswer) {
	for len(items) > 0 && !c.broken.Load() {
		n, size := 1, answerSize(items[0])
		for n < len(items) {
			size += answerSize(items[n])
			if size > maxBatchBytes {
				break
			}
			n++
		}
		c.batch.Answers = items[:n]
		err := c.stream.Send(&c.batch)
		c.batch.Answers = nil
		if err != nil {
			c.broken.Store(true)
			break
		}
		items = items[n:]
	}
	for _, a := range items {
		c.s.release(a.GetResponse())
	}
}

// answerSize estimates the encoded size of a: what its variable parts
// hold, plus a little for each field.
func answerSize(a *pluginv3.TaggedAnswer) int {
	r := a.GetResponse()
	n := 64 + len(r.GetBody()) + len(r.GetReason()) + len(r.GetContentType()) + len(a.GetError().GetMessage())
	for _, h := range r.GetHeader() {
		n += 8 + len(h.GetName())
		for _, v := range h.GetValues() {
			n += 4 + len(v)
		}
	}
	for _, ck := range r.GetCookies() {
		n += 64 + len(ck.GetName()) + len(ck.GetValue()) + len(ck.GetPath()) + len(ck.GetDomain()) + len(ck.GetRaw())
	}
	return n
}
