package tests

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reso-project/reso/internal/poll"
)

// TestShutdownWhileWriting: at SIGTERM, three WebSockets whose clients
// write all the while, and are behind in reading the replies, each get
// close code 1001 (going away), as docs/channel.md promises every
// connection; none is reset. The server ends its close handshakes before
// it exits: a process that exits in their middle, with what the clients
// sent still unread, resets the connections, and the close frames still
// queued behind the replies never reach the clients.
func TestShutdownWhileWriting(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		// Queues deep enough for the replies the clients leave unread:
		// the clients are behind, not slow consumers.
		s := start(t, m, "-channel-queue-bytes", "67108864")
		const n = 3
		ws := make([]*busyWriter, n)
		for i := range ws {
			ws[i] = startBusyWriter(t, s.Addr, "/"+uniq("busy-"))
		}
		poll.Until(t, wait, "100 replies on every connection", func() bool {
			for _, w := range ws {
				if w.replies.Load() < 100 {
					return false
				}
			}
			return true
		})
		for _, w := range ws {
			w.hold.Store(true)
		}
		poll.Until(t, wait, "every client to stop reading with its window of GETs unanswered", func() bool {
			for _, w := range ws {
				if w.sent.Load()-w.replies.Load() < busyWindow {
					return false
				}
			}
			return true
		})
		s.cmd.Process.Signal(syscall.SIGTERM)
		// The clients read again once the server has exited, or after a
		// second. The server's close timeout (5 s) runs from when its
		// close frame, behind the replies, was sent.
		select {
		case <-s.done:
		case <-time.After(time.Second):
		}
		for _, w := range ws {
			close(w.resume)
		}
		for i, w := range ws {
			<-w.done
			var ce websocket.CloseError
			if !errors.As(w.err, &ce) || ce.Code != closeGoingAway {
				t.Errorf("connection %d of %d, after %d replies: %v; want close %d", i+1, n, w.replies.Load(), w.err, closeGoingAway)
			}
		}
		if code := exitStatus(t, s); code != 0 {
			t.Errorf("exit status %d", code)
		}
	})
}

// busyWriter is a WebSocket to /channel whose client PUTs a resource of
// busyEntity bytes, then GETs it as fast as the server answers, with up to
// busyWindow GETs unanswered, and reads every reply, until the connection
// ends or busyWrites frames were sent. While hold is set it stops reading
// until resume is closed, and writes on: binary frames (which the server
// ignores) once its GETs are all unanswered.
type busyWriter struct {
	sent    atomic.Int64
	replies atomic.Int64
	hold    atomic.Bool
	resume  chan struct{}
	done    chan struct{} // closed when reading ended
	err     error         // why reading ended, once done is closed
}

const (
	busyEntity = 32 << 10
	busyWindow = 256
	busyWrites = 20_000
)

// startBusyWriter dials addr, PUTs path and starts writing GETs of it.
func startBusyWriter(t *testing.T, addr, path string) *busyWriter {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*wait)
	// A receive buffer of a fixed, small size: the replies the client
	// leaves unread stay with the server, as they do with a client far
	// away.
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetReadBuffer(64 << 10)
		}
		return c, err
	}
	conn, _, err := websocket.Dial(ctx, "ws://"+addr+"/channel", &websocket.DialOptions{
		HTTPClient: &http.Client{Transport: &http.Transport{DialContext: dial}},
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow(); cancel() })
	conn.SetReadLimit(2 * busyEntity)
	put := `{"method":"PUT","resource":"` + path + `","entity":"` + strings.Repeat("x", busyEntity) + `","msg_id":"put"}`
	if err := conn.Write(ctx, websocket.MessageText, []byte(put)); err != nil {
		t.Fatal(err)
	}
	if _, reply, err := conn.Read(ctx); err != nil || string(reply) != `{"msg_id":"put","code":"success"}` {
		t.Fatalf("PUT %s: %s %v", path, reply, err)
	}
	w := &busyWriter{resume: make(chan struct{}), done: make(chan struct{})}
	credit := make(chan struct{}, busyWindow)
	for range busyWindow {
		credit <- struct{}{}
	}
	go func() {
		defer close(w.done)
		for {
			if w.hold.Load() {
				select {
				case <-w.resume:
				case <-ctx.Done():
				}
			}
			if _, _, err := conn.Read(ctx); err != nil {
				w.err = err
				return
			}
			w.replies.Add(1)
			select {
			case credit <- struct{}{}:
			default:
			}
		}
	}()
	get := []byte(fmt.Sprintf(`{"method":"GET","resource":%q,"msg_id":1}`, path))
	go func() {
		filler := make([]byte, 48<<10)
		for range busyWrites {
			typ, msg := websocket.MessageText, get
			select {
			case <-credit:
			case <-w.done:
				return
			default:
				if w.hold.Load() {
					typ, msg = websocket.MessageBinary, filler
					break
				}
				select {
				case <-credit:
				case <-w.done:
					return
				}
			}
			if conn.Write(ctx, typ, msg) != nil {
				return
			}
			if typ == websocket.MessageText {
				w.sent.Add(1)
			}
		}
	}()
	return w
}
