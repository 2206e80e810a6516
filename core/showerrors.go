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
func ShowErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), showErrorsKey{}, true)))
	})
}

// showErrors reports whether ctx was set up by [ShowErrors].
func showErrors(ctx context.Context) bool {
	show, _ := ctx.Value(showErrorsKey{}).(bool)
	return show
}
