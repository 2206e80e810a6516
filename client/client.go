package client

import (
	"context"
	"encoding/json"
	"errors"
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

// run connects, serves the connection, and reconnects after a jittered
// back-off, until Close.
func (c *Client) run() {
	defer c.wg.Done()
	attempt := 0
	for {
		conn, err := c.dial()
		if err == nil {
			attempt = 0
			c.serve(conn)
		}
		c.mu.Lock()
		if c.state == Closed {
			c.mu.Unlock()
			return
		}
		notify := c.setStateLocked(Reconnecting)
		c.mu.Unlock()
		notify()
		bound := c.opt.BackoffMin << min(attempt, 30)
		if bound > c.opt.BackoffMax || bound <= 0 {
			bound = c.opt.BackoffMax
		}
		attempt++
		wait := bound/2 + rand.N(bound/2+1)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return
		}
	}
}

func (c *Client) dial() (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.opt.ConnectTimeout)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, c.url, &websocket.DialOptions{HTTPHeader: c.opt.Header, HTTPClient: c.opt.HTTPClient})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(c.opt.ReadLimit)
	return conn, nil
}

// serve runs one connection: it subscribes again, sends the queue, opens
// the client to requests, and reads until the connection ends.
func (c *Client) serve(conn *websocket.Conn) {
	c.mu.Lock()
	if c.state == Closed {
		c.mu.Unlock()
		conn.CloseNow()
		return
	}
	c.conn = conn
	var first []*call
	for _, s := range c.subs {
		first = append(first, c.subscribeCallLocked(s))
	}
	c.mu.Unlock()

	// The first frames go out while the replies (and replays) come in.
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.open(conn, first)
	}()
	for {
		_, data, err := conn.Read(c.ctx)
		if err != nil {
			break
		}
		c.handle(conn, data)
	}
	conn.CloseNow()
	c.mu.Lock()
	notify := func() {}
	if c.conn == conn {
		c.conn = nil
		c.failLocked(ErrConnectionLost, false)
		if c.state != Closed {
			notify = c.setStateLocked(Reconnecting)
		}
	}
	c.mu.Unlock()
	notify()
}

// open writes the subscriptions' frames, then the queue (until it is
// empty), and opens the client.
func (c *Client) open(conn *websocket.Conn, frames []*call) {
	for {
		for _, cl := range frames {
			if err := c.write(c.ctx, conn, cl); err != nil {
				return
			}
		}
		c.mu.Lock()
		if c.conn != conn {
			c.mu.Unlock()
			return
		}
		if len(c.queue) == 0 {
			notify := c.setStateLocked(Open)
			c.mu.Unlock()
			notify()
			return
		}
		frames = frames[:0]
		for _, cl := range c.queue {
			c.registerLocked(cl)
			frames = append(frames, cl)
		}
		c.queue = nil
		c.mu.Unlock()
	}
}

// registerLocked gives cl its msg_id and waits for its reply.
func (c *Client) registerLocked(cl *call) {
	c.nextID++
	c.pending[c.nextID] = cl
	cl.msg.id = c.nextID
}

// write sends a registered call; a failed write ends the connection (its
// reader then fails the call with ErrConnectionLost).
func (c *Client) write(ctx context.Context, conn *websocket.Conn, cl *call) error {
	b, err := json.Marshal(cl.msg)
	if err == nil {
		err = conn.Write(ctx, websocket.MessageText, b)
		if err != nil {
			conn.CloseNow()
		}
		return err
	}
	c.mu.Lock()
	if c.pending[cl.msg.id] == cl {
		delete(c.pending, cl.msg.id)
		c.mu.Unlock()
		cl.finish(nil, fmt.Errorf("client: %w", err))
		return nil
	}
	c.mu.Unlock()
	return nil
}

// handle reads one frame: a notification for a subscription, or a reply.
func (c *Client) handle(conn *websocket.Conn, data []byte) {
	var f frame
	if json.Unmarshal(data, &f) != nil {
		return
	}
	if f.Notify != "" {
		n := &Notification{}
		if json.Unmarshal(data, n) != nil {
			return
		}
		n.Raw = data
		c.mu.Lock()
		c.seq = max(c.seq, n.Seq)
		ok := true
		if s := c.subs[n.Resource]; s != nil {
			ok = s.offerLocked(Event{Notification: n})
		}
		c.mu.Unlock()
		if !ok {
			// The app fell behind: resume from what it got.
			conn.CloseNow()
		}
		return
	}
	if f.MsgID == nil {
		return
	}
	c.mu.Lock()
	cl := c.pending[*f.MsgID]
	delete(c.pending, *f.MsgID)
	c.mu.Unlock()
	if cl == nil {
		return
	}
	if f.Code != "success" {
		cl.finish(nil, &Error{Reason: f.Reason})
		return
	}
	r := &Reply{}
	if err := json.Unmarshal(data, r); err != nil {
		cl.finish(nil, fmt.Errorf("client: a reply: %w", err))
		return
	}
	r.Raw = data
	cl.finish(r, nil)
}

// Do sends msg and returns the success reply; see the package comment for
// the errors.
func (c *Client) Do(ctx context.Context, msg Message) (*Reply, error) {
	cl := &call{msg: msg, done: make(chan result, 1)}
	c.mu.Lock()
	switch {
	case c.state == Closed:
		c.mu.Unlock()
		return nil, ErrClosed
	case c.state != Open || c.conn == nil:
		switch {
		case len(c.queue) < c.opt.Queue:
			c.queue = append(c.queue, cl)
		case c.opt.Queue > 0:
			c.mu.Unlock()
			return nil, ErrQueueFull
		default:
			c.mu.Unlock()
			return nil, ErrDisconnected
		}
		c.mu.Unlock()
	default:
		c.registerLocked(cl)
		conn := c.conn
		c.mu.Unlock()
		// The connection's context, not the request's: a request given up
		// on must not end the connection that others share (a write
		// cancelled halfway would). A failed write ends the connection,
		// which fails the request.
		c.write(c.ctx, conn, cl)
	}
	select {
	case r := <-cl.done:
		return r.reply, r.err
	case <-ctx.Done():
		c.forget(cl)
		return nil, ctx.Err()
	}
}

// forget drops a call whose caller gave up.
func (c *Client) forget(cl *call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[cl.msg.id] == cl {
		delete(c.pending, cl.msg.id)
	}
	for i, q := range c.queue {
		if q == cl {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			break
		}
	}
}

// Get reads resource (with an optional [attr] or listing query, e.g.
// "/rooms?deep=2").
func (c *Client) Get(ctx context.Context, resource string) (*Reply, error) {
	return c.Do(ctx, Message{Method: "GET", Resource: resource})
}

// Put creates or replaces resource with entity; without persistent it
// belongs to this connection and goes with it.
func (c *Client) Put(ctx context.Context, resource string, entity any, persistent bool) error {
	_, err := c.Do(ctx, Message{Method: "PUT", Resource: resource, Entity: orEmpty(entity), Persistent: persistent})
	return err
}

// Post creates a child of resource and returns its id.
func (c *Client) Post(ctx context.Context, resource string, entity any, persistent bool) (string, error) {
	r, err := c.Do(ctx, Message{Method: "POST", Resource: resource, Entity: orEmpty(entity), Persistent: persistent})
	if err != nil {
		return "", err
	}
	return r.ID, nil
}

// Delete removes resource.
func (c *Client) Delete(ctx context.Context, resource string) error {
	_, err := c.Do(ctx, Message{Method: "DELETE", Resource: resource})
	return err
}

// Notify passes data to the subscribers of resource and returns how many
// received it.
func (c *Client) Notify(ctx context.Context, resource string, data any) (int, error) {
	r, err := c.Do(ctx, Message{Method: "NOTIFY", Resource: resource, Data: data})
	if err != nil {
		return 0, err
	}
	return r.SentCount, nil
}

// orEmpty makes a nil entity {} (what the server stores for none).
func orEmpty(v any) any {
	if v == nil {
		return json.RawMessage(`{}`)
	}
	return v
}

var errSubscribed = errors.New("client: already subscribed to that resource")
