package websocket

import (
	"context"
	"errors"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginhost"
)

// TestWaitForCloseHandshake: Wait does not return while a closed
// session's peer, still sending, has not answered the close frame (it
// returns ctx's error then), and returns once the peer answered and the
// connection is closed.
func TestWaitForCloseHandshake(t *testing.T) {
	tr := New(Options{CloseTimeout: wait})
	sessions := make(chan core.Session, 1)
	srv := server(t, tr, func(s core.Session) { sessions <- s })
	c := mustDial(t, srv)
	s := <-sessions
	// The client sends before it reads the close frame.
	if err := c.WriteMessage(websocket.TextMessage, []byte("still sending")); err != nil {
		t.Fatal(err)
	}
	s.Close(core.CloseGoingAway, "server shutting down")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := tr.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait before the peer's close frame: %v, want context.Canceled", err)
	}
	if _, _, err := c.ReadMessage(); closeCode(err) != core.CloseGoingAway {
		t.Fatalf("client read: %v, want close %d", err, core.CloseGoingAway)
	}
	// The client library answered the close frame.
	wctx, wcancel := context.WithTimeout(t.Context(), wait)
	defer wcancel()
	if err := tr.Wait(wctx); err != nil || tr.Open() != 0 {
		t.Fatalf("Wait after the close handshake: %v, %d open", err, tr.Open())
	}
}

// The host waits for the transport's close handshakes at shutdown.
var _ pluginhost.SessionWaiter = (*Transport)(nil)
