package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/textproto"
	"time"

	"github.com/coder/websocket"
)

// provenAfter is the least time a connection that got no frame from the
// server must have stayed open to count as proven (see Options.BackoffMin).
const provenAfter = 5 * time.Second

// run connects, serves the connection, and reconnects after a jittered
// back-off, moving to the next URL at each attempt, until the client
// ends. An attempt ends with its connection: a refused handshake, a
// reset or a close ends it at once, ConnectTimeout bounds the rest.
func (c *Client) run() {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		if c.err != nil {
			c.mu.Unlock()
			return
		}
		url := c.urls[c.next]
		c.next = (c.next + 1) % len(c.urls)
		notify := c.setStateLocked(Connecting)
		c.mu.Unlock()
		notify()

		conn, err := c.dial(url)
		if err == nil {
			c.serve(conn, url)
		}
		c.mu.Lock()
		if c.err != nil {
			c.mu.Unlock()
			return
		}
		if errors.Is(err, ErrUnauthorized) {
			notify, _ := c.endLocked(Unauthorized, err)
			c.mu.Unlock()
			notify()
			return
		}
		if err != nil {
			c.lastErr = err
		}
		notify = c.setStateLocked(Reconnecting)
		bound := c.opt.BackoffMin << min(c.attempt, 30)
		if bound > c.opt.BackoffMax || bound <= 0 {
			bound = c.opt.BackoffMax
		}
		c.attempt++
		c.mu.Unlock()
		notify()
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

// maxRefusal bounds what is read of a refused handshake's body.
const maxRefusal = 1024

// dial makes one connection attempt. A handshake refused with 401 or 403
// is an error that wraps ErrUnauthorized.
func (c *Client) dial(url string) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.opt.ConnectTimeout)
	defer cancel()
	h, err := c.header(ctx)
	if err != nil {
		return nil, err
	}
	conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h, HTTPClient: c.opt.HTTPClient})
	if resp != nil && resp.Body != nil {
		defer resp.Body.Close()
	}
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			var body []byte
			if resp.Body != nil {
				body, _ = io.ReadAll(io.LimitReader(resp.Body, maxRefusal))
			}
			return nil, &unauthorizedError{refusal(resp.StatusCode, body)}
		}
		return nil, fmt.Errorf("client: %s: %w", url, err)
	}
	conn.SetReadLimit(c.opt.ReadLimit)
	return conn, nil
}

// header returns the header of a request: Options.Header, with what
// Options.HeaderFunc gives.
func (c *Client) header(ctx context.Context) (http.Header, error) {
	h := c.opt.Header.Clone()
	if c.opt.HeaderFunc == nil {
		return h, nil
	}
	more, err := c.opt.HeaderFunc(ctx)
	if err != nil {
		if errors.Is(err, ErrUnauthorized) {
			return nil, err
		}
		return nil, fmt.Errorf("client: HeaderFunc: %w", err)
	}
	if h == nil {
		h = make(http.Header, len(more))
	}
	for k, vs := range more {
		h[textproto.CanonicalMIMEHeaderKey(k)] = vs
	}
	return h, nil
}

// serve runs one connection: it subscribes again, sends the queue, opens
// the client to requests, and reads until the connection ends. Once the
// connection proved itself (its first frame, or provenAfter and
// BackoffMax open), the count of failed attempts starts again.
func (c *Client) serve(conn *websocket.Conn, url string) {
	start := time.Now()
	proven := false
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		conn.CloseNow()
		return
	}
	c.conn = conn
	c.url = url
	c.connSeq = 0
	var first []*call
	sent := make(map[*Subscription]bool, len(c.subs))
	for _, s := range c.subs {
		first = append(first, c.subscribeCallLocked(s))
		sent[s] = true
	}
	c.mu.Unlock()

	// The first frames go out while the replies (and replays) come in.
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.open(conn, first, sent)
	}()
	for {
		_, data, err := conn.Read(c.ctx)
		if err != nil {
			break
		}
		if !proven {
			proven = true
			c.mu.Lock()
			c.attempt = 0
			c.mu.Unlock()
		}
		if !c.handle(data) {
			break // the app fell behind: resume from what it got
		}
	}
	conn.CloseNow()
	c.mu.Lock()
	if !proven && time.Since(start) >= max(c.opt.BackoffMax, provenAfter) {
		c.attempt = 0
	}
	notify := func() {}
	if c.conn == conn {
		// What the subscriptions held, when the connection ended before
		// the client opened on it, stays held until it opens on the next
		// one: an app given a Resync then finds the client open.
		c.conn = nil
		c.failLocked(ErrConnectionLost, false)
		if c.err == nil {
			notify = c.setStateLocked(Reconnecting)
		}
	}
	c.mu.Unlock()
	notify()
}

// open writes the subscriptions' frames, then the queue (until it is
// empty), and opens the client. sent holds the subscriptions whose frames
// are in frames: one made meanwhile (Subscribe while the client is not
// open only registers it) is subscribed here before the client opens.
func (c *Client) open(conn *websocket.Conn, frames []*call, sent map[*Subscription]bool) {
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
		frames = frames[:0]
		for _, s := range c.subs {
			if !sent[s] {
				sent[s] = true
				frames = append(frames, c.subscribeCallLocked(s))
			}
		}
		if len(frames) == 0 && len(c.queue) == 0 {
			notify := c.setStateLocked(Open)
			c.releaseLocked()
			c.mu.Unlock()
			notify()
			return
		}
		for _, cl := range c.queue {
			c.registerLocked(cl)
			frames = append(frames, cl)
		}
		c.queue = nil
		c.mu.Unlock()
	}
}

// openingLocked reports whether the client has a connection that it does
// not count open yet: open is still sending the subscriptions' frames
// and the queue, and requests are refused (or queued). The events of the
// connection are held meanwhile (Subscription.offerLocked).
func (c *Client) openingLocked() bool {
	return c.conn != nil && c.state != Open
}

// releaseLocked gives the subscriptions' apps what was held while the
// client was opening its connections; called once it is open (on a
// connection that ended before it opened, the events stay held until
// the next one opens).
func (c *Client) releaseLocked() {
	for _, s := range c.subs {
		s.releaseLocked()
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
		cl.finish(nil, fmt.Errorf("%w: %w", ErrEncode, err))
		return nil
	}
	c.mu.Unlock()
	return nil
}

// handle reads one frame: a notification for a subscription, or a reply.
// It reports false when a subscription's app fell too far behind: the
// connection must end (and nothing more be read from it) so that the
// subscription resumes from the last event the app was given.
func (c *Client) handle(data []byte) bool {
	var f frame
	if json.Unmarshal(data, &f) != nil {
		return true
	}
	if f.Notify != "" {
		n := &Notification{}
		if json.Unmarshal(data, n) != nil {
			return true
		}
		n.Raw = data
		c.mu.Lock()
		c.seq = max(c.seq, n.Seq)
		c.connSeq = max(c.connSeq, n.Seq)
		ok := true
		if s := c.subs[n.Resource]; s != nil {
			ok = s.notifyLocked(n)
		}
		c.mu.Unlock()
		return ok
	}
	if f.MsgID == nil {
		return true
	}
	c.mu.Lock()
	cl := c.pending[*f.MsgID]
	delete(c.pending, *f.MsgID)
	c.mu.Unlock()
	if cl == nil {
		return true
	}
	if f.Code != "success" {
		cl.finish(nil, &Error{Reason: f.Reason})
		return true
	}
	r := &Reply{}
	if err := json.Unmarshal(data, r); err != nil {
		cl.finish(nil, fmt.Errorf("client: a reply: %w", err))
		return true
	}
	r.Raw = data
	cl.finish(r, nil)
	return true
}
