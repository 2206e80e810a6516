package main

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/bench/internal/latency"
)

// The pieces of the loads that publish (fanout.go): subscribers that
// count and time the notifications they receive, and publishers that
// keep a window of NOTIFYs unanswered.

// subscriber counts the notifications one connection receives.
type subscriber struct {
	c         *websocket.Conn
	delivered atomic.Int64
	other     atomic.Int64
	lat       latency.Hist // written by the reader only, read after it ended
}

// audience is the subscriber connections of a run and their readers.
// Send times are durations since clock (monotonic).
type audience struct {
	clock     time.Time
	subs      []*subscriber
	readers   sync.WaitGroup
	measuring atomic.Bool // latencies are recorded while set
	drops     drops
	closeOnce sync.Once
}

func newAudience(clock time.Time) *audience { return &audience{clock: clock} }

// connect opens n connections, subscribes connection i to resource(i) and
// starts their readers.
func (a *audience) connect(d *dialer, n, conc int, resource func(i int) string, deadline time.Time) error {
	a.subs = make([]*subscriber, n)
	return forEach(n, conc, func(i int) error {
		c, err := d.dial()
		if err != nil {
			return err
		}
		s := &subscriber{c: c}
		a.subs[i] = s
		if _, err := mustSucceed(c, message{Method: "SUBSCRIBE", Resource: resource(i), MsgID: 1}, deadline); err != nil {
			return err
		}
		a.readers.Add(1)
		go func() {
			defer a.readers.Done()
			a.read(s)
		}()
		return nil
	})
}

// read counts the notifications of s until its connection ends.
func (a *audience) read(s *subscriber) {
	buf := make([]byte, 0, 512)
	for {
		var err error
		buf, err = readFrame(s.c, buf)
		if err != nil {
			a.drops.add(err)
			return
		}
		ts, ok := sendTime(buf)
		if !ok {
			s.other.Add(1)
			continue
		}
		s.delivered.Add(1)
		if a.measuring.Load() {
			s.lat.Add(time.Since(a.clock) - time.Duration(ts))
		}
	}
}

// delivered is the notifications received so far.
func (a *audience) delivered() int64 {
	var n int64
	for _, s := range a.subs {
		if s != nil {
			n += s.delivered.Load()
		}
	}
	return n
}

// other is the other frames received so far.
func (a *audience) other() int64 {
	var n int64
	for _, s := range a.subs {
		if s != nil {
			n += s.other.Load()
		}
	}
	return n
}

// close closes the connections and waits for the readers; later calls do
// nothing.
func (a *audience) close() {
	a.closeOnce.Do(func() {
		a.drops.stopping.Store(true)
		for _, s := range a.subs {
			if s != nil {
				closeClean(s.c)
			}
		}
		a.readers.Wait()
	})
}

// latency merges the subscribers' latencies into h; after close.
func (a *audience) latency(h *latency.Hist) {
	for _, s := range a.subs {
		if s != nil {
			h.Merge(&s.lat)
		}
	}
}

// drops counts the subscribers whose connection ended before the run
// stopped them, and keeps the first one's error.
type drops struct {
	stopping atomic.Bool
	n        atomic.Int64
	mu       sync.Mutex
	first    string
}

func (d *drops) add(err error) {
	if d.stopping.Load() {
		return
	}
	if d.n.Add(1) == 1 {
		d.mu.Lock()
		d.first = err.Error()
		d.mu.Unlock()
	}
}

func (d *drops) firstErr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.first
}

// publishing is what the publishers of a run share: a budget of NOTIFYs,
// a stop, and where their errors go.
type publishing struct {
	clock   time.Time
	budget  atomic.Int64 // NOTIFYs left to send
	stopped atomic.Bool
	done    chan struct{} // closed by end: the writers give up waiting
	spent   chan struct{} // closed once the budget is spent
	once    sync.Once
	endOnce sync.Once
	errs    chan error // of the connections, while not stopped
	writers sync.WaitGroup
}

func newPublishing(budget int64, clock time.Time) *publishing {
	r := &publishing{clock: clock, done: make(chan struct{}), spent: make(chan struct{}), errs: make(chan error, 1)}
	r.budget.Store(budget)
	return r
}

// fail reports err unless the run stopped or an error is reported already.
func (r *publishing) fail(err error) {
	if r.stopped.Load() {
		return
	}
	select {
	case r.errs <- err:
	default:
	}
}

// stop stops sending and waits up to wait for the writers to end, which
// they do once their NOTIFYs are all answered; it reports whether they
// did.
func (r *publishing) stop(wait time.Duration) bool {
	r.stopped.Store(true)
	ended := make(chan struct{})
	go func() { r.writers.Wait(); close(ended) }()
	select {
	case <-ended:
		return true
	case <-time.After(wait):
		return false
	}
}

// end releases writers still waiting for replies; later calls do nothing.
func (r *publishing) end() {
	r.endOnce.Do(func() {
		r.stopped.Store(true)
		close(r.done)
	})
}

// publisher sends NOTIFYs to one resource over its own connection, with
// at most window of them unanswered, and counts the replies.
type publisher struct {
	c                         *websocket.Conn
	tokens                    chan struct{}
	sent                      atomic.Int64 // NOTIFYs written
	answered, failed, sentSum atomic.Int64
}

// start starts a publisher on c: a writer of NOTIFYs whose data is
// "@ts=<send time>;" and pad, and a reader of the replies. The writer
// ends once the run stops and all its NOTIFYs are answered.
func (r *publishing) start(c *websocket.Conn, resource string, window int, pad string) *publisher {
	pb := &publisher{c: c, tokens: make(chan struct{}, window)}
	go func() { // the replies
		buf := make([]byte, 0, 512)
		for {
			var err error
			buf, err = readFrame(c, buf)
			if err != nil {
				r.fail(err)
				return
			}
			if _, ok := msgID(buf); !ok {
				continue
			}
			if n, ok := sentCount(buf); ok {
				pb.sentSum.Add(n)
			}
			if !succeeded(buf) {
				pb.failed.Add(1)
			}
			pb.answered.Add(1)
			<-pb.tokens
		}
	}()
	r.writers.Add(1)
	go func() { // the NOTIFYs
		defer r.writers.Done()
		b := make([]byte, 0, 256+len(pad))
		var n int64
		for !r.stopped.Load() {
			if r.budget.Add(-1) < 0 {
				r.once.Do(func() { close(r.spent) })
				break
			}
			select {
			case pb.tokens <- struct{}{}:
			case <-r.done:
				return
			}
			n++
			ts := time.Since(r.clock).Nanoseconds()
			b = appendRequest(b[:0], "NOTIFY", resource, n,
				`,"data":"@ts=`+strconv.FormatInt(ts, 10)+`;`+pad+`"`)
			if err := c.WriteMessage(websocket.TextMessage, b); err != nil {
				r.fail(err)
				return
			}
			pb.sent.Add(1)
		}
		// Wait for the replies of what was sent: a full window.
		for range window {
			select {
			case pb.tokens <- struct{}{}:
			case <-r.done:
				return
			}
		}
	}()
	return pb
}

// dialAll opens n connections, conc at once. On an error the connections
// opened are returned with it, to be closed.
func dialAll(d *dialer, n, conc int) ([]*websocket.Conn, error) {
	cs := make([]*websocket.Conn, n)
	err := forEach(n, conc, func(i int) error {
		c, err := d.dial()
		cs[i] = c
		return err
	})
	return cs, err
}
