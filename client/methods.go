package client

import (
	"context"
	"encoding/json"
)

// Do sends msg and returns the success reply; see the package comment for
// the errors.
func (c *Client) Do(ctx context.Context, msg Message) (*Reply, error) {
	cl := &call{msg: msg, done: make(chan result, 1)}
	c.mu.Lock()
	switch {
	case c.err != nil:
		err := c.err
		c.mu.Unlock()
		return nil, err
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
