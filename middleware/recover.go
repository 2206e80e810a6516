package middleware

import (
	"errors"
	"net/http"

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
// The writer passed on has the optional interfaces of the one given, and
// shares [Log]'s wrapper.
func Recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, made := wrap(w, r)
		defer func() {
			v := recover()
			if made {
				s.release(v == nil)
			}
			if v == nil {
				return
			}
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			switch {
			case s.hijacked:
				return
			case s.code != 0:
				panic(http.ErrAbortHandler)
			}
			// The 500 answer starts clean: nothing the failed handler set.
			clear(w.Header())
			core.WriteError(w, r, core.NewPanicError(v))
		}()
		next.ServeHTTP(s.out, r)
	})
}
