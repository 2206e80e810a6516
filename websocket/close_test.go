package websocket

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/internal/poll"
)

// TestCloseTimeoutFromFrameSent: a peer behind in reading, which sent a
// message the server has not read, gets CloseTimeout to answer the close
// frame from when the frame was sent, not from Close: the frame waits
// behind a message still on its way. Before, the wait started at Close
// and ran out while the peer was not reading; the server then closed the
// connection with the peer's message unread, a reset that dropped the
// close frame (a client of a server stopping at SIGTERM saw its
// connection reset instead of 1001, once, on a loaded machine).
func TestCloseTimeoutFromFrameSent(t *testing.T) {
	t.Parallel()
	// Long enough for the client to read what the socket buffers hold
	// once the frame is sent, however loaded the machine.
	const closeTimeout = 3 * time.Second
	tr := New(Options{CloseTimeout: closeTimeout})
	srv, ch := served(t, tr)
	// A small receive buffer: most of a large message stays with the
	// server, as with a client far away.
	d := websocket.Dialer{HandshakeTimeout: wait, NetDial: func(network, addr string) (net.Conn, error) {
		c, err := net.Dial(network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetReadBuffer(64 << 10)
		}
		return c, err
	}}
	c, _, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(wait))
	s := recvSession(t, ch)
	if err := c.WriteMessage(websocket.TextMessage, []byte("unread")); err != nil {
		t.Fatal(err)
	}
	// A message far larger than the socket buffers: its write is in flight
	// once the client has read its header.
	big := core.Message{Binary: true, Data: make([]byte, 16<<20)}
	go s.Send(context.Background(), big)
	_, r, err := c.NextReader()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(core.CloseGoingAway, "server shutting down"); err != nil {
		t.Fatal(err)
	}
	// Behind in reading for longer than CloseTimeout: the close frame is
	// not sent yet.
	time.Sleep(closeTimeout + closeTimeout/2)
	if n, err := io.Copy(io.Discard, r); err != nil || n != int64(len(big.Data)) {
		t.Fatalf("client read of the message: %d bytes, %v", n, err)
	}
	if _, _, err := c.ReadMessage(); closeCode(err) != core.CloseGoingAway {
		t.Fatalf("client read after the message: %v, want close %d", err, core.CloseGoingAway)
	}
	poll.Until(t, wait, "connection released", func() bool { return tr.Open() == 0 })
}
