package middleware

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/reso-project/reso/core"
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
// The writer passed on keeps Flush, Hijack, ReadFrom and Unwrap, so
// http.ResponseController and io.Copy's sendfile path work through it.
func Log(logger *slog.Logger) func(http.Handler) http.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			sw := &statusWriter{ResponseWriter: w, shared: core.RouteRecorderFrom(r.Context())}
			defer func() {
				code := sw.status(r)
				logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
					slog.String("method", r.Method),
					slog.String("path", r.URL.Path),
					slog.Int("status", code),
					slog.Int64("bytes", sw.n),
					slog.Duration("duration", time.Since(start)),
					slog.String("query", r.URL.RawQuery),
					slog.String("remote", r.RemoteAddr),
					slog.String("route", sw.routeName()))
			}()
			next.ServeHTTP(sw, withRoute(r, &sw.route))
		})
	}
}

type statusWriter struct {
	http.ResponseWriter
	code     int
	n        int64
	hijacked bool
	route    core.RouteRecorder
	shared   *core.RouteRecorder // an outer middleware's, when withRoute found one
}

// withRoute returns r with sw's route recorder in its context, or, when an
// outer middleware (a Log or Metrics further out) put one there already,
// r as it is: sw then reads that one, which the router fills in.
func withRoute(r *http.Request, rec *core.RouteRecorder) *http.Request {
	if core.RouteRecorderFrom(r.Context()) != nil {
		return r
	}
	return r.WithContext(core.WithRouteRecorder(r.Context(), rec))
}

// routeName returns the route that answered (see core.RouteRecorder).
func (s *statusWriter) routeName() string {
	if s.shared != nil {
		return s.shared.Route
	}
	return s.route.Route
}

// status returns the status of the answer as Log reports it.
func (s *statusWriter) status(r *http.Request) int {
	if s.code != 0 {
		return s.code
	}
	switch {
	case errors.Is(r.Context().Err(), context.Canceled):
		return StatusClientGone
	case s.hijacked:
		return http.StatusSwitchingProtocols
	}
	return http.StatusOK
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 && code >= 200 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(p)
	s.n += int64(n)
	return n, err
}

// ReadFrom keeps io.Copy's sendfile path for downloads.
func (s *statusWriter) ReadFrom(r io.Reader) (int64, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	n, err := io.Copy(s.ResponseWriter, r)
	s.n += n
	return n, err
}

// FlushError sends the header and what is buffered, for
// http.ResponseController.
func (s *statusWriter) FlushError() error {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return http.NewResponseController(s.ResponseWriter).Flush()
}

// Flush implements http.Flusher.
func (s *statusWriter) Flush() { _ = s.FlushError() }

// Hijack implements http.Hijacker.
func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err == nil {
		s.hijacked = true
	}
	return c, rw, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

var (
	_ http.Flusher  = (*statusWriter)(nil)
	_ http.Hijacker = (*statusWriter)(nil)
	_ io.ReaderFrom = (*statusWriter)(nil)
)
