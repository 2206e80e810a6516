package main

import (
	"bufio"
	"encoding/binary"
	"net"
	"net/http"
	"sync"
	"time"
)

// writeTimeout bounds one write to a client, as reso's default.
const writeTimeout = 10 * time.Second

// corkConn is the TCP connection under a WebSocket, as the library sees
// it: every write goes out under its lock with a deadline of its own (the
// library's deadlines are ignored). The writer sends the frames queued
// for a client in one write (writeFrames); a control frame the library
// writes (a pong, a close) goes between two such writes, never inside one.
type corkConn struct {
	net.Conn
	mu sync.Mutex
}

// corkBuffers hold the batches between writes, so an idle connection
// holds none.
var corkBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// Write sends p.
func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
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

// writeFrames sends frames in one write.
func (c *corkConn) writeFrames(frames [][]byte) error {
	b := corkBuffers.Get().(*[]byte)
	for _, f := range frames {
		*b = append(*b, f...)
	}
	c.mu.Lock()
	_, err := c.write(*b)
	c.mu.Unlock()
	if cap(*b) <= 64<<10 {
		*b = (*b)[:0]
		corkBuffers.Put(b)
	}
	return err
}

// textFrame returns p as a final, unmasked text frame (RFC 6455 §5.2),
// the bytes a server sends.
func textFrame(p []byte) []byte {
	n := len(p)
	var b []byte
	switch {
	case n < 126:
		b = append(make([]byte, 0, 2+n), 0x81, byte(n))
	case n <= 0xffff:
		b = append(make([]byte, 0, 4+n), 0x81, 126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(make([]byte, 0, 10+n), 0x81, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, p...)
}
