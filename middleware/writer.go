package middleware

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/reso-project/reso/core"
)

// writer is the one ResponseWriter wrapper of the middleware of a request:
// the first of [Log], [Metrics], [Recover] and [Cookies] that serves the
// request wraps the writer it was given (see wrap), and the others find
// that wrapper in the writer they are given and share it instead of
// wrapping again. It records what each of them needs: the status and the
// body bytes of the answer, whether the connection was taken over, the
// route that answered and the request's times; and it drops unchanged
// cookies when the answer starts, while [Cookies] serves the request.
//
// What the middleware pass on is out, the writer as one of the types at
// the end of this file, which have exactly the optional interfaces of the
// writer wrapped among http.Flusher, http.Hijacker and io.ReaderFrom (and
// always Unwrap, for http.ResponseController).
type writer struct {
	http.ResponseWriter // the writer wrapped

	out http.ResponseWriter // this writer with the optional interfaces of the one wrapped

	code     int   // the status once the answer started (header, body byte or flush); 0 before
	n        int64 // the body bytes written
	hijacked bool  // the connection was taken over (Hijack)

	// cookies is the request whose unchanged cookies are dropped when the
	// answer starts, set while [Cookies] serves it; nil otherwise.
	cookies *http.Request

	// route is the recorder of the route that answers, once Log or Metrics
	// set one up: own, or an outer middleware's found in the context.
	route *core.RouteRecorder
	own   core.RouteRecorder

	// start and end are the request's times on core.Clock, read once for
	// Log and Metrics both; 0 until one of them asks.
	start, end time.Duration

	// local is the connection this writer is kept on, nil for a pooled
	// one; busy is set while a request of that connection uses it.
	local *core.ConnLocal
	busy  bool

	// kind is the optional interfaces (canFlush, ...) of writers of type
	// wrapped, which a kept writer remembers for the connection's next
	// requests (see variant).
	wrapped reflect.Type
	kind    int
}

// keptKey is the key of the writer kept on a connection (core.ConnLocal).
type keptKey struct{}

// writers holds the writers of requests that come without a connection to
// keep one on (a server without core.Listen, HTTP/2).
var writers = sync.Pool{New: func() any { return new(writer) }}

// sharedBy returns the writer w is when w is one of the types of
// writer.out, nil otherwise. A switch on the types themselves costs a few
// comparisons, where an interface assertion would look up a cache.
func sharedBy(w http.ResponseWriter) *writer {
	switch w := w.(type) {
	case fullWriter: // net/http's HTTP/1 writer wrapped: the common case
		return w.writer
	case *writer:
		return w
	case flushWriter:
		return w.writer
	case hijackWriter:
		return w.writer
	case readFromWriter:
		return w.writer
	case flushHijackWriter:
		return w.writer
	case flushReadFromWriter:
		return w.writer
	case hijackReadFromWriter:
		return w.writer
	}
	return nil
}

// wrap returns the writer the middleware of r share: the one w is, when
// an outer middleware made it, or else a new one around w, which the
// caller made and must release when r's handler is done. A new one is the
// writer kept on r's HTTP/1 connection, reused by its every request, or a
// pooled one when there is no such connection (or its writer is in use, by
// a chain of these middleware inside a handler, behind a writer of another
// kind): a request costs no allocation.
func wrap(w http.ResponseWriter, r *http.Request) (s *writer, made bool) {
	if s := sharedBy(w); s != nil {
		return s, false
	}
	var l *core.ConnLocal
	if r.ProtoMajor == 1 {
		l = core.ConnLocalFrom(r.Context())
	}
	if l != nil {
		s, _ = l.Value(keptKey{}).(*writer)
		if s == nil {
			s = &writer{local: l}
			l.Keep(keptKey{}, s)
		}
		if s.busy {
			s = nil
		} else {
			s.busy = true
		}
	}
	if s == nil {
		s = writers.Get().(*writer)
	}
	if l != nil {
		s.start = l.Start
	}
	s.ResponseWriter = w
	s.out = s.variant()
	return s, true
}

// release ends the request of s, which wrap made: s goes back to its
// connection or the pool when the handler returned, and is left to the
// collector after a panic (the connection's next request gets a new one).
func (s *writer) release(returned bool) {
	l := s.local
	if !returned {
		if l != nil {
			l.Keep(keptKey{}, nil)
		}
		return
	}
	*s = writer{local: l, wrapped: s.wrapped, kind: s.kind}
	if l == nil {
		writers.Put(s)
	}
}

// started returns the start of the request: the one the server noted on
// the connection (core.ConnLocal.Start), or else the clock, read once.
func (s *writer) started() time.Duration {
	if s.start == 0 {
		s.start = core.Clock()
	}
	return s.start
}

// ended returns the end of the request, reading the clock once.
func (s *writer) ended() time.Duration {
	if s.end == 0 {
		s.end = core.Clock()
	}
	return s.end
}

// serve serves r with next, writing to s, with the route that answers
// recorded for routeName: in s's own recorder, filled in by the router
// (core.ServeRecorded), or in an outer middleware's when r's context has
// one already, or in the one another middleware sharing s set up.
func (s *writer) serve(next http.Handler, r *http.Request) {
	if s.route == nil {
		if rec := core.RouteRecorderFrom(r.Context()); rec != nil {
			s.route = rec
		} else {
			s.route = &s.own
			core.ServeRecorded(next, s.out, r, s.route)
			return
		}
	}
	next.ServeHTTP(s.out, r)
}

// routeName returns the route that answered (see core.RouteRecorder).
func (s *writer) routeName() string {
	if s.route == nil {
		return ""
	}
	return s.route.Route
}

// status returns the status of the answer as Log and Metrics report it.
func (s *writer) status(r *http.Request) int {
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

// begin notes that the answer starts with the status code: the header,
// with unchanged cookies dropped, is about to go out.
func (s *writer) begin(code int) {
	s.code = code
	if s.cookies != nil {
		dropUnchanged(s.ResponseWriter.Header(), s.cookies)
	}
}

func (s *writer) WriteHeader(code int) {
	if s.code == 0 && code >= 200 {
		s.begin(code)
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *writer) Write(p []byte) (int, error) {
	if s.code == 0 {
		s.begin(http.StatusOK)
	}
	n, err := s.ResponseWriter.Write(p)
	s.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the writer wrapped.
func (s *writer) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// readFrom is the ReadFrom of the writer wrapped, which variant found:
// io.Copy's sendfile path for downloads.
func (s *writer) readFrom(r io.Reader) (int64, error) {
	if s.code == 0 {
		s.begin(http.StatusOK)
	}
	n, err := s.ResponseWriter.(io.ReaderFrom).ReadFrom(r)
	s.n += n
	return n, err
}

// flushError sends the header and what is buffered.
func (s *writer) flushError() error {
	if s.code == 0 {
		s.begin(http.StatusOK)
	}
	return http.NewResponseController(s.ResponseWriter).Flush()
}

// hijack takes the connection over; after it, a panic writes nothing.
func (s *writer) hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err == nil {
		s.hijacked = true
	}
	return c, rw, err
}

// The optional interfaces of the writer wrapped, as bits of variant's
// switch.
const (
	canFlush = 1 << iota
	canHijack
	canReadFrom
)

// variant returns s as the type that has the optional interfaces of the
// writer it wraps. Flush and Hijack count when http.ResponseController
// finds them, through Unwrap if need be; ReadFrom only on the writer
// itself, as io.Copy finds it. Each type holds s alone, so it is a
// ResponseWriter without an allocation.
//
// The interfaces of a type of writer that has Flush and Hijack itself are
// those of the type alone: s remembers them for the next writer of that
// type, the next request's on a connection.
func (s *writer) variant() http.ResponseWriter {
	w := s.ResponseWriter
	t := reflect.TypeOf(w)
	if t != s.wrapped || t == nil {
		flush, hijack := flushes(w), hijacks(w)
		s.kind = 0
		if flush || reaches(w, flushes) {
			s.kind |= canFlush
		}
		if hijack || reaches(w, hijacks) {
			s.kind |= canHijack
		}
		if _, ok := w.(io.ReaderFrom); ok {
			s.kind |= canReadFrom
		}
		s.wrapped = nil
		if flush && hijack { // no Unwrap chain looked at
			s.wrapped = t
		}
	}
	switch s.kind {
	case canFlush:
		return flushWriter{s}
	case canHijack:
		return hijackWriter{s}
	case canReadFrom:
		return readFromWriter{s}
	case canFlush | canHijack:
		return flushHijackWriter{s}
	case canFlush | canReadFrom:
		return flushReadFromWriter{s}
	case canHijack | canReadFrom:
		return hijackReadFromWriter{s}
	case canFlush | canHijack | canReadFrom:
		return fullWriter{s} // net/http's HTTP/1 writer
	}
	return s
}

// flushes reports whether http.ResponseController can flush w itself.
func flushes(w http.ResponseWriter) bool {
	switch w.(type) {
	case http.Flusher, interface{ FlushError() error }:
		return true
	}
	return false
}

// hijacks reports whether w itself can be hijacked.
func hijacks(w http.ResponseWriter) bool {
	_, ok := w.(http.Hijacker)
	return ok
}

// reaches reports whether a writer w's Unwrap chain leads to has can.
func reaches(w http.ResponseWriter, can func(http.ResponseWriter) bool) bool {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		if w = u.Unwrap(); w == nil {
			return false
		}
		if can(w) {
			return true
		}
	}
}

// The types of writer.out: s with the methods of one combination of
// http.Flusher (and FlushError, for http.ResponseController),
// http.Hijacker and io.ReaderFrom.
type (
	flushWriter          struct{ *writer }
	hijackWriter         struct{ *writer }
	readFromWriter       struct{ *writer }
	flushHijackWriter    struct{ *writer }
	flushReadFromWriter  struct{ *writer }
	hijackReadFromWriter struct{ *writer }
	fullWriter           struct{ *writer }
)

func (w flushWriter) Flush()            { _ = w.flushError() }
func (w flushWriter) FlushError() error { return w.flushError() }

func (w hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) { return w.hijack() }

func (w readFromWriter) ReadFrom(r io.Reader) (int64, error) { return w.readFrom(r) }

func (w flushHijackWriter) Flush()                                       { _ = w.flushError() }
func (w flushHijackWriter) FlushError() error                            { return w.flushError() }
func (w flushHijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) { return w.hijack() }

func (w flushReadFromWriter) Flush()                              { _ = w.flushError() }
func (w flushReadFromWriter) FlushError() error                   { return w.flushError() }
func (w flushReadFromWriter) ReadFrom(r io.Reader) (int64, error) { return w.readFrom(r) }

func (w hijackReadFromWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) { return w.hijack() }
func (w hijackReadFromWriter) ReadFrom(r io.Reader) (int64, error)          { return w.readFrom(r) }

func (w fullWriter) Flush()                                       { _ = w.flushError() }
func (w fullWriter) FlushError() error                            { return w.flushError() }
func (w fullWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) { return w.hijack() }
func (w fullWriter) ReadFrom(r io.Reader) (int64, error)          { return w.readFrom(r) }

var (
	_ http.Flusher  = flushWriter{}
	_ http.Hijacker = hijackWriter{}
	_ io.ReaderFrom = readFromWriter{}
	_ http.Flusher  = flushHijackWriter{}
	_ http.Hijacker = flushHijackWriter{}
	_ http.Flusher  = flushReadFromWriter{}
	_ io.ReaderFrom = flushReadFromWriter{}
	_ http.Hijacker = hijackReadFromWriter{}
	_ io.ReaderFrom = hijackReadFromWriter{}
	_ http.Flusher  = fullWriter{}
	_ http.Hijacker = fullWriter{}
	_ io.ReaderFrom = fullWriter{}
)
