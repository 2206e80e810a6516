package core

import (
	"context"
	"net/http"
)

type showErrorsKey struct{}

// ShowErrors returns a handler that serves next with error texts shown:
// for the requests it passes, [WriteError] answers an error that is not a
// status error with 500 Internal Server Error and the error's text as the
// body, and a recovered panic ([PanicError]) with the panic value and the
// stack trace (docs/wire.md#error-bodies), as the example application does.
//
// Without it the body of such an answer is the status line alone,
// "500 Internal Server Error\n", like every other error body, so that
// internals (file names, stack traces, messages carrying request data) do
// not reach clients. Put ShowErrors outside whatever may write the error,
// recovery middleware included.
//
// On a connection accepted by a [Listen] listener the mark is kept on the
// connection while the request is served (HTTP/1 serves one at a time), so
// that it costs no request copy; elsewhere it goes into the request's
// context.
func ShowErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*reasonConn); ok && r.ProtoMajor == 1 {
			prev := c.showErrors.Swap(true)
			defer c.showErrors.Store(prev)
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), showErrorsKey{}, true)))
	})
}

// showErrors reports whether the request of ctx passes through
// [ShowErrors].
func showErrors(ctx context.Context) bool {
	if show, _ := ctx.Value(showErrorsKey{}).(bool); show {
		return true
	}
	c, ok := ctx.Value(connKey{}).(*reasonConn)
	return ok && c.showErrors.Load()
}
