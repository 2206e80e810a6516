package websocket

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/core"
)

// maxReason is the longest close reason sent, in bytes: a close frame's
// payload is at most 125 bytes, two of them the code.
const maxReason = 123

// session is one WebSocket connection as a core.Session.
//
// One goroutine reads (Recv, or the closing goroutine once Recv is done),
// holding rmu; writers of messages take wmu; control frames may be written
// at any time (conn serializes them with the batches of messages it
// frames and writes). The first end of the session, by
// either side, wins: it sets err, and one closing goroutine then sends the
// close frame if it is due, waits (bounded) for the peer's close frame and
// closes the TCP connection.
type session struct {
	t    *Transport
	id   string
	ws   *websocket.Conn
	nc   *conn
	ping *time.Timer // nil when pings are off

	rmu sync.Mutex // held by the one reader
	wmu sync.Mutex // held by the one writer of messages

	// The reader's registration on the context of Recv, which interrupts
	// a read when the context ends: kept from one Recv to the next while
	// the context is the same pointer (see watch). Guarded by rmu; reading
	// is set while Recv reads.
	watchCtx  context.Context
	watchStop func() bool
	reading   atomic.Bool
	// taken counts the data messages Recv returned or skipped (guarded
	// by rmu): while fewer than nc.frames.ends, one more was read whole.
	taken uint64

	mu  sync.Mutex
	err *core.CloseError // how the session ended; nil while open
	// readDeadline is the read deadline alive set last.
	readDeadline time.Time
}

func newSession(t *Transport, id string, ws *websocket.Conn, nc *conn) *session {
	s := &session{t: t, id: id, ws: ws, nc: nc}
	ws.SetReadLimit(t.opt.ReadLimit)
	ws.SetPongHandler(func(string) error { s.alive(); return nil })
	ws.SetCloseHandler(s.peerClosed)
	ws.SetPingHandler(func(data string) error {
		s.alive()
		// An error here means the write side is gone, which the next
		// Send reports; the read side goes on.
		_ = ws.WriteControl(websocket.PongMessage, []byte(data), time.Time{})
		return nil
	})
	s.alive()
	if t.opt.PingInterval > 0 {
		s.ping = time.AfterFunc(math.MaxInt64, s.sendPing)
		s.ping.Reset(t.opt.PingInterval)
	}
	return s
}

// ID returns the session's id.
func (s *session) ID() string { return s.id }

// alive pushes the read deadline back: the peer just sent a frame. Once
// the session is ending the closing deadline stands. The deadline moves
// only when less than PongTimeout is left, to an eighth of it beyond: the
// peer is given at least PongTimeout and at most an eighth more, and a
// busy connection sets a deadline (a timer of the runtime) once in many
// frames rather than at every one.
func (s *session) alive() {
	timeout := s.t.opt.PongTimeout
	if timeout < 0 {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil && s.readDeadline.Sub(now) < timeout {
		s.readDeadline = now.Add(timeout + timeout/8)
		_ = s.nc.SetReadDeadline(s.readDeadline)
	}
}

// peerClosed answers the peer's close frame: with the peer's code, or
// none when it gave none, as the library would; with 1002 when its
// payload was a single byte, which the library reads as no code at all
// (RFC 6455 §5.5.1: a code is two bytes).
func (s *session) peerClosed(code int, _ string) error {
	if code == websocket.CloseNoStatusReceived && s.nc.frames.closeLen == 1 {
		code = websocket.CloseProtocolError
	}
	_ = s.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Time{})
	return nil
}

// sendPing pings the peer and schedules the next ping.
func (s *session) sendPing() {
	if s.closed() != nil {
		return
	}
	if err := s.ws.WriteControl(websocket.PingMessage, nil, time.Time{}); err != nil {
		s.end(&core.CloseError{Code: core.CloseAbnormal, Reason: "write failed"}, false, false)
		return
	}
	s.ping.Reset(s.t.opt.PingInterval)
}

// closed returns how the session ended, or nil while it is open.
func (s *session) closed() *core.CloseError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Recv returns the peer's next message. When the peer closed the session
// it returns a *core.CloseError with the peer's code; when the connection
// was lost without a close frame, or the peer stayed silent past
// PongTimeout, one with core.CloseAbnormal; after Close, one with the code
// given to Close. When ctx ends during Recv the session can no longer be
// read (the library cannot resume an interrupted frame): it is closed with
// core.CloseGoingAway and Recv returns ctx's error. Once the session is
// closed, ctx ending no longer cuts the read short: it ends with the close
// handshake, CloseTimeout after the close frame was sent at the latest
// (see finish).
func (s *session) Recv(ctx context.Context) (core.Message, error) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if err := s.closed(); err != nil {
		return core.Message{}, err
	}
	s.reading.Store(true)
	if err := ctx.Err(); err != nil {
		s.reading.Store(false)
		return core.Message{}, err
	}
	stop := s.watch(ctx)
	typ, data, err := s.readMessage()
	s.reading.Store(false)
	if err == nil {
		s.taken++
	}
	if stop != nil {
		stop()
	}
	if err == nil {
		if ce := s.closed(); ce != nil {
			// Closed by this side while the message came in.
			return core.Message{}, ce
		}
		if typ == websocket.TextMessage && !utf8.Valid(data) {
			// RFC 6455 §8.1: fail the connection.
			s.end(&core.CloseError{Code: websocket.CloseInvalidFramePayloadData, Reason: "invalid UTF-8"}, true, false)
			return core.Message{}, s.closed()
		}
		s.alive()
		return core.Message{Binary: typ == websocket.BinaryMessage, Data: data}, nil
	}
	if ctx.Err() != nil {
		s.end(&core.CloseError{Code: core.CloseGoingAway}, true, false)
		return core.Message{}, ctx.Err()
	}
	return core.Message{}, s.readFailed(err)
}

// Buffered reports whether the next message was read from the network
// whole already, so that Recv returns it without waiting: a door answers
// the messages a client sent together before it writes their replies.
// Called by the reader, between calls of Recv.
func (s *session) Buffered() bool {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	return s.nc.frames.ends > s.taken
}

// readMessage is the library's ReadMessage, but for the message's bytes:
// they are read into a pooled buffer and returned in a copy of their
// size, not in a buffer of 512 bytes or more grown by io.ReadAll: most
// messages of the channel are far smaller, and every one was garbage to
// collect.
func (s *session) readMessage() (int, []byte, error) {
	typ, r, err := s.ws.NextReader()
	if err != nil {
		return typ, nil, err
	}
	bp := readBuffers.Get().(*[]byte)
	buf := (*bp)[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		var n int
		n, err = r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			break
		}
	}
	var data []byte
	if err == io.EOF {
		data, err = bytes.Clone(buf), nil
		if data == nil {
			data = []byte{}
		}
	}
	if cap(buf) <= maxPooledRead {
		*bp = buf[:0]
		readBuffers.Put(bp)
	}
	return typ, data, err
}

// readBuffers hold messages being read, between reads: an idle
// connection holds none.
var readBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledRead is the largest buffer put back in readBuffers.
const maxPooledRead = 64 << 10

// watch makes sure that ctx ending interrupts the read of Recv (the read
// deadline is set to now while reading is set); rmu is held. A context
// that is a pointer (as the standard library's cancelable ones are) keeps
// its registration from one Recv to the next, until another context comes
// or the session finishes: a registration per message cost an allocation
// and the context's lock. For any other context watch registers for this
// read only and returns the function that ends the registration. A
// context that never ends (Done is nil) gets no watch at all.
func (s *session) watch(ctx context.Context) (stop func() bool) {
	if ctx.Done() == nil {
		// A context that never ends needs no watch: what AfterFunc
		// registers would live as long as the session.
		return nil
	}
	if reflect.TypeOf(ctx).Kind() != reflect.Pointer {
		return context.AfterFunc(ctx, s.interrupt)
	}
	if ctx != s.watchCtx {
		s.unwatch()
		s.watchCtx, s.watchStop = ctx, context.AfterFunc(ctx, s.interrupt)
	}
	return nil
}

// unwatch ends the registration watch kept; rmu is held.
func (s *session) unwatch() {
	if s.watchStop != nil {
		s.watchStop()
	}
	s.watchCtx, s.watchStop = nil, nil
}

// interrupt ends the read under way, if any, when the context of Recv
// ended: Recv sets reading before it looks at the context, so a Recv
// that starts after the context ended sees it without a read. A session
// that is closing keeps its closing deadline: the read goes on until the
// peer's close frame, and a read cut short would end the drain after it
// too (the library keeps a read error), closing the connection at once
// with what the peer sent unread: a reset that drops the close frame on
// its way (the host cancels a session's context right after Close).
func (s *session) interrupt() {
	if !s.reading.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		_ = s.nc.SetReadDeadline(time.Now())
	}
}

// readFailed ends the session after the read error err and returns how it
// ended.
func (s *session) readFailed(err error) *core.CloseError {
	var ce *websocket.CloseError
	var ne net.Error
	switch {
	case errors.As(err, &ce) && ce.Code == websocket.CloseNoStatusReceived && s.nc.frames.closeLen == 1:
		// peerClosed answered 1002 already.
		s.end(&core.CloseError{Code: websocket.CloseProtocolError, Reason: "protocol error"}, false, false)
	case errors.As(err, &ce):
		// peerClosed answered the peer's close frame already.
		s.end(&core.CloseError{Code: ce.Code, Reason: ce.Text}, false, false)
	case errors.Is(err, websocket.ErrReadLimit) && s.nc.frames.badLen:
		// A 64-bit length with its top bit set (RFC 6455 §5.2), which the
		// library fails as too big without a close frame: close with
		// 1002 at once; what follows is read away before closing.
		s.end(&core.CloseError{Code: websocket.CloseProtocolError, Reason: "protocol error"}, true, true)
	case errors.Is(err, websocket.ErrReadLimit):
		// The library sent 1009, unless the length overflowed its count
		// (the frame is sent again, the library refuses a second); the
		// rest of the message is still on its way, so the closing
		// goroutine reads it away before closing.
		s.end(&core.CloseError{Code: websocket.CloseMessageTooBig, Reason: "message too big"}, true, true)
	case errors.As(err, &ne) && ne.Timeout():
		s.end(&core.CloseError{Code: core.CloseAbnormal, Reason: "peer not responding"}, false, false)
	default:
		s.end(&core.CloseError{Code: core.CloseAbnormal}, false, false)
	}
	return s.closed()
}

// Send sends m to the peer: a text frame, or a binary frame when
// m.Binary. It returns a *core.CloseError once the session has ended. A
// write that does not complete within WriteTimeout (or ctx's deadline
// when it is sooner) ends the session with core.CloseAbnormal and closes
// the connection at once.
func (s *session) Send(ctx context.Context, m core.Message) error {
	return s.SendBatch(ctx, []core.Message{m})
}

// SendBatch sends ms in order in one write to the network (see Send),
// framed by conn rather than the library: no allocation per message.
func (s *session) SendBatch(ctx context.Context, ms []core.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.closed(); err != nil {
		return err
	}
	err := s.nc.sendFrames(ms)
	if err != nil {
		if ce := s.closed(); ce != nil {
			return ce
		}
		s.end(&core.CloseError{Code: core.CloseAbnormal, Reason: "write failed"}, false, false)
		return s.closed()
	}
	return nil
}

// Close ends the session: it sends a close frame with code and reason
// (cut to 123 bytes), then closes the TCP connection when the peer's
// close frame arrives, CloseTimeout after the frame was sent at the
// latest. It returns at once;
// the handshake finishes in the background. Later calls do nothing.
// After Close, Recv and Send return a *core.CloseError with code.
func (s *session) Close(code int, reason string) error {
	s.end(&core.CloseError{Code: code, Reason: reason}, true, false)
	return nil
}

// end records how the session ended, the first time only, and starts the
// closing goroutine: it sends a close frame with ce when frame is set,
// reads until the peer's close (raw: until the peer closes TCP) or
// CloseTimeout, and closes the connection. Without frame it closes the
// connection at once.
func (s *session) end(ce *core.CloseError, frame, raw bool) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return
	}
	s.err = ce
	// The closing deadline: an ongoing Recv or the drain in finish ends
	// by then at the latest. With a close frame of this side, the frame
	// is sent first, behind a write in flight: finish moves the deadline
	// to CloseTimeout after it was sent, within closeWriteBound. Without
	// one there is no answer to wait for (the peer closed already, is
	// dead, or a write failed, which may have left a frame cut short): at
	// once.
	deadline := time.Now()
	if frame {
		deadline = deadline.Add(s.closeWriteBound() + s.t.opt.CloseTimeout)
	}
	_ = s.nc.SetReadDeadline(deadline)
	s.mu.Unlock()
	if s.ping != nil {
		s.ping.Stop()
	}
	go s.finish(ce, frame, raw)
}

// closeWriteBound is how long sending the close frame may take: a write
// in flight ends within WriteTimeout and an eighth, and the frame's own
// write gets as long.
func (s *session) closeWriteBound() time.Duration {
	w := s.t.opt.WriteTimeout
	return 2 * (w + w/8)
}

// finish completes the close that end started. The wait for the peer's
// close frame starts once this side's was sent: a peer behind in reading
// gets CloseTimeout to answer from then, not from Close, for the frame
// waits behind the messages still in the socket.
func (s *session) finish(ce *core.CloseError, frame, raw bool) {
	defer s.t.release()
	if frame {
		err := s.ws.WriteControl(websocket.CloseMessage, closePayload(ce.Code, ce.Reason), time.Time{})
		deadline := time.Now()
		// ErrCloseSent: the library sent one already (it answers a
		// message past the read limit with 1009 itself).
		if err == nil || errors.Is(err, websocket.ErrCloseSent) {
			deadline = deadline.Add(s.t.opt.CloseTimeout)
		}
		_ = s.nc.SetReadDeadline(deadline)
	}
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.unwatch() // no Recv reads any more: let the context go
	if raw {
		_, _ = io.Copy(io.Discard, io.LimitReader(s.nc.Conn, int64(s.t.opt.ReadLimit)*4))
	} else {
		for {
			if _, _, err := s.ws.NextReader(); err != nil {
				break
			}
		}
	}
	_ = s.nc.Conn.Close()
}

// closePayload returns the payload of a close frame: code and reason, the
// reason cut to maxReason bytes at a rune boundary. A code that may not
// be sent (1005, 1006, 1015, out of range) is sent as 1000 or 1011.
func closePayload(code int, reason string) []byte {
	switch {
	case code == core.CloseAbnormal || code == websocket.CloseNoStatusReceived || code == websocket.CloseTLSHandshake:
		code = core.CloseNormal
	case code < 1000 || code >= 5000:
		code = core.CloseInternal
	}
	if len(reason) > maxReason {
		reason = reason[:maxReason]
		for !utf8.ValidString(reason) {
			reason = reason[:len(reason)-1]
		}
	}
	return websocket.FormatCloseMessage(code, reason)
}
