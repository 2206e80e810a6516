package main

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"time"
)

// writeTimeout bounds one write to a client, as reso's default.
const writeTimeout = 10 * time.Second

// corkConn is the TCP connection under a WebSocket, as the library sees
// it: while corked, the library's frames are gathered in a pooled buffer
// that uncork sends in one write, with a deadline of its own (the
// library's deadlines are ignored). A control frame the library writes
// meanwhile joins the batch.
type corkConn struct {
	net.Conn
	mu     sync.Mutex
	corked *[]byte // nil when not corked
}

// corkBuffers hold the batches between writes, so an idle connection
// holds none.
var corkBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// Write sends p, or gathers it while corked.
func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked != nil {
		*c.corked = append(*c.corked, p...)
		return len(p), nil
	}
	return c.write(p)
}

// write sends p; c.mu is held.
func (c *corkConn) write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// SetWriteDeadline does nothing: corkConn sets the deadline of each write.
func (c *corkConn) SetWriteDeadline(time.Time) error { return nil }

// SetDeadline sets the read deadline only.
func (c *corkConn) SetDeadline(t time.Time) error { return c.Conn.SetReadDeadline(t) }

// cork starts gathering writes.
func (c *corkConn) cork() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked == nil {
		b := corkBuffers.Get().(*[]byte)
		c.corked = b
	}
}

// uncork sends what was gathered in one write.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.corked
	if b == nil {
		return nil
	}
	c.corked = nil
	var err error
	if len(*b) > 0 {
		_, err = c.write(*b)
	}
	if cap(*b) <= 64<<10 {
		*b = (*b)[:0]
		corkBuffers.Put(b)
	}
	return err
}

// hijacker hands the library the request's connection wrapped in a
// corkConn.
type hijacker struct {
	http.ResponseWriter
	conn *corkConn
}

// Hijack takes over the connection.
func (h *hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	h.conn = &corkConn{Conn: nc}
	return h.conn, brw, nil
}

var (
	_ net.Conn      = (*corkConn)(nil)
	_ http.Hijacker = (*hijacker)(nil)
)
