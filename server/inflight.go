package server

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reso-project/reso/core"
)

// inFlight tracks the requests being served, to name those cut at
// shutdown. An HTTP/1 connection serves one request at a time, so each
// connection has a slot of its own, found through its context: a request
// costs an uncontended lock, not a shared map. Requests of connections that
// multiplex (HTTP/2) go to a shared map.
type inFlight struct {
	mu    sync.Mutex
	conns map[net.Conn]*slot
	multi map[*http.Request]time.Time
}

// slot is the request an HTTP/1 connection is serving, if any. Its
// connection's goroutine alone writes it, without a lock: start, then r;
// r cleared at the end. A reader takes a start between two loads of the
// same r (see get), so the two belong together.
type slot struct {
	r     atomic.Pointer[http.Request]
	start atomic.Int64 // on core.Clock: one clock read, not time.Now's two

	// local is the connection's core.ConnLocal, nil when none: its Start
	// is the request's start, which middleware that measures durations
	// reads instead of the clock.
	local *core.ConnLocal
}

// get returns the request s holds, nil when none, and its start.
func (s *slot) get() (*http.Request, time.Duration) {
	for {
		r := s.r.Load()
		if r == nil {
			return nil, 0
		}
		// r is still the request after the load of start: no other
		// request's start was stored in between (a request's r is stored
		// after its start, and cleared before the next one's start).
		start := s.start.Load()
		if s.r.Load() == r {
			return r, time.Duration(start)
		}
	}
}

type slotKey struct{}

func newInFlight() *inFlight {
	return &inFlight{conns: make(map[net.Conn]*slot), multi: make(map[*http.Request]time.Time)}
}

// connContext adds the connection's slot to ctx, its context.
func (f *inFlight) connContext(ctx context.Context, c net.Conn) context.Context {
	s := &slot{local: core.ConnLocalFrom(ctx)}
	f.mu.Lock()
	f.conns[c] = s
	f.mu.Unlock()
	return context.WithValue(ctx, slotKey{}, s)
}

// connState is the server's ConnState: it forgets connections that are
// closed or no longer the server's.
func (f *inFlight) connState(c net.Conn, st http.ConnState) {
	if st == http.StateClosed || st == http.StateHijacked {
		f.mu.Lock()
		delete(f.conns, c)
		f.mu.Unlock()
	}
}

func (f *inFlight) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, _ := r.Context().Value(slotKey{}).(*slot)
		if s == nil || r.ProtoMajor != 1 {
			f.mu.Lock()
			f.multi[r] = time.Now()
			f.mu.Unlock()
			defer func() {
				f.mu.Lock()
				delete(f.multi, r)
				f.mu.Unlock()
			}()
			h.ServeHTTP(w, r)
			return
		}
		start := core.Clock()
		s.start.Store(int64(start))
		s.r.Store(r)
		if s.local != nil {
			s.local.Start = start
		}
		defer func() {
			s.r.Store(nil)
			if s.local != nil {
				s.local.Start = 0
			}
		}()
		h.ServeHTTP(w, r)
	})
}

// list returns the requests being served.
func (f *inFlight) list() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Request
	add := func(r *http.Request, running time.Duration) {
		out = append(out, Request{Method: r.Method, Target: r.URL.RequestURI(), Client: r.RemoteAddr, Running: running})
	}
	now := core.Clock()
	for _, s := range f.conns {
		if r, start := s.get(); r != nil {
			add(r, now-start)
		}
	}
	for r, start := range f.multi {
		add(r, time.Since(start))
	}
	return out
}
