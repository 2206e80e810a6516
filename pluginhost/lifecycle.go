package pluginhost

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

// SessionTransport is the host's door for session routes: it owns the
// client's connection (a WebSocket in a real server, an in-memory pipe in
// tests) and turns a request into a [core.Session] with the id the host
// assigned. When Accept fails it has written nothing: the host answers the
// request with the error (a core.StatusError gives its status line).
type SessionTransport interface {
	Accept(w http.ResponseWriter, r *http.Request, id string) (core.Session, error)
}

// SessionWaiter is a [SessionTransport] that finishes closing a session
// in the background (a WebSocket's close handshake, as
// websocket.Transport does): Wait returns once every session it accepted
// is closed, or ctx's error when ctx ends first. [Host.Close] waits for
// it.
type SessionWaiter interface {
	Wait(ctx context.Context) error
}

// ErrNoSessions answers a session route when the host has no
// [SessionTransport].
var ErrNoSessions = core.Status(http.StatusNotImplemented, "Sessions Not Supported")

// live is the state of a Host that outlives one request: the open
// streams' stop signal, the open sessions, the end hooks, and the plugins
// to close at shutdown.
type live struct {
	mu       sync.Mutex
	stop     chan struct{} // closed by GoAway
	stopped  bool
	sessions map[string]*hostSession
	hooks    []func(id string)
	entries  []Entry
	closed   bool
	draining bool           // Close waits for running: no handler starts
	running  sync.WaitGroup // session handlers
}

func (l *live) setEntries(entries []Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, entries...)
}

// stopping returns the channel GoAway closes.
func (l *live) stopping() <-chan struct{} { return l.stopChan() }

func (l *live) stopChan() chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop == nil {
		l.stop = make(chan struct{})
	}
	return l.stop
}

// OnSessionEnd registers f to be called with a session's id when the
// session ends, exactly once per session, however it ends: the client
// closed it, its handler returned, its plugin process died (the session is
// then closed with core.CloseInternal), or the server shut down
// (core.CloseGoingAway). f runs after the session's handler has returned;
// it must not block for long. Hooks run in registration order.
func (m *Host) OnSessionEnd(f func(id string)) {
	m.live.mu.Lock()
	defer m.live.mu.Unlock()
	m.live.hooks = append(m.live.hooks, f)
}

// GoAway ends every open stream (its source's context is cancelled) and
// closes every open session with core.CloseGoingAway; streams and
// sessions that start later end at once. The server calls it when it
// begins to shut down (http.Server.RegisterOnShutdown), so that they end
// within the grace period.
func (m *Host) GoAway() {
	l := &m.live
	stop := l.stopChan()
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.stopped = true
	close(stop)
	open := make([]*hostSession, 0, len(l.sessions))
	for _, s := range l.sessions {
		open = append(open, s)
	}
	l.mu.Unlock()
	for _, s := range open {
		s.goAway()
	}
}

// Close ends open streams and sessions (see GoAway) and waits for their
// handlers and, when the transport is a [SessionWaiter], for the end of
// their close handshakes; then it lets every plugin clean up: in reverse
// plugin order, a plugin that implements [Closer] is closed, one that
// implements [Shutdowner] shut down. ctx bounds the time they have. Close
// is called once, at shutdown; later calls do nothing. The errors of all
// plugins are joined.
func (m *Host) Close(ctx context.Context) error {
	m.GoAway()
	l := &m.live
	// Sessions have been told to go away: give their handlers and end
	// hooks the time ctx allows to finish.
	// No handler starts once Close waits (WaitGroup.Add from zero must
	// not race with Wait): a session accepted from now on ends at once.
	l.mu.Lock()
	l.draining = true
	l.mu.Unlock()
	done := make(chan struct{})
	go func() { l.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	// The handlers' sessions are closed, but a close handshake may still
	// be under way: a server that exits in its middle drops the close
	// frame and resets a connection whose client is still sending.
	if w, ok := m.Sessions.(SessionWaiter); ok {
		_ = w.Wait(ctx)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	entries := slices.Clone(l.entries)
	l.mu.Unlock()
	var errs []error
	for _, e := range slices.Backward(entries) {
		var err error
		switch p := e.Plugin.(type) {
		case plugins.Closer:
			err = p.Close(ctx)
		case plugins.Shutdowner:
			err = p.Shutdown(ctx)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("plugins: %s: close: %w", e.Name, err))
		}
	}
	return errors.Join(errs...)
}

// sessionHandler adapts a session handler to net/http: the transport turns
// the request into a session, the handler serves it, and the end hooks run
// once when it is over.
func (m *Host) sessionHandler(h core.SessionHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.Sessions == nil {
			core.WriteError(w, r, ErrNoSessions)
			return
		}
		// A clone: the session outlives the request (see below).
		req := core.Prepare(r).Clone()
		req.Body = nil
		id := newSessionID()
		ts, err := m.Sessions.Accept(w, r, id)
		if err != nil {
			core.WriteError(w, r, err)
			return
		}
		// The session outlives the request: its handler runs on a
		// goroutine of its own and this one returns, so that net/http
		// lets go of the connection's buffers and of the deep stack of
		// the request's middleware (bench/channel-idle.sh: an idle
		// WebSocket costs about 12 KB less). Close waits for it.
		ctx := sessionContext(req.Identity)
		m.live.mu.Lock()
		if m.live.draining {
			m.live.mu.Unlock()
			_ = ts.Close(core.CloseGoingAway, "")
			return
		}
		m.live.running.Add(1)
		m.live.mu.Unlock()
		go func() {
			defer m.live.running.Done()
			m.serveSession(ctx, h, req, ts)
		}()
	})
}

// sessionContext is the context a session starts from: the caller's
// identity and nothing else of the request's context. What middleware put
// there is the request's (a metrics or log wrapper of the ResponseWriter,
// which holds net/http's 4 KiB buffers of the connection), and the session
// would keep it all reachable for as long as it lasts (bench/channel-idle.sh
// with -admin-addr: 8 KiB per idle WebSocket).
func sessionContext(id *core.Identity) context.Context {
	ctx := context.Background()
	if id != nil {
		ctx = core.NewIdentityContext(ctx, id)
	}
	return ctx
}

// serveSession runs h on session ts and ends it: the close code follows
// how it ended, and the end hooks run once.
func (m *Host) serveSession(ctx context.Context, h core.SessionHandler, req *core.Request, ts core.Session) {
	ctx, cancel := context.WithCancel(ctx)
	s := &hostSession{Session: ts, cancel: cancel, identity: req.Identity}
	l := &m.live
	l.mu.Lock()
	if l.sessions == nil {
		l.sessions = make(map[string]*hostSession)
	}
	l.sessions[ts.ID()] = s
	stopped := l.stopped
	l.mu.Unlock()
	if stopped {
		s.goAway()
	}
	var err error
	defer func() {
		// The handler runs on a goroutine of the session's own: a panic
		// is reported here and ends the session with 1011, never the
		// server.
		if v := recover(); v != nil {
			err = core.NewPanicError(v)
			m.logger().Error("session handler panicked", "session", ts.ID(), "err", err)
		}
		if err != nil {
			_ = s.Close(core.CloseInternal, "")
		} else {
			_ = s.Close(core.CloseNormal, "")
		}
		cancel()
		l.mu.Lock()
		delete(l.sessions, ts.ID())
		hooks := slices.Clone(l.hooks)
		client := s.client
		s.client = nil
		l.mu.Unlock()
		if client != nil {
			client.Disconnect()
		}
		for _, f := range hooks {
			f(ts.ID())
		}
	}()
	err = h.ServeSession(ctx, req, s)
}

// hostSession is a session as the host hands it to a handler: its first
// Close counts, and going away cancels the handler's context.
type hostSession struct {
	core.Session
	cancel context.CancelFunc
	client plugins.TreeClient // the tree client of the session's id; guarded by live.mu
	// identity is the caller's, as the host's middleware checked it (nil
	// for an anonymous caller).
	identity *core.Identity
	once     sync.Once
	err      error
}

// Close closes the session the first time it is called.
func (s *hostSession) Close(code int, reason string) error {
	s.once.Do(func() { s.err = s.Session.Close(code, reason) })
	return s.err
}

// SendBatch sends ms in one batch when the transport can.
func (s *hostSession) SendBatch(ctx context.Context, ms []core.Message) error {
	return core.SendAll(ctx, s.Session, ms)
}

// Buffered reports whether the transport has the next message already.
func (s *hostSession) Buffered() bool { return core.Buffered(s.Session) }

func (s *hostSession) goAway() {
	_ = s.Close(core.CloseGoingAway, "server shutting down")
	s.cancel()
}

// newSessionID returns a fresh random session id: 16 hex digits.
func newSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var (
	_ core.Session     = (*hostSession)(nil)
	_ core.BatchSender = (*hostSession)(nil)
	_ core.Bufferer    = (*hostSession)(nil)
)
