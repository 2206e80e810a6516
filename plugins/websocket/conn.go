package websocket

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/reso-project/reso/core"
)

// conn is the TCP connection under a WebSocket, as the library sees it. It
// owns the write side: every write to the network goes through it, under
// its lock and with its own deadline (the library's deadlines are
// ignored), and while it is corked the library's frames are gathered in a
// pooled buffer that uncork sends in one write. A batch of messages thus
// costs one system call, and a control frame the library writes meanwhile
// (a pong) joins the batch instead of racing it.
type conn struct {
	net.Conn
	timeout time.Duration // for one write
	frames  frames        // what the peer sent, as far as the library hides it

	mu     sync.Mutex
	corked *[]byte // the frames gathered while corked; nil when not
}

// corkBuffers holds the buffers of batches between writes, so an idle
// connection holds none.
var corkBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledCork is the largest buffer put back in corkBuffers.
const maxPooledCork = 64 << 10

// Read reads from the peer, following the frames read.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.frames.feed(p[:n])
	return n, err
}

// Write sends p, or gathers it while corked.
func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked != nil {
		*c.corked = append(*c.corked, p...)
		return len(p), nil
	}
	return c.write(p)
}

// write sends p with the write deadline; c.mu is held.
func (c *conn) write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// SetWriteDeadline does nothing: conn sets the deadline of each write.
func (c *conn) SetWriteDeadline(time.Time) error { return nil }

// SetDeadline sets the read deadline only (see SetWriteDeadline).
func (c *conn) SetDeadline(t time.Time) error { return c.Conn.SetReadDeadline(t) }

// cork starts gathering writes.
func (c *conn) cork() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked == nil {
		b := corkBuffers.Get().(*[]byte)
		*b = (*b)[:0]
		c.corked = b
	}
}

// uncork sends what was gathered in one write and stops gathering.
func (c *conn) uncork() error {
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
	if cap(*b) <= maxPooledCork {
		corkBuffers.Put(b)
	}
	return err
}

// hijacker hands the library the connection of a response wrapped in a
// conn. It finds the connection through http.ResponseController, so
// middleware that wraps the ResponseWriter (and offers Unwrap) is no
// obstacle.
type hijacker struct {
	http.ResponseWriter
	timeout time.Duration
	conn    *conn // set by Hijack
}

// Hijack takes over the connection.
func (h *hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// Without core's wrapper, whose work ends with net/http's: an idle
	// connection would keep it and the request slot it holds.
	h.conn = &conn{Conn: core.Hijacked(nc), timeout: h.timeout, frames: newFrames()}
	return h.conn, brw, nil
}

var (
	_ net.Conn      = (*conn)(nil)
	_ http.Hijacker = (*hijacker)(nil)
)
