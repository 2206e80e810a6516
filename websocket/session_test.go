package websocket

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/internal/poll"
)

// served runs a test server with tr and hands each session to the test
// through the returned channel; the session stays open until its handler
// gets a value on done (or Recv fails, for handlers that read).
func served(t testing.TB, tr *Transport) (*httptest.Server, <-chan core.Session) {
	t.Helper()
	ch := make(chan core.Session, 16)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	srv := server(t, tr, func(s core.Session) {
		ch <- s
		<-done
		_ = s.Close(core.CloseNormal, "")
	})
	return srv, ch
}

func recvSession(t testing.TB, ch <-chan core.Session) core.Session {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(wait):
		t.Fatal("no session")
		return nil
	}
}

// TestEcho checks the frame type of each kind of message both ways.
func TestEcho(t *testing.T) {
	srv := server(t, New(Options{}), echo)
	c := mustDial(t, srv)
	tests := []struct {
		name string
		typ  int
		data []byte
	}{
		{"text", websocket.TextMessage, []byte(`{"method":"GET","resource":"/a"}`)},
		{"binary", websocket.BinaryMessage, []byte{0, 1, 2, 0xff}},
		{"empty text", websocket.TextMessage, []byte{}},
		{"large", websocket.BinaryMessage, bytes.Repeat([]byte("x"), 60<<10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.WriteMessage(tt.typ, tt.data); err != nil {
				t.Fatal(err)
			}
			typ, p, err := c.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			if typ != tt.typ || !bytes.Equal(p, tt.data) {
				t.Errorf("got type %d %d bytes, want type %d %d bytes", typ, len(p), tt.typ, len(tt.data))
			}
		})
	}
}

// TestSendBatchOrder checks that a batch arrives whole and in order, with
// each message's frame type.
func TestSendBatchOrder(t *testing.T) {
	srv, ch := served(t, New(Options{}))
	c := mustDial(t, srv)
	s := recvSession(t, ch)
	var ms []core.Message
	for i := range 100 {
		ms = append(ms, core.Message{Binary: i%3 == 0, Data: []byte(fmt.Sprintf("m%d", i))})
	}
	if err := s.(core.BatchSender).SendBatch(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		typ, p, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if string(p) != string(m.Data) || (typ == websocket.BinaryMessage) != m.Binary {
			t.Fatalf("message %d: got %d %q, want %q binary=%v", i, typ, p, m.Data, m.Binary)
		}
	}
}

// TestBuffered: messages the client wrote together (one write, so one
// read takes them all) are reported buffered until the last is taken,
// and a message not sent yet is not.
func TestBuffered(t *testing.T) {
	srv, ch := served(t, New(Options{}))
	c := mustDial(t, srv)
	s := recvSession(t, ch)
	ctx := context.Background()
	b := s.(core.Bufferer)
	if b.Buffered() {
		t.Fatal("buffered before anything was sent")
	}
	// Three masked text frames in one write, as a client pipelines them.
	var burst []byte
	for _, m := range []string{"one", "two", "three"} {
		burst = append(burst, 0x81, 0x80|byte(len(m)), 0, 0, 0, 0)
		burst = append(burst, m...)
	}
	if _, err := c.NetConn().Write(burst); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, true, false} {
		if _, err := s.Recv(ctx); err != nil {
			t.Fatal(err)
		}
		if got := b.Buffered(); got != want {
			t.Fatalf("after message %d: Buffered %v, want %v", i+1, got, want)
		}
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte("four")); err != nil {
		t.Fatal(err)
	}
	if m, err := s.Recv(ctx); err != nil || string(m.Data) != "four" || b.Buffered() {
		t.Fatalf("fourth: %q, %v, buffered %v", m.Data, err, b.Buffered())
	}
}

// TestReadLimit checks that a message over ReadLimit closes the
// connection with 1009 on both sides, and one at the limit passes.
func TestReadLimit(t *testing.T) {
	srv, ch := served(t, New(Options{ReadLimit: 1024}))
	c := mustDial(t, srv)
	s := recvSession(t, ch)
	if err := c.WriteMessage(websocket.TextMessage, bytes.Repeat([]byte("a"), 1024)); err != nil {
		t.Fatal(err)
	}
	if m, err := s.Recv(context.Background()); err != nil || len(m.Data) != 1024 {
		t.Fatalf("message at the limit: %d bytes, %v", len(m.Data), err)
	}
	if err := c.WriteMessage(websocket.TextMessage, bytes.Repeat([]byte("a"), 100<<10)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Recv(context.Background())
	if code, _ := core.CloseStatus(err); code != websocket.CloseMessageTooBig {
		t.Errorf("server Recv: %v, want close 1009", err)
	}
	_, _, err = c.ReadMessage()
	if closeCode(err) != websocket.CloseMessageTooBig {
		t.Errorf("client read: %v, want close 1009", err)
	}
}

// TestReadLimitDrained: the server reads the rest of a message past
// ReadLimit (within four times the limit) before it closes TCP, so that a
// client still writing it is not reset and reads the close frame 1009
// (the library sends that frame itself; before, the wait for the
// client's answer ended at once when the session's own close frame was
// refused as a second one).
func TestReadLimitDrained(t *testing.T) {
	srv, ch := served(t, New(Options{ReadLimit: 1 << 20}))
	c := mustDial(t, srv)
	s := recvSession(t, ch)
	go s.Recv(context.Background())
	// Larger than the socket buffers: the client is still writing when
	// the server has read past the limit.
	if err := c.WriteMessage(websocket.BinaryMessage, make([]byte, 4<<20)); err != nil {
		t.Fatalf("client write: %v", err)
	}
	if _, _, err := c.ReadMessage(); closeCode(err) != websocket.CloseMessageTooBig {
		t.Errorf("client read: %v, want close 1009", err)
	}
}

// TestPeerClose checks that the peer's close code and reason reach Recv,
// and that Send fails after it.
func TestPeerClose(t *testing.T) {
	tr := New(Options{})
	srv, ch := served(t, tr)
	c := mustDial(t, srv)
	s := recvSession(t, ch)
	msg := websocket.FormatCloseMessage(4001, "bye")
	if err := c.WriteMessage(websocket.CloseMessage, msg); err != nil {
		t.Fatal(err)
	}
	_, err := s.Recv(context.Background())
	var ce *core.CloseError
	if !errors.As(err, &ce) || ce.Code != 4001 || ce.Reason != "bye" {
		t.Fatalf("Recv: %v, want close 4001 bye", err)
	}
	if err := s.Send(context.Background(), core.Message{Data: []byte("late")}); !errors.As(err, &ce) {
		t.Errorf("Send after the peer's close: %v, want a *core.CloseError", err)
	}
	// The server answers the close and closes TCP: the client sees the
	// echo of its close frame.
	if _, _, err := c.ReadMessage(); closeCode(err) != 4001 {
		t.Errorf("client read: %v, want the close echoed", err)
	}
	poll.Until(t, wait, "connection released", func() bool { return tr.Open() == 0 })
}

// TestDroppedTCP checks that a connection lost without a close frame
// gives CloseAbnormal.
func TestDroppedTCP(t *testing.T) {
	tr := New(Options{})
	srv, ch := served(t, tr)
	c := mustDial(t, srv)
	s := recvSession(t, ch)
	c.NetConn().Close()
	_, err := s.Recv(context.Background())
	if code, _ := core.CloseStatus(err); code != core.CloseAbnormal || err == nil {
		t.Fatalf("Recv: %v, want close 1006", err)
	}
	poll.Until(t, wait, "connection released", func() bool { return tr.Open() == 0 })
}

// TestDeadPeer checks that a peer that completes the handshake and then
// answers nothing, pings included, is closed as dead.
func TestDeadPeer(t *testing.T) {
	tr := New(Options{PingInterval: 10 * time.Millisecond, PongTimeout: 50 * time.Millisecond})
	srv, ch := served(t, tr)
	nc, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fmt.Fprintf(nc, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", srv.Listener.Addr())
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v, %v", resp, err)
	}
	s := recvSession(t, ch)
	got := make(chan error, 1)
	go func() { _, err := s.Recv(context.Background()); got <- err }()
	select {
	case err := <-got:
		if code, _ := core.CloseStatus(err); code != core.CloseAbnormal || err == nil {
			t.Fatalf("Recv: %v, want close 1006", err)
		}
	case <-time.After(wait):
		t.Fatal("a dead peer was never closed")
	}
	poll.Until(t, wait, "connection released", func() bool { return tr.Open() == 0 })
}

// TestAlivePeer checks the other side of dead-peer detection: a client
// that answers pings (as every WebSocket client does) but sends nothing
// else stays connected for several PongTimeouts. (The pongs must come
// within PongTimeout, which is generous here.)
func TestAlivePeer(t *testing.T) {
	const pongTimeout = 500 * time.Millisecond
	tr := New(Options{PingInterval: 10 * time.Millisecond, PongTimeout: pongTimeout})
	srv := server(t, tr, echo)
	c := mustDial(t, srv)
	pings := make(chan struct{}, 100)
	c.SetPingHandler(func(data string) error {
		select {
		case pings <- struct{}{}:
		default:
		}
		return c.WriteControl(websocket.PongMessage, []byte(data), time.Time{})
	})
	read := make(chan []byte, 1)
	go func() {
		for {
			_, p, err := c.ReadMessage()
			if err != nil {
				close(read)
				return
			}
			read <- p
		}
	}()
	for start := time.Now(); time.Since(start) < 3*pongTimeout; {
		select {
		case <-pings:
		case <-read:
			t.Fatal("connection ended while the peer answered pings")
		case <-time.After(wait):
			t.Fatal("no ping")
		}
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	if p := <-read; string(p) != "still here" {
		t.Fatalf("echo after idling: %q", p)
	}
}

// TestClose checks that Close sends the code and reason the client sees
// (a long reason cut to fit a close frame), and that Recv and Send then
// return a *core.CloseError with that code.
func TestClose(t *testing.T) {
	tests := []struct {
		name, reason, want string
	}{
		{"short", "slow consumer", "slow consumer"},
		{"long", strings.Repeat("é", 100), strings.Repeat("é", 61)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := New(Options{})
			srv, ch := served(t, tr)
			c := mustDial(t, srv)
			s := recvSession(t, ch)
			if err := s.Close(4008, tt.reason); err != nil {
				t.Fatal(err)
			}
			_, _, err := c.ReadMessage()
			ce, ok := err.(*websocket.CloseError)
			if !ok || ce.Code != 4008 || ce.Text != tt.want {
				t.Fatalf("client read: %v, want close 4008 %q", err, tt.want)
			}
			var sce *core.CloseError
			if _, err := s.Recv(context.Background()); !errors.As(err, &sce) || sce.Code != 4008 {
				t.Errorf("Recv after Close: %v", err)
			}
			if err := s.Send(context.Background(), core.Message{}); !errors.As(err, &sce) || sce.Code != 4008 {
				t.Errorf("Send after Close: %v", err)
			}
			poll.Until(t, wait, "connection released", func() bool { return tr.Open() == 0 })
		})
	}
}

// TestCloseDuringRecv checks a Close from another goroutine while the
// handler is blocked in Recv: Recv returns the Close's code.
func TestCloseDuringRecv(t *testing.T) {
	tr := New(Options{})
	srv, ch := served(t, tr)
	c := mustDial(t, srv)
	s := recvSession(t, ch)
	got := make(chan error, 1)
	go func() { _, err := s.Recv(context.Background()); got <- err }()
	go func() {
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	}()
	_ = s.Close(core.CloseGoingAway, "server shutting down")
	select {
	case err := <-got:
		if code, _ := core.CloseStatus(err); code != core.CloseGoingAway {
			t.Fatalf("Recv: %v, want 1001", err)
		}
	case <-time.After(wait):
		t.Fatal("Recv did not return after Close")
	}
	poll.Until(t, wait, "connection released", func() bool { return tr.Open() == 0 })
}

// endsOnWait is a context that ends as soon as someone waits for it: a
// Recv that got past its first check of ctx is then surely reading.
type endsOnWait struct {
	context.Context
	once sync.Once
	done chan struct{}
}

func (c *endsOnWait) Done() <-chan struct{} {
	c.once.Do(func() { close(c.done) })
	return c.done
}

func (c *endsOnWait) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}

// TestRecvContext checks that a context ending during Recv interrupts it:
// Recv returns the context's error and, since the read cannot resume, the
// session is closed with 1001.
func TestRecvContext(t *testing.T) {
	srv, ch := served(t, New(Options{}))
	c := mustDial(t, srv)
	s := recvSession(t, ch)
	ctx := &endsOnWait{Context: context.Background(), done: make(chan struct{})}
	got := make(chan error, 1)
	go func() { _, err := s.Recv(ctx); got <- err }()
	select {
	case err := <-got:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Recv: %v, want context.Canceled", err)
		}
	case <-time.After(wait):
		t.Fatal("Recv did not return after its context ended")
	}
	if _, _, err := c.ReadMessage(); closeCode(err) != core.CloseGoingAway {
		t.Errorf("client read: %v, want close 1001", err)
	}
	var ce *core.CloseError
	if _, err := s.Recv(context.Background()); !errors.As(err, &ce) {
		t.Errorf("Recv after an interrupted Recv: %v, want a *core.CloseError", err)
	}
}

// TestConcurrentSendBatchRecv runs a reading handler and a goroutine
// sending batches at once, as the channel's door does (run with -race).
func TestConcurrentSendBatchRecv(t *testing.T) {
	const batches, per, inbound = 200, 5, 200
	tr := New(Options{PingInterval: time.Millisecond, PongTimeout: time.Minute})
	received := make(chan int, 1)
	srv := server(t, tr, func(s core.Session) {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range batches {
				var ms []core.Message
				for j := range per {
					ms = append(ms, core.Message{Data: []byte(fmt.Sprintf("%d.%d", i, j))})
				}
				if err := core.SendAll(context.Background(), s, ms); err != nil {
					return
				}
			}
		}()
		n := 0
		for {
			m, err := s.Recv(context.Background())
			if err != nil {
				break
			}
			n++
			if err := s.Send(context.Background(), core.Message{Data: append([]byte("re:"), m.Data...)}); err != nil {
				break
			}
		}
		wg.Wait()
		received <- n
	})
	c := mustDial(t, srv)
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for i := range inbound {
			if err := c.WriteMessage(websocket.TextMessage, []byte(fmt.Sprint(i))); err != nil {
				return
			}
		}
	}()
	next, replies := 0, 0
	for next < batches*per || replies < inbound {
		_, p, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("after %d batched and %d replies: %v", next, replies, err)
		}
		if bytes.HasPrefix(p, []byte("re:")) {
			replies++
			continue
		}
		if want := fmt.Sprintf("%d.%d", next/per, next%per); string(p) != want {
			t.Fatalf("batched message %q, want %q", p, want)
		}
		next++
	}
	<-wrote
	c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(core.CloseNormal, ""))
	if n := <-received; n != inbound {
		t.Errorf("server received %d messages, want %d", n, inbound)
	}
	poll.Until(t, wait, "connection released", func() bool { return tr.Open() == 0 })
}

// TestProtocolErrors checks that what the library lets through or
// answers without a code fails the session with RFC 6455's code, on both
// sides: a text message that is not UTF-8 (1007), a close frame of one
// byte and a 64-bit length with its top bit set (1002).
func TestProtocolErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		raw  []byte // written under the client library
		code int
	}{
		{"text not UTF-8", []byte{0x81, 0x82, 0, 0, 0, 0, 'a', 0xff}, websocket.CloseInvalidFramePayloadData},
		{"close of one byte", []byte{0x88, 0x81, 0, 0, 0, 0, 3}, websocket.CloseProtocolError},
		{"length top bit", []byte{0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}, websocket.CloseProtocolError},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, ch := served(t, New(Options{}))
			cl := mustDial(t, srv)
			s := recvSession(t, ch)
			if _, err := cl.UnderlyingConn().Write(c.raw); err != nil {
				t.Fatal(err)
			}
			_, err := s.Recv(context.Background())
			if code, _ := core.CloseStatus(err); code != c.code {
				t.Errorf("server Recv: %v, want close %d", err, c.code)
			}
			if _, _, err := cl.ReadMessage(); closeCode(err) != c.code {
				t.Errorf("client read: %v, want close %d", err, c.code)
			}
		})
	}
}

// TestWriteTimeoutEndsAtOnce: a write that the peer does not take within
// WriteTimeout ends the session with 1006, and the TCP connection is
// closed at once, with a reader in Recv: no close frame could be sent, so
// there is no answer to wait CloseTimeout for (before, the connection
// stayed open that long after the write failed).
func TestWriteTimeoutEndsAtOnce(t *testing.T) {
	tr := New(Options{WriteTimeout: 100 * time.Millisecond, CloseTimeout: time.Hour})
	srv, ch := served(t, tr)
	c := mustDial(t, srv) // reads nothing until the write failed
	s := recvSession(t, ch)
	read := make(chan error, 1)
	go func() { _, err := s.Recv(context.Background()); read <- err }()
	big := core.Message{Data: make([]byte, 1<<20)}
	var err error
	for i := 0; err == nil; i++ {
		if i == 1024 { // 1 GiB: far more than socket buffers hold
			t.Fatal("every write was taken by a peer that reads nothing")
		}
		err = s.Send(context.Background(), big)
	}
	if code, _ := core.CloseStatus(err); code != core.CloseAbnormal {
		t.Fatalf("Send: %v, want close 1006", err)
	}
	select {
	case err := <-read:
		if code, _ := core.CloseStatus(err); code != core.CloseAbnormal {
			t.Errorf("Recv: %v, want close 1006", err)
		}
	case <-time.After(wait):
		t.Fatal("Recv still reads a session whose write failed")
	}
	poll.Until(t, wait, "connection released", func() bool { return tr.Open() == 0 })
	// The peer reads what was written, then the end of the connection.
	_ = c.NetConn().SetReadDeadline(time.Now().Add(wait))
	if _, err := io.Copy(io.Discard, c.NetConn()); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the peer's connection stays open: %v", err)
		}
	}
}

// TestSendBatchFrameLengths checks the frames conn writes for messages of
// every length encoding (RFC 6455 §5.2: 7 bits, 16 bits, 64 bits) and
// both types, as a client reads them, and that a message is refused once a
// close frame was sent.
func TestSendBatchFrameLengths(t *testing.T) {
	srv, ch := served(t, New(Options{}))
	c := mustDial(t, srv)
	s := recvSession(t, ch)
	var ms []core.Message
	for i, n := range []int{0, 1, 125, 126, 127, 65535, 65536, 200000} {
		ms = append(ms, core.Message{Binary: i%2 == 1, Data: bytes.Repeat([]byte{'a' + byte(i)}, n)})
	}
	if err := s.(core.BatchSender).SendBatch(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		typ, p, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("message %d (%d bytes): %v", i, len(m.Data), err)
		}
		if !bytes.Equal(p, m.Data) || (typ == websocket.BinaryMessage) != m.Binary {
			t.Fatalf("message %d: got type %d, %d bytes; want %d bytes binary=%v", i, typ, len(p), len(m.Data), m.Binary)
		}
	}
	// A close frame written by the library (as on a read error) bars
	// every message after it.
	ws := s.(*session)
	if err := ws.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(core.CloseNormal, ""), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := ws.nc.sendFrames([]core.Message{{Data: []byte("late")}}); !errors.Is(err, websocket.ErrCloseSent) {
		t.Fatalf("a message after the close frame: %v, want ErrCloseSent", err)
	}
	if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, core.CloseNormal) {
		t.Fatalf("after the close frame the client read %v, want the close frame", err)
	}
}

// TestRecvContextKept checks the registration Recv keeps on a context
// from one message to the next: the messages read under one cancelable
// context come through, the context ending during a later Recv still
// interrupts it (close 1001), and the finished session lets the context
// go.
func TestRecvContextKept(t *testing.T) {
	srv, ch := served(t, New(Options{}))
	c := mustDial(t, srv)
	s := recvSession(t, ch)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 3 {
		if err := c.WriteMessage(websocket.TextMessage, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		m, err := s.Recv(ctx)
		if err != nil || string(m.Data) != fmt.Sprint(i) {
			t.Fatalf("message %d: %q, %v", i, m.Data, err)
		}
	}
	got := make(chan error, 1)
	go func() { _, err := s.Recv(ctx); got <- err }()
	poll.Until(t, wait, "Recv reading", func() bool { return s.(*session).reading.Load() })
	cancel()
	select {
	case err := <-got:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Recv: %v, want context.Canceled", err)
		}
	case <-time.After(wait):
		t.Fatal("Recv did not return after its context ended")
	}
	if _, _, err := c.ReadMessage(); closeCode(err) != core.CloseGoingAway {
		t.Errorf("client read: %v, want close 1001", err)
	}
	poll.Until(t, wait, "the context let go once the session finished", func() bool {
		ws := s.(*session)
		if !ws.rmu.TryLock() {
			return false
		}
		defer ws.rmu.Unlock()
		return ws.watchCtx == nil && ws.watchStop == nil
	})
}
