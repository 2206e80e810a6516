package websocket

import (
	"bufio"
	"encoding/binary"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/core"
)

// conn is the TCP connection under a WebSocket, as the library sees it. It
// owns the write side: every write to the network goes through it, under
// its lock and with its own deadline (the library's deadlines are
// ignored). The library writes the handshake and the control frames
// (ping, pong, close); messages are framed here (sendFrames), a batch of
// them in a pooled buffer sent in one write: a batch costs one system
// call and no allocation, and a control frame the library writes
// meanwhile waits for the batch instead of racing it.
type conn struct {
	net.Conn
	timeout time.Duration // for one write
	frames  frames        // what the peer sent, as far as the library hides it

	mu sync.Mutex
	// closeSent is set once a close frame was written: no message may
	// follow it (RFC 6455 §5.5.1). broken is the error of a failed write,
	// after which nothing more is written (a frame may be cut short).
	closeSent bool
	broken    error
	// deadline is the write deadline set last (see write).
	deadline time.Time
}

// frameBuffers holds the buffers of batches between writes, so an idle
// connection holds none.
var frameBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledFrames is the largest buffer put back in frameBuffers.
const maxPooledFrames = 64 << 10

// closeFrameHead is the first byte of a close frame (FIN, opcode 8), as
// the library writes it in one Write with its payload.
const closeFrameHead = 0x80 | websocket.CloseMessage

// Read reads from the peer, following the frames read.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.frames.feed(p[:n])
	return n, err
}

// Write sends p: the handshake's answer or a control frame of the
// library, each written in one Write.
func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return 0, c.broken
	}
	if len(p) > 0 && p[0] == closeFrameHead {
		c.closeSent = true
	}
	return c.write(p)
}

// write sends p within the write timeout; c.mu is held. A failed write
// breaks the connection. The deadline is moved only when less than the
// timeout is left, to an eighth of it beyond: each write has at least the
// timeout and at most an eighth more, and setting a deadline (a timer of
// the runtime) costs a busy connection one write in many rather than
// every write.
func (c *conn) write(p []byte) (int, error) {
	if now := time.Now(); c.deadline.Sub(now) < c.timeout {
		c.deadline = now.Add(c.timeout + c.timeout/8)
		if err := c.Conn.SetWriteDeadline(c.deadline); err != nil {
			c.broken = err
			return 0, err
		}
	}
	n, err := c.Conn.Write(p)
	if err != nil {
		c.broken = err
	}
	return n, err
}

// SetWriteDeadline does nothing: conn sets the deadline of each write.
func (c *conn) SetWriteDeadline(time.Time) error { return nil }

// SetDeadline sets the read deadline only (see SetWriteDeadline).
func (c *conn) SetDeadline(t time.Time) error { return c.Conn.SetReadDeadline(t) }

// sendFrames sends ms in order, each message one final unmasked frame as
// a server sends it (RFC 6455 §5.2, the bytes the library's WriteMessage
// writes without compression), all in one write. It fails with
// websocket.ErrCloseSent once a close frame was written.
func (c *conn) sendFrames(ms []core.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return c.broken
	}
	if c.closeSent {
		return websocket.ErrCloseSent
	}
	b := frameBuffers.Get().(*[]byte)
	buf := (*b)[:0]
	for _, m := range ms {
		buf = appendFrame(buf, m)
	}
	_, err := c.write(buf)
	if cap(buf) <= maxPooledFrames {
		*b = buf[:0]
		frameBuffers.Put(b)
	}
	return err
}

// appendFrame appends m as one final, unmasked data frame: text, or
// binary when m.Binary.
func appendFrame(b []byte, m core.Message) []byte {
	op := byte(websocket.TextMessage)
	if m.Binary {
		op = websocket.BinaryMessage
	}
	n := len(m.Data)
	switch {
	case n < 126:
		b = append(b, 0x80|op, byte(n))
	case n <= 0xffff:
		b = append(b, 0x80|op, 126, byte(n>>8), byte(n))
	default:
		b = append(b, 0x80|op, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, m.Data...)
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
