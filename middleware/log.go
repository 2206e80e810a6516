package middleware

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"

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
			start := clock()
			sw := newStatusWriter(w, r)
			returned := false
			defer func() {
				code := sw.status(r)
				logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
					slog.String("method", r.Method),
					slog.String("path", r.URL.Path),
					slog.Int("status", code),
					slog.Int64("bytes", sw.n),
					slog.Duration("duration", clock()-start),
					slog.String("query", r.URL.RawQuery),
					slog.String("remote", r.RemoteAddr),
					slog.String("route", sw.routeName()))
				if returned {
					sw.free()
				}
			}()
			sw.serve(next, r)
			returned = true
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

// statusWriters recycles the writers of requests whose handler returned
// (a handler must not keep its ResponseWriter after returning); those of a
// panic are left to the collector.
var statusWriters = sync.Pool{New: func() any { return new(statusWriter) }}

// newStatusWriter returns a statusWriter for w, sharing the route recorder
// of an outer middleware (a Log or Metrics further out) when r has one.
func newStatusWriter(w http.ResponseWriter, r *http.Request) *statusWriter {
	sw := statusWriters.Get().(*statusWriter)
	sw.ResponseWriter, sw.shared = w, core.RouteRecorderFrom(r.Context())
	return sw
}

// free gives s back for another request once its handler has returned.
func (s *statusWriter) free() {
	*s = statusWriter{}
	statusWriters.Put(s)
}

// serve serves r with next, writing to s, with s's route recorder filled
// in by the router (core.ServeRecorded), or, when an outer middleware had
// one already, that one, which s then reads.
func (s *statusWriter) serve(next http.Handler, r *http.Request) {
	if s.shared != nil {
		next.ServeHTTP(s, r)
		return
	}
	core.ServeRecorded(next, s, r, &s.route)
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
