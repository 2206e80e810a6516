package main

import (
	"io"
	"sync"

	"github.com/gorilla/websocket"
)

// client is one connection: its reader (readLoop), its writer
// (writeLoop) and the queue between the hub and the writer. The writer
// runs while frames are queued: an idle connection has one goroutine, its
// reader.
type client struct {
	h     *hub
	ws    *websocket.Conn
	nc    *corkConn
	id    string
	rooms []*room  // the reader's own
	puts  []string // resources PUT, the reader's own (see hub.put)

	mu      sync.Mutex
	q       [][]byte
	spare   [][]byte // the writer's batch, kept for the next
	qbytes  int
	writing bool // a writer runs
	closed  bool
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
		c.h.dropKept(c)
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

// send queues the text message p for the writer (see sendFrame).
func (c *client) send(p []byte) {
	c.sendFrame(textFrame(p))
}

// sendFrame queues the frame b (header and payload, as textFrame makes
// it) for the writer. A client whose queue would pass the hub's byte
// bound is dropped instead (its reader then cleans up).
func (c *client) sendFrame(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if c.qbytes+len(b) > c.h.queueBytes {
		c.closed = true
		c.nc.Conn.Close()
		return
	}
	c.q = append(c.q, b)
	c.qbytes += len(b)
	if !c.writing {
		c.writing = true
		go c.writeLoop()
	}
}

// close stops the writer.
func (c *client) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
}

// writeLoop writes what is queued, every frame queued at once in one
// write, until the queue is empty or the client closed. The frames were
// made once (a notification once for all its subscribers), as a
// broadcaster does with the library's PreparedMessage, but without the
// library's lock and buffer copy per frame.
func (c *client) writeLoop() {
	for {
		c.mu.Lock()
		if len(c.q) == 0 || c.closed {
			c.writing = false
			c.mu.Unlock()
			return
		}
		batch := c.q
		c.q, c.spare = c.spare[:0], nil
		c.qbytes = 0
		c.mu.Unlock()
		err := c.nc.writeFrames(batch)
		clear(batch)
		c.mu.Lock()
		c.spare = batch[:0]
		c.mu.Unlock()
		if err != nil {
			c.nc.Conn.Close() // the reader ends and cleans up
			c.close()
		}
	}
}
