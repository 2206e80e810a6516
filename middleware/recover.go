package middleware

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/reso-project/reso/core"
)

// Recover answers a request whose handler panics with 500 Internal Server
// Error, so the server keeps serving. The body is the status line alone,
// unless the request went through [core.ShowErrors], which puts the panic
// value and the stack trace in it (docs/wire.md#error-bodies): whether
// error texts reach clients is decided in one place.
//
// A panic with http.ErrAbortHandler is passed on, as net/http expects. When
// the handler had already started its answer (a status, body bytes or a
// flush went out), nothing more can be said: the panic becomes
// http.ErrAbortHandler, which aborts the connection. When the handler had
// taken the connection over (Hijack, as for an upgrade), nothing is written
// and the connection is left to whoever hijacked it.
//
// The writer passed on keeps Flush, Hijack, ReadFrom and Unwrap, so
// http.ResponseController and io.Copy's sendfile path work through it.
func Recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := trackWriters.Get().(*trackWriter)
		tw.ResponseWriter, tw.wrote, tw.hijacked = w, false, false
		defer func() {
			v := recover()
			if v == nil {
				tw.ResponseWriter = nil
				trackWriters.Put(tw)
				return
			}
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			switch {
			case tw.hijacked:
				return
			case tw.wrote:
				panic(http.ErrAbortHandler)
			}
			// The 500 answer starts clean: nothing the failed handler set.
			clear(w.Header())
			core.WriteError(w, r, core.NewPanicError(v))
		}()
		next.ServeHTTP(tw, r)
	})
}

// trackWriters recycles the wrappers of requests that ended without a
// panic (a handler must not keep its ResponseWriter after returning).
var trackWriters = sync.Pool{New: func() any { return new(trackWriter) }}

// trackWriter notes whether the header was written or the connection taken.
type trackWriter struct {
	http.ResponseWriter
	wrote    bool
	hijacked bool
}

func (t *trackWriter) WriteHeader(code int) {
	if code >= 200 {
		t.wrote = true
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackWriter) Write(p []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(p)
}

// ReadFrom keeps io.Copy's sendfile path for downloads.
func (t *trackWriter) ReadFrom(r io.Reader) (int64, error) {
	t.wrote = true
	return io.Copy(t.ResponseWriter, r)
}

// FlushError sends the header and what is buffered, for
// http.ResponseController.
func (t *trackWriter) FlushError() error {
	t.wrote = true
	return http.NewResponseController(t.ResponseWriter).Flush()
}

// Flush implements http.Flusher.
func (t *trackWriter) Flush() { _ = t.FlushError() }

// Hijack implements http.Hijacker; after it, a panic writes nothing.
func (t *trackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(t.ResponseWriter).Hijack()
	if err == nil {
		t.hijacked = true
	}
	return c, rw, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (t *trackWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

var (
	_ http.Flusher  = (*trackWriter)(nil)
	_ http.Hijacker = (*trackWriter)(nil)
	_ io.ReaderFrom = (*trackWriter)(nil)
)
