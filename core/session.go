package core

import (
	"context"
	"errors"
	"strconv"
	"sync"
)

// Close codes of a session, as WebSocket (RFC 6455, section 7.4.1) numbers
// them.
const (
	CloseNormal    = 1000 // the session is done
	CloseGoingAway = 1001 // the server is shutting down
	CloseAbnormal  = 1006 // the connection ended without a close
	CloseInternal  = 1011 // the handler failed, or its plugin process died
)

// Message is one message of a session: text (UTF-8 by convention, not
// checked) or binary data.
type Message struct {
	Binary bool
	Data   []byte
}

// Session is one bidirectional message session of a client, transport
// neutral: the host owns the client's connection (a WebSocket, a test
// pipe) and hands the handler this end of it.
type Session interface {
	// ID returns the session's id, unique in the server; the host assigns
	// it.
	ID() string
	// Recv returns the client's next message. When the client has closed
	// the session it returns a *CloseError with the client's code; when ctx
	// ends, ctx's error.
	Recv(ctx context.Context) (Message, error)
	// Send sends m to the client.
	Send(ctx context.Context, m Message) error
	// Close ends the session with a close code (see CloseNormal, ...) and
	// a short reason. Only the first Close counts.
	Close(code int, reason string) error
}

// BatchSender is implemented by sessions that can send several messages
// in one write to the network, as a WebSocket can: a server that fans
// notifications out to many clients sends each client's queued messages
// at once. See [SendAll].
type BatchSender interface {
	SendBatch(ctx context.Context, ms []Message) error
}

// SendAll sends ms on s in order: in one batch when s is a [BatchSender],
// else one by one.
func SendAll(ctx context.Context, s Session, ms []Message) error {
	if b, ok := s.(BatchSender); ok {
		return b.SendBatch(ctx, ms)
	}
	for _, m := range ms {
		if err := s.Send(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// Bufferer is implemented by sessions that can tell whether their next
// message has arrived whole already, as a WebSocket can. See [Buffered].
type Bufferer interface {
	// Buffered reports whether Recv would return the next message
	// without waiting for the network. Called by the reader, between
	// calls of Recv.
	Buffered() bool
}

// Buffered reports whether s has its next message already (see
// [Bufferer]); false when s cannot tell.
func Buffered(s Session) bool {
	b, ok := s.(Bufferer)
	return ok && b.Buffered()
}

// SessionHandler serves message sessions: a route kind next to [Handler].
// ServeSession runs for the whole session; when it returns, the host closes
// the session (CloseNormal for nil, CloseInternal for an error) unless it
// was closed already. ctx ends when the server shuts down (the session is
// then closed with CloseGoingAway) or the connection is lost. It carries
// the caller's identity ([IdentityFromContext]) and none of the request's
// other values: the session outlives the request, and what middleware put
// in the request's context is the request's.
type SessionHandler interface {
	ServeSession(ctx context.Context, req *Request, s Session) error
}

// SessionHandlerFunc adapts a function to [SessionHandler].
type SessionHandlerFunc func(ctx context.Context, req *Request, s Session) error

// ServeSession calls f(ctx, req, s).
func (f SessionHandlerFunc) ServeSession(ctx context.Context, req *Request, s Session) error {
	return f(ctx, req, s)
}

// CloseError is the end of a session as [Session].Recv and Send report it:
// the close code and reason of whichever side closed it.
type CloseError struct {
	Code   int
	Reason string
}

// Error returns "core: session closed: CODE REASON".
func (e *CloseError) Error() string {
	s := "core: session closed: " + strconv.Itoa(e.Code)
	if e.Reason != "" {
		s += " " + e.Reason
	}
	return s
}

// CloseStatus returns the close code and reason of err when it is (or
// wraps) a *CloseError; otherwise CloseAbnormal and "".
func CloseStatus(err error) (code int, reason string) {
	var ce *CloseError
	if errors.As(err, &ce) {
		return ce.Code, ce.Reason
	}
	return CloseAbnormal, ""
}

// Pipe returns the two ends of an in-memory session with id: what one end
// sends, the other receives, in order, one message at a time (Send waits
// for the peer's Recv). Closing either end makes Recv and Send on both
// return a *CloseError with the code and reason given. It is the session
// transport of tests; a real server uses a WebSocket.
func Pipe(id string) (a, b Session) {
	p := &pipe{closed: make(chan struct{})}
	ab, ba := make(chan Message), make(chan Message)
	return &pipeEnd{p: p, id: id, in: ba, out: ab}, &pipeEnd{p: p, id: id, in: ab, out: ba}
}

type pipe struct {
	once   sync.Once
	closed chan struct{}
	err    *CloseError
}

type pipeEnd struct {
	p       *pipe
	id      string
	in, out chan Message
}

func (e *pipeEnd) ID() string { return e.id }

func (e *pipeEnd) Recv(ctx context.Context) (Message, error) {
	select {
	case m := <-e.in:
		return m, nil
	case <-e.p.closed:
		return Message{}, e.p.err
	case <-ctx.Done():
		return Message{}, ctx.Err()
	}
}

func (e *pipeEnd) Send(ctx context.Context, m Message) error {
	select {
	case <-e.p.closed:
		return e.p.err
	default:
	}
	m.Data = append([]byte(nil), m.Data...)
	select {
	case e.out <- m:
		return nil
	case <-e.p.closed:
		return e.p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *pipeEnd) Close(code int, reason string) error {
	e.p.once.Do(func() {
		e.p.err = &CloseError{Code: code, Reason: reason}
		close(e.p.closed)
	})
	return nil
}

var (
	_ Session        = (*pipeEnd)(nil)
	_ SessionHandler = SessionHandlerFunc(nil)
	_ error          = (*CloseError)(nil)
)
