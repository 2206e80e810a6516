package middleware

import (
	"log/slog"
	"net/http"
)

// StatusClientGone is the status logged for a request that got no answer
// because its client went away (see [core.ClientGone]); nothing is sent.
// It is nginx's "client closed request".
const StatusClientGone = 499

// Log returns middleware that logs one line per request to logger, at level
// Info with the message "request" and the attributes
//
//	method    the request method
//	path      the request path
//	status    the status code answered (499 when the client went away unanswered,
//	          101 when the handler took the connection over, as for an upgrade)
//	bytes     the body bytes written
//	duration  the time to answer
//	query     the query string as sent ("" when none)
//	remote    the client's address, host:port
//	route     the route that answered: the Match of a [core.Route], such as
//	          "GET /files(?:/|$|\?)"; "" when no route did (404)
//
// The route comes from a [core.RouteRecorder] that Log puts in the request's
// context and the [core.Router] fills in. A nil logger uses slog.Default().
//
// The writer passed on has Flush, Hijack and ReadFrom when the one given
// has them, and Unwrap, so http.ResponseController and io.Copy's sendfile
// path work through it. Log, [Metrics], [Recover] and [Cookies] share one
// wrapper of the writer per request, and one reading of the clock at each
// end of it: a server that notes the request's start on its connection
// (core.ConnLocal, as package server does) spares the first.
func Log(logger *slog.Logger) func(http.Handler) http.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s, made := wrap(w, r)
			start := s.started()
			returned := false
			defer func() {
				logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
					slog.String("method", r.Method),
					slog.String("path", r.URL.Path),
					slog.Int("status", s.status(r)),
					slog.Int64("bytes", s.n),
					slog.Duration("duration", s.ended()-start),
					slog.String("query", r.URL.RawQuery),
					slog.String("remote", r.RemoteAddr),
					slog.String("route", s.routeName()))
				if made {
					s.release(returned)
				}
			}()
			s.serve(next, r)
			returned = true
		})
	}
}
