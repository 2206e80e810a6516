package client

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/coder/websocket"
)

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
