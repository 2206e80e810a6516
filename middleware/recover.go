package middleware

import (
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/reso-project/reso/core"
)

// Recover answers a request whose handler panics with 500 Internal Server
// Error and the panic value and stack trace as the body
// (docs/wire.md#error-bodies), so the server keeps serving. A panic with
// http.ErrAbortHandler is passed on, as net/http expects. When the handler
// had already started its answer, the connection is aborted instead.
func Recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := trackWriters.Get().(*trackWriter)
		tw.ResponseWriter, tw.wrote = w, false
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
			if tw.wrote {
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

// trackWriter notes whether the header was written.
type trackWriter struct {
	http.ResponseWriter
	wrote bool
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

// Unwrap lets http.ResponseController reach the underlying writer.
func (t *trackWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// ReadFrom keeps io.Copy's sendfile path for downloads.
func (t *trackWriter) ReadFrom(r io.Reader) (int64, error) {
	t.wrote = true
	return io.Copy(t.ResponseWriter, r)
}
