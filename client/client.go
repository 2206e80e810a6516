package client

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	// URLs are more URLs of the same channel (the nodes of a fleet, say),
	// tried with the url given to New or Dial: the client starts at a
	// random one of them and moves to the next, in turn, after each failed
	// attempt and each connection that ends.
	URLs []string
	// Header is sent with the handshake, and with Send and Cancel:
	// credentials such as Authorization (Basic) or Cookie (the session
	// cookies user_id and token).
	Header http.Header
	// HeaderFunc, when set, is called before each connection attempt (and
	// each Send and Cancel), from the client's goroutines, with a context
	// bounded by ConnectTimeout: what it returns is added to Header (its
	// names replace Header's), so that each attempt carries fresh
	// credentials. An error fails the attempt, which is tried again after
	// the back-off; an error that wraps ErrUnauthorized ends the client as
	// a refusal of the server would (the state Unauthorized).
	HeaderFunc func(ctx context.Context) (http.Header, error)
	// HTTPClient makes the handshake and the HTTP requests; nil means
	// http.DefaultClient.
	HTTPClient *http.Client
	// BackoffMin is the longest first wait before a reconnect; it
	// doubles with each failed attempt up to BackoffMax. Each wait is
	// drawn at random between half the bound and the bound. A connection
	// that ends before it proved itself (no frame came from the server,
	// and it was open for less than BackoffMax and 5 s: an overloaded
	// node's close 1013 right after the upgrade, say) counts as a failed
	// attempt; one that proved itself starts the waits again from
	// BackoffMin. Zero means DefaultBackoffMin and DefaultBackoffMax.
	BackoffMin, BackoffMax time.Duration
	// ConnectTimeout bounds one connection attempt (one that the server
	// refuses or ends sooner ends then); zero means DefaultConnectTimeout.
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
	// goroutines, one call at a time and never with a state older than
	// one it was given: it must return promptly and not call Close.
	OnState func(State)
}

// State is the state of a [Client]'s connection. A client goes from
// Connecting to Open, or to Reconnecting when the attempt fails; from
// Open to Reconnecting when the connection ends; from Reconnecting to
// Connecting once the back-off has passed; and from any state to Closed
// (Close) or Unauthorized (the server refused the credentials), where it
// stays.
type State int

// States of a Client.
const (
	Connecting   State = iota // a connection attempt is under way: the first, or the next one after Reconnecting
	Open                      // connected; subscriptions are back
	Reconnecting              // no connection: the last one ended or the last attempt failed; waiting out the back-off
	Closed                    // Close was called
	Unauthorized              // the server refused the credentials of an attempt (401 or 403); Err says why
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
	case Unauthorized:
		return "unauthorized"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Client is a connection to reso's channel that reconnects and recovers by
// itself. Build it with [Dial] or [New]; it is safe for concurrent use.
type Client struct {
	urls   []string
	opt    Options
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	state   State
	gen     uint64        // state changes so far
	err     error         // why the client ended; nil while it runs
	lastErr error         // the error of the last failed attempt
	attempt int           // attempts failed since a connection proved itself: the exponent of the next back-off
	next    int           // the index in urls of the next attempt
	url     string        // the URL of the last connection
	changed chan struct{} // closed and replaced at each state change
	conn    *websocket.Conn
	nextID  int64
	pending map[int64]*call
	queue   []*call
	subs    map[string]*Subscription
	epoch   string // the history's epoch of the last SUBSCRIBE reply; "" when unknown
	seq     uint64 // the greatest seq seen in that history
	connSeq uint64 // the greatest seq seen on the current connection

	notifyMu sync.Mutex // one OnState call at a time
	notified uint64     // the gen of the last state given to OnState
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
// "ws://localhost:8000/channel"; with Options.URLs, url may be "") that
// connects in the background; opt may be nil.
func New(url string, opt *Options) *Client {
	c := &Client{changed: make(chan struct{}), pending: make(map[int64]*call), subs: make(map[string]*Subscription)}
	if opt != nil {
		c.opt = *opt
	}
	o := &c.opt
	if url != "" {
		c.urls = append(c.urls, url)
	}
	c.urls = append(c.urls, o.URLs...)
	if len(c.urls) == 0 {
		c.urls = []string{""} // every attempt fails, saying why
	}
	c.next = rand.N(len(c.urls))
	c.url = c.urls[c.next]
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
// is open. If the client ends first (the server refused the credentials:
// ErrUnauthorized), Dial returns why; if ctx ends first, the client is
// closed and Dial returns the context's error with that of the last
// attempt.
func Dial(ctx context.Context, url string, opt *Options) (*Client, error) {
	c := New(url, opt)
	if err := c.WaitOpen(ctx); err != nil {
		c.mu.Lock()
		last := c.lastErr
		c.mu.Unlock()
		c.Close()
		if ctx.Err() != nil && last != nil {
			err = fmt.Errorf("%w (the last attempt: %v)", err, last)
		}
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

// Err returns why the client ended: nil while it runs, ErrClosed after
// Close, or an error that wraps ErrUnauthorized and the server's *Error
// (its Status, 401 or 403, and Reason) in the state Unauthorized. Every
// request made after the end returns it.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// WaitOpen waits until the connection is open (at once when it is). It
// returns Err once the client has ended, or the context's error.
func (c *Client) WaitOpen(ctx context.Context) error {
	for {
		c.mu.Lock()
		s, ch, err := c.state, c.changed, c.err
		c.mu.Unlock()
		switch {
		case err != nil:
			return err
		case s == Open:
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// setStateLocked changes the state; the caller calls the returned func
// (OnState) after unlocking. The first Connecting is a change too.
func (c *Client) setStateLocked(s State) func() {
	if c.state == s && c.gen > 0 {
		return func() {}
	}
	c.state = s
	c.gen++
	close(c.changed)
	c.changed = make(chan struct{})
	if c.opt.OnState == nil {
		return func() {}
	}
	gen := c.gen
	return func() {
		c.notifyMu.Lock()
		defer c.notifyMu.Unlock()
		// A later state already told (its caller won the race to
		// notifyMu) makes this one stale.
		if gen > c.notified {
			c.notified = gen
			c.opt.OnState(s)
		}
	}
}

// Close closes the connection and ends every goroutine of the client,
// the callbacks of SubscribeFunc included (after the one running returns).
// Requests waiting for a reply fail with ErrClosed; subscriptions' event
// channels are closed. Close must not be called from a callback. After
// the state Unauthorized, Close changes the state to Closed and Err still
// says why the client ended.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.state == Closed {
		c.mu.Unlock()
		return nil
	}
	notify, conn := c.endLocked(Closed, ErrClosed)
	c.mu.Unlock()
	notify()
	c.cancel()
	if conn != nil {
		conn.Close(websocket.StatusNormalClosure, "")
	}
	c.wg.Wait()
	return nil
}

// endLocked ends the client in state s: requests waiting and
// subscriptions end with err (unless it ended already: Close after
// Unauthorized). It returns the OnState call and the connection to close.
func (c *Client) endLocked(s State, err error) (func(), *websocket.Conn) {
	notify := c.setStateLocked(s)
	if c.err != nil {
		return notify, nil
	}
	c.err = err
	conn := c.conn
	c.conn = nil
	c.failLocked(err, true)
	for _, sub := range c.subs {
		sub.endLocked(err)
	}
	clear(c.subs)
	return notify, conn
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
