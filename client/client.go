package client

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Defaults of [Options].
const (
	DefaultBackoffMin     = 250 * time.Millisecond
	DefaultBackoffMax     = 10 * time.Second
	DefaultConnectTimeout = 10 * time.Second
	DefaultBuffer         = 1024
	DefaultReadLimit      = 16 << 20
)

// Options configure a [Client]. The zero value is ready.
type Options struct {
	// Header is sent with the handshake, and with Send and Cancel:
	// credentials such as Authorization (Basic) or Cookie (the session
	// cookies user_id and token).
	Header http.Header
	// HTTPClient makes the handshake and the HTTP requests; nil means
	// http.DefaultClient.
	HTTPClient *http.Client
	// BackoffMin is the longest first wait before a reconnect; it
	// doubles with each failed attempt up to BackoffMax. Each wait is
	// drawn at random between half the bound and the bound. Zero means
	// DefaultBackoffMin and DefaultBackoffMax.
	BackoffMin, BackoffMax time.Duration
	// ConnectTimeout bounds one connection attempt; zero means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Queue is how many requests may wait for a connection while there
	// is none; they are sent once, after the reconnect. Zero means none:
	// a request made while disconnected fails at once with
	// ErrDisconnected.
	Queue int
	// Buffer is how many events of one subscription wait for the app. A
	// subscription whose app falls further behind makes the client
	// reconnect and resume it with since, so nothing is lost or doubled.
	// Zero means DefaultBuffer.
	Buffer int
	// ReadLimit is the largest message read from the server; zero means
	// DefaultReadLimit.
	ReadLimit int64
	// OnState, when set, is called with each new state, from the client's
	// goroutines: it must return promptly and not call Close.
	OnState func(State)
}

// State is the state of a [Client]'s connection.
type State int

// States of a Client.
const (
	Connecting   State = iota // the first connection is being made
	Open                      // connected; subscriptions are back
	Reconnecting              // the connection ended; a new one is being made
	Closed                    // Close was called
)

func (s State) String() string {
	switch s {
	case Connecting:
		return "connecting"
	case Open:
		return "open"
	case Reconnecting:
		return "reconnecting"
	case Closed:
		return "closed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Client is a connection to reso's channel that reconnects and recovers by
// itself. Build it with [Dial] or [New]; it is safe for concurrent use.
type Client struct {
	url    string
	opt    Options
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	state   State
	changed chan struct{} // closed and replaced at each state change
	conn    *websocket.Conn
	nextID  int64
	pending map[int64]*call
	queue   []*call
	subs    map[string]*Subscription
	seq     uint64 // the greatest seq seen
}

// call is a request waiting for its reply.
type call struct {
	msg  Message
	done chan result // one result, exactly
	// onReply, when set, runs in the reader before done is sent (with
	// the reply, or with the refusal).
	onReply func(*Reply, error)
}

type result struct {
	reply *Reply
	err   error
}

// New returns a client of the channel at url (ws:// or wss://, e.g.
// "ws://localhost:8000/channel") that connects in the background; opt may
// be nil.
func New(url string, opt *Options) *Client {
	c := &Client{url: url, changed: make(chan struct{}), pending: make(map[int64]*call), subs: make(map[string]*Subscription)}
	if opt != nil {
		c.opt = *opt
	}
	o := &c.opt
	if o.BackoffMin <= 0 {
		o.BackoffMin = DefaultBackoffMin
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = DefaultBackoffMax
	}
	o.BackoffMax = max(o.BackoffMax, o.BackoffMin)
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.Buffer <= 0 {
		o.Buffer = DefaultBuffer
	}
	if o.ReadLimit <= 0 {
		o.ReadLimit = DefaultReadLimit
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(1)
	go c.run()
	return c
}

// Dial returns a client of the channel at url once its first connection
// is open. If ctx ends first, the client is closed and Dial returns the
// last connection error.
func Dial(ctx context.Context, url string, opt *Options) (*Client, error) {
	c := New(url, opt)
	if err := c.WaitOpen(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// State returns the state of the connection.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// WaitOpen waits until the connection is open (at once when it is).
func (c *Client) WaitOpen(ctx context.Context) error {
	for {
		c.mu.Lock()
		s, ch := c.state, c.changed
		c.mu.Unlock()
		switch s {
		case Open:
			return nil
		case Closed:
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// setStateLocked changes the state; the caller calls the returned func
// (OnState) after unlocking.
func (c *Client) setStateLocked(s State) func() {
	if c.state == s {
		return func() {}
	}
	c.state = s
	close(c.changed)
	c.changed = make(chan struct{})
	if c.opt.OnState == nil {
		return func() {}
	}
	return func() { c.opt.OnState(s) }
}

// Close closes the connection and ends every goroutine of the client,
// the callbacks of SubscribeFunc included (after the one running returns).
// Requests waiting for a reply fail with ErrClosed; subscriptions' event
// channels are closed. Close must not be called from a callback.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.state == Closed {
		c.mu.Unlock()
		return nil
	}
	notify := c.setStateLocked(Closed)
	conn := c.conn
	c.conn = nil
	c.failLocked(ErrClosed, true)
	for _, s := range c.subs {
		s.endLocked(ErrClosed)
	}
	clear(c.subs)
	c.mu.Unlock()
	notify()
	c.cancel()
	if conn != nil {
		conn.Close(websocket.StatusNormalClosure, "")
	}
	c.wg.Wait()
	return nil
}

// failLocked fails every request waiting for a reply with err, and the
// queue too when queue is true. Their onReply does not run: a
// subscription lost with its connection is made again by the next one.
func (c *Client) failLocked(err error, queue bool) {
	for id, cl := range c.pending {
		delete(c.pending, id)
		cl.done <- result{nil, err}
	}
	if queue {
		for _, cl := range c.queue {
			cl.done <- result{nil, err}
		}
		c.queue = nil
	}
}

// finish gives cl its result; called without c.mu.
func (cl *call) finish(r *Reply, err error) {
	if cl.onReply != nil {
		cl.onReply(r, err)
	}
	cl.done <- result{r, err}
}
