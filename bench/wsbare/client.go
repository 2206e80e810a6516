package main

import (
	"io"
	"sync"

	"github.com/gorilla/websocket"
)

// client is one connection: its reader (readLoop), its writer
// (writeLoop) and the queue between the hub and the writer.
type client struct {
	h     *hub
	ws    *websocket.Conn
	nc    *corkConn
	id    string
	rooms []*room // the reader's own

	mu     sync.Mutex
	q      [][]byte
	qbytes int
	closed bool
	wake   chan struct{} // closed with closed set
}

// readBuffers hold a message while it is parsed.
var readBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// readLoop reads and executes messages until the connection ends, then
// leaves the rooms and ends the writer.
func (c *client) readLoop() {
	defer func() {
		for _, r := range c.rooms {
			c.h.leave(c, r)
		}
		c.rooms = nil
		c.close()
		c.ws.Close()
	}()
	for {
		typ, r, err := c.ws.NextReader()
		if err != nil {
			return
		}
		bp := readBuffers.Get().(*[]byte)
		b, err := readAll(r, (*bp)[:0])
		if err != nil {
			return
		}
		c.h.exec(c, typ, b)
		if cap(b) <= 64<<10 {
			*bp = b[:0]
			readBuffers.Put(bp)
		}
	}
}

// readAll appends what r holds to b.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// send queues b for the writer. A client whose queue would pass the
// hub's byte bound is dropped instead (its reader then cleans up).
func (c *client) send(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if c.qbytes+len(b) > c.h.queueBytes {
		c.closed = true
		close(c.wake)
		c.nc.Conn.Close()
		return
	}
	c.q = append(c.q, b)
	c.qbytes += len(b)
	if len(c.q) == 1 {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// close ends the writer.
func (c *client) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.wake)
	}
}

// writeLoop writes what is queued, every frame queued at once in one
// write, until the client is closed.
func (c *client) writeLoop() {
	var batch [][]byte
	for range c.wake {
		c.mu.Lock()
		batch, c.q = c.q, batch[:0]
		c.qbytes = 0
		c.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		c.nc.cork()
		var err error
		for _, b := range batch {
			if err = c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
				break
			}
		}
		if uerr := c.nc.uncork(); err == nil {
			err = uerr
		}
		clear(batch)
		if err != nil {
			c.nc.Conn.Close() // the reader ends and cleans up
			c.close()
		}
	}
}
