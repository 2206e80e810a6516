package core

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync/atomic"
)

// Go's net/http writes only the standard reason phrase of a status code. To
// put an exact phrase such as "400 Invalid Path" on the wire, the server's
// listener is wrapped with [Listen] and its ConnContext with [ConnContext]:
// a handler then announces the phrase of the status line it is about to write
// (see [WriteStatus]) and the connection rewrites that one status line as it
// passes. Requests on one HTTP/1.1 connection are served one after another,
// so the announced phrase always belongs to the next status line written.
// Without the wrapper the standard phrase is sent; bodies still carry the
// exact status line.

// Listen wraps ln so that the connections it accepts can rewrite reason
// phrases. Use it together with [ConnContext].
func Listen(ln net.Listener) net.Listener { return &listener{Listener: ln} }

// ConnContext is an http.Server ConnContext function that makes a connection
// accepted by a [Listen] listener reachable from request contexts.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if rc, ok := c.(*reasonConn); ok {
		return context.WithValue(ctx, connKey{}, rc)
	}
	return ctx
}

type connKey struct{}

type listener struct{ net.Listener }

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &reasonConn{Conn: c}, nil
}

type reasonConn struct {
	net.Conn
	pending atomic.Pointer[reasonLine]
}

// reasonLine is an announced status line: its code and phrase.
type reasonLine struct {
	code   int
	reason string
}

// announce sets the phrase for the next status line with the given code.
func (c *reasonConn) announce(code int, reason string) {
	c.pending.Store(&reasonLine{code: code, reason: reason})
}

var http11 = []byte("HTTP/1.1 ")

func (c *reasonConn) Write(p []byte) (int, error) {
	pd := c.pending.Load()
	if pd == nil || !bytes.HasPrefix(p, http11) {
		return c.Conn.Write(p)
	}
	// "HTTP/1.1 NNN phrase\r\n": an interim 100 Continue passes unchanged.
	rest := p[len(http11):]
	if len(rest) < 4 || rest[3] != ' ' {
		return c.Conn.Write(p)
	}
	got, err := strconv.Atoi(string(rest[:3]))
	if err != nil || got != pd.code {
		return c.Conn.Write(p)
	}
	eol := bytes.Index(rest, []byte("\r\n"))
	if eol < 0 {
		return c.Conn.Write(p)
	}
	c.pending.CompareAndSwap(pd, nil)
	line := make([]byte, 0, len(p)+len(pd.reason))
	line = append(line, http11...)
	line = append(line, rest[:4]...)
	line = append(line, pd.reason...)
	line = append(line, rest[eol:]...)
	if _, err := c.Conn.Write(line); err != nil {
		return 0, err
	}
	return len(p), nil
}

// ReadFrom keeps the connection's own ReadFrom (sendfile for downloads):
// net/http calls it only after the response header has been written.
func (c *reasonConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok && c.pending.Load() == nil {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{c}, r)
}

// CloseWrite half-closes the connection when it can, as net/http does with
// a *net.TCPConn before closing it.
func (c *reasonConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// writerOnly hides every method but Write, so io.Copy does not loop back
// into ReadFrom.
type writerOnly struct{ io.Writer }

// WriteStatus writes the header of a response with the given code and reason
// phrase. The phrase reaches the wire when the server was set up with
// [Listen] and [ConnContext]; otherwise the standard phrase is sent.
func WriteStatus(w http.ResponseWriter, r *http.Request, code int, reason string) {
	if reason != "" && reason != http.StatusText(code) && validReason(reason) {
		if c, ok := r.Context().Value(connKey{}).(*reasonConn); ok {
			c.announce(code, reason)
		}
	}
	w.WriteHeader(code)
}

// WriteError answers the request with err: a *StatusError gives its status
// line, anything else 500 Internal Server Error with the error text as the
// body. The body of a status error repeats the status line as text/plain.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	se, ok := AsStatus(err)
	body := ""
	if ok {
		body = se.Error() + "\n"
	} else {
		se = ErrInternal
		body = err.Error()
	}
	h := w.Header()
	h.Del("Content-Length")
	h.Del("Content-Encoding")
	h.Del("Last-Modified")
	h.Del("Etag")
	h.Set("Content-Type", "text/plain")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	WriteStatus(w, r, se.Code, se.Reason)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(body))
	}
}

// PanicError is the error of a recovered panic: its text is the panic value
// followed by the stack trace, the body of a 500 answer.
type PanicError struct {
	Value any
	Stack []byte
}

// Error returns the panic value and the stack trace.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n\n%s", e.Value, e.Stack) }

// NewPanicError records the stack of a panic being recovered.
func NewPanicError(v any) *PanicError { return &PanicError{Value: v, Stack: debug.Stack()} }
