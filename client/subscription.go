package client

import (
	"context"
)

// Event is what a subscription delivers: a notification, or, after a
// reconnect, whether the server recovered what the subscription missed.
type Event struct {
	Notification *Notification // nil for a Resync
	Resync       *Resync       // nil for a notification
}

// Resync tells a subscription that it is back after a reconnect, or that
// the server's history started again under it.
type Resync struct {
	// Recovered is true when every notification missed while the
	// connection was down was delivered (before this event). When it is
	// false, read the state again: Subscription.Reload. The subscription's
	// seq order then starts afresh: the next notification is delivered
	// whatever its seq (a server restarted on a new state numbers from 1
	// again).
	Recovered bool
}

// Subscription is a remembered subscription of a Client.
type Subscription struct {
	c        *Client
	resource string
	ch       chan Event
	ready    chan struct{} // closed once confirmed (and the client open) or ended

	// Guarded by c.mu.
	held      []Event // events of a connection the client is opening, given to ch once it is open
	lastSeq   uint64  // the seq of the last notification delivered to ch or held
	base      uint64  // the client's seq when the server confirmed it
	epoch     string  // the history's epoch of lastSeq and base; "" when unknown
	answered  bool    // its SUBSCRIBE on the current connection was answered
	confirmed bool
	holdReady bool // confirmed while the client was opening: ready closes once it is open
	ended     bool
	err       error
}

// Resource returns the subscribed resource.
func (s *Subscription) Resource() string { return s.resource }

// Events returns the subscription's events, in order; the channel is
// closed when the subscription ends (Unsubscribe, Close, or a refusal
// when it was made again after a reconnect: see Err; a refusal that says
// the node cannot serve it now, "unavailable", "closed" or
// "disconnected", moves the client on to its next connection instead,
// which subscribes again). The events of a
// connection come once the client is Open on it (or, when it ended
// first, on the next one), so that a request made on a Resync is sent.
func (s *Subscription) Events() <-chan Event { return s.ch }

// Err returns why the subscription ended: nil while it lasts or after
// Unsubscribe, the server's refusal (*Error), or why the client ended
// (Client.Err: ErrClosed, ErrUnauthorized).
func (s *Subscription) Err() error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return s.err
}

// Reload reads the subscribed resource again (query such as "?deep=2"),
// as a Resync without Recovered asks.
func (s *Subscription) Reload(ctx context.Context, query string) (*Reply, error) {
	return s.c.Get(ctx, s.resource+query)
}

// Unsubscribe ends the subscription: its events stop at once and its
// channel is closed.
func (s *Subscription) Unsubscribe(ctx context.Context) error {
	c := s.c
	c.mu.Lock()
	if c.subs[s.resource] == s {
		delete(c.subs, s.resource)
	}
	s.endLocked(nil)
	open := c.state == Open
	c.mu.Unlock()
	if !open {
		return nil
	}
	_, err := c.Do(ctx, Message{Method: "UNSUBSCRIBE", Resource: s.resource})
	return err
}

// since returns the seq to resume after, 0 when it cannot tell.
func (s *Subscription) sinceLocked() uint64 { return max(s.lastSeq, s.base) }

// notifyLocked delivers a notification. One whose seq is not above the
// last one delivered is dropped as a replay of what the app has, while
// the subscription's SUBSCRIBE on this connection waits for its reply.
// After that reply the server sends only what follows since, so a seq
// that went back means that the history started again under a server
// that did not say so (no epoch): the subscription gets a Resync without
// recovery and its seq order starts afresh with this notification. It
// reports false when the app is too far behind.
func (s *Subscription) notifyLocked(n *Notification) bool {
	if s.ended {
		return true
	}
	if n.Seq > 0 && n.Seq <= s.lastSeq {
		if !s.answered {
			return true
		}
		if !s.offerLocked(Event{Resync: &Resync{Recovered: false}}) {
			return false
		}
		s.lastSeq, s.base = 0, 0
	}
	return s.offerLocked(Event{Notification: n})
}

// offerLocked queues an event for the app; it reports false when the app
// is too far behind (the event was not queued). While the client is
// opening a connection (it is sending the subscriptions' frames and does
// not count itself open: requests are refused, or queued), the events that
// connection brings are held, and given to the app once the client is
// open, on that connection or, when it ended first, on a later one
// (releaseLocked): an app that makes a request on a Resync, or on
// a notification, finds the client open. Held events count against the
// buffer, so that releasing them never blocks.
func (s *Subscription) offerLocked(ev Event) bool {
	if s.ended {
		return true
	}
	if s.c.openingLocked() {
		if len(s.ch)+len(s.held) >= cap(s.ch) {
			return false
		}
		s.held = append(s.held, ev)
	} else {
		select {
		case s.ch <- ev:
		default:
			return false
		}
	}
	if n := ev.Notification; n != nil && n.Seq > 0 {
		s.lastSeq = n.Seq
	}
	return true
}

// confirmLocked records the server's first confirmation: Subscribe
// returns, at once or, while the client is opening, once it is open.
func (s *Subscription) confirmLocked() {
	if s.confirmed {
		return
	}
	s.confirmed = true
	if s.c.openingLocked() {
		s.holdReady = true
		return
	}
	close(s.ready)
}

// releaseLocked gives the app what was held while the client was opening
// connections, once it opened on one. A connection that ended before it
// opened leaves its events held for the next (they came, and a Resync
// that said not recovered must reach the app, but with the client open).
func (s *Subscription) releaseLocked() {
	if s.ended {
		return
	}
	for _, ev := range s.held {
		s.ch <- ev // there is room: offerLocked held no more than the buffer's
	}
	clear(s.held)
	s.held = s.held[:0]
	if s.holdReady {
		s.holdReady = false
		close(s.ready)
	}
}

// endLocked ends the subscription with err; held events are dropped.
func (s *Subscription) endLocked(err error) {
	if s.ended {
		return
	}
	s.ended = true
	s.err = err
	s.held = nil
	close(s.ch)
	if !s.confirmed || s.holdReady {
		s.holdReady = false
		close(s.ready)
	}
}

// Subscribe subscribes to resource (and its immediate children) and
// returns the subscription once the server confirmed it and the client
// is Open; its events come on Events. Made while disconnected, it waits
// for the connection.
func (c *Client) Subscribe(ctx context.Context, resource string) (*Subscription, error) {
	s := &Subscription{c: c, resource: resource, ch: make(chan Event, c.opt.Buffer), ready: make(chan struct{})}
	c.mu.Lock()
	if err := c.err; err != nil {
		c.mu.Unlock()
		return nil, err
	}
	if c.subs[resource] != nil {
		c.mu.Unlock()
		return nil, ErrSubscribed
	}
	c.subs[resource] = s
	var cl *call
	conn := c.conn
	if c.state == Open && conn != nil {
		cl = c.subscribeCallLocked(s)
	}
	c.mu.Unlock()
	if cl != nil {
		c.write(c.ctx, conn, cl)
	}
	select {
	case <-s.ready:
		c.mu.Lock()
		err := s.err
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return s, nil
	case <-ctx.Done():
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opt.ConnectTimeout)
		defer cancel()
		s.Unsubscribe(uctx)
		return nil, ctx.Err()
	}
}

// SubscribeFunc is Subscribe with a callback: fn gets each event, in
// order, on a goroutine of the subscription's own, until the subscription
// ends. fn may make requests of the client.
func (c *Client) SubscribeFunc(ctx context.Context, resource string, fn func(Event)) (*Subscription, error) {
	s, err := c.Subscribe(ctx, resource)
	if err != nil {
		return nil, err
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for ev := range s.ch {
			fn(ev)
		}
	}()
	return s, nil
}

// subscribeCallLocked registers the SUBSCRIBE of s, with since (and the
// epoch of that seq's history, when known) when s is coming back after a
// reconnect.
func (c *Client) subscribeCallLocked(s *Subscription) *call {
	msg := Message{Method: "SUBSCRIBE", Resource: s.resource}
	since := s.sinceLocked()
	resync := s.confirmed
	msg.Since = since
	if since > 0 {
		msg.Epoch = s.epoch
	}
	s.answered = false
	conn := c.conn
	cl := &call{msg: msg, done: make(chan result, 1)}
	cl.onReply = func(r *Reply, err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if s.ended || c.subs[s.resource] != s {
			return
		}
		if err != nil {
			if e, ok := err.(*Error); ok && transientRefusal(e.Reason) {
				// The node cannot serve it now (a fleet node without its
				// log, a server shutting down): the subscription stays,
				// and the connection moves on to the next URL after the
				// back-off, which subscribes again with since.
				if c.conn != nil && c.conn == conn {
					c.conn.CloseNow()
				}
				return
			}
			if e, ok := err.(*Error); ok {
				// Refused (forbidden, ...): the subscription ends.
				delete(c.subs, s.resource)
				s.endLocked(e)
			}
			// Lost with the connection: the next one subscribes again.
			return
		}
		if r.Epoch != "" && r.Epoch != c.epoch {
			// Another history: what the client saw of the one before
			// says nothing of this one.
			if c.epoch != "" {
				c.seq = c.connSeq
			}
			c.epoch = r.Epoch
		}
		newHistory := r.Epoch != "" && s.epoch != "" && r.Epoch != s.epoch
		s.epoch = r.Epoch
		s.answered = true
		s.confirmLocked()
		if resync {
			recovered := since > 0 && r.Recovered != nil && *r.Recovered && !newHistory
			if !recovered {
				// The app reads the state again, and the seq order starts
				// afresh (a server on a new history numbers from 1
				// again). The next since is what this history has shown:
				// without an epoch, only this connection can tell.
				s.lastSeq, s.base = 0, c.connSeq
				if r.Epoch != "" {
					s.base = c.seq
				}
			}
			if !s.offerLocked(Event{Resync: &Resync{Recovered: recovered}}) && c.conn != nil {
				// Too far behind even for this: resume once more.
				c.conn.CloseNow()
			}
		} else if s.base == 0 {
			s.base = c.seq
		}
	}
	c.registerLocked(cl)
	return cl
}

// transientRefusal tells whether a server's reason refusing a SUBSCRIBE
// says the node cannot serve it now rather than never: tried again on
// another connection, not the end of the subscription.
func transientRefusal(reason string) bool {
	return reason == "unavailable" || reason == "closed" || reason == "disconnected"
}
