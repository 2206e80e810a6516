package pluginhost

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

// DefaultBodyLimit is the request body cap of a [Host] whose BodyLimit is 0.
const DefaultBodyLimit = 1 << 20

// Entry is a named plugin in the server's ordered plugin list.
type Entry struct {
	Name   string
	Plugin plugins.Plugin
}

// Host builds the route table of plugins, in list order: each plugin's
// routes in the order it gives them.
type Host struct {
	// Services is offered to every plugin. A client that a plugin connects
	// to Services.Tree with a session's id is disconnected when that
	// session ends, however it ends, even when the plugin's process died.
	Services plugins.Services
	// Require wraps the handler of a route whose Identity is
	// [IdentityRequired] (auth.Required); it answers unauthenticated
	// requests itself. Needed when a route requires an identity.
	Require func(http.Handler) http.Handler
	// Optional wraps the handler of a route whose Identity is
	// [IdentityOptional] (auth.Optional): it lets anonymous requests
	// through. Needed when a route takes an optional identity.
	//
	// Both put the caller in the request context
	// (core.NewIdentityContext), where the host finds it for
	// core.Request.Identity.
	Optional func(http.Handler) http.Handler
	// Challenge sets the headers that ask a caller for credentials
	// (auth: (*Authenticator).Challenge). The host calls it before it
	// writes a 401 error of a route with an optional identity to an
	// anonymous caller, so that a plugin answers 401 without knowing the
	// schemes. Nil sets none.
	Challenge func(http.ResponseWriter)
	// BodyLimit caps request bodies in bytes (413 past it); 0 means
	// [DefaultBodyLimit] and a negative value means no cap.
	BodyLimit int64
	// Sessions is the door of session routes (Route.Session): it turns a
	// request into a message session. Nil answers session routes with
	// 501 Sessions Not Supported.
	Sessions SessionTransport
	// KeepAlive is the silence after which an open stream gets a
	// keep-alive (see core.StreamOptions); 0 means core.DefaultKeepAlive.
	KeepAlive time.Duration
	// Logger receives what the host reports on its own, such as a session
	// handler's panic; nil means slog.Default().
	Logger *slog.Logger

	live live // open streams and sessions, end hooks, plugins to close
}

// logger returns Logger or slog.Default().
func (m *Host) logger() *slog.Logger {
	if m.Logger != nil {
		return m.Logger
	}
	return slog.Default()
}

// Routes asks every plugin for its routes and returns the route table.
func (m *Host) Routes(ctx context.Context, entries []Entry) ([]core.Route, error) {
	var table []core.Route
	m.live.setEntries(entries)
	services := m.services()
	for _, e := range entries {
		rs, err := e.Plugin.Routes(ctx, services)
		if err != nil {
			return nil, fmt.Errorf("plugins: %s: %w", e.Name, err)
		}
		for _, r := range rs {
			cr := core.Route{Match: r.Match, Rewrite: r.Rewrite, Assign: r.Assign}
			if r.Handler != nil && r.Session != nil {
				return nil, fmt.Errorf("plugins: %s: route %q has both a handler and a session handler", e.Name, r.Match)
			}
			if r.Handler != nil || r.Session != nil {
				var h http.Handler
				if r.Session != nil {
					h = m.sessionHandler(r.Session)
				} else {
					h = m.handler(r.Handler, r.Identity)
				}
				h, err := m.wrap(h, r.Identity)
				if err != nil {
					return nil, fmt.Errorf("plugins: %s: route %q: %w", e.Name, r.Match, err)
				}
				cr.Handler = h
			}
			table = append(table, cr)
		}
	}
	return table, nil
}

// services returns what the host offers plugins: Services, with a Tree
// whose clients the end of their session disconnects.
func (m *Host) services() plugins.Services {
	s := m.Services
	if s.Tree != nil {
		s.Tree = hostTree{Tree: s.Tree, l: &m.live}
	}
	return s
}

// HTTP returns h as an http.Handler that an embedding server mounts where
// it likes, as the host serves a route's handler: the body capped at
// BodyLimit, the caller's identity taken from the request's context
// (core.NewIdentityContext, which the server's authentication middleware
// calls; none makes the caller anonymous), a 401 answer to an anonymous
// caller sent with the Challenge headers, a streamed answer ended by
// GoAway.
func (m *Host) HTTP(h core.Handler) http.Handler {
	return m.handler(h, plugins.IdentityOptional)
}

// Session returns h as an http.Handler that an embedding server mounts
// where it likes, as the host serves a session route: the Sessions
// transport turns the request into a session, h serves it on a goroutine
// of its own with the caller's identity from the request's context, the end
// hooks run when it is over, and GoAway and Close end it.
func (m *Host) Session(h core.SessionHandler) http.Handler {
	return m.sessionHandler(h)
}

// wrap puts the authentication middleware of mode in front of h.
func (m *Host) wrap(h http.Handler, mode plugins.IdentityMode) (http.Handler, error) {
	var mw func(http.Handler) http.Handler
	switch mode {
	case plugins.IdentityNone:
		return h, nil
	case plugins.IdentityOptional:
		mw = m.Optional
	case plugins.IdentityRequired:
		mw = m.Require
	default:
		return nil, fmt.Errorf("unknown identity mode %d", mode)
	}
	if mw == nil {
		return nil, fmt.Errorf("identity %s and no authenticator is set", mode)
	}
	return mw(h), nil
}

// handler adapts a plugin handler to net/http: it caps the body, passes the
// caller's identity from the request context and writes the response.
func (m *Host) handler(h core.Handler, mode plugins.IdentityMode) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if limit := cmp.Or(m.BodyLimit, DefaultBodyLimit); limit > 0 && r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		req := core.Prepare(r)
		req.Body = r.Body
		resp, err := h.Handle(r.Context(), req)
		switch {
		case err != nil:
			if se, ok := core.AsStatus(err); ok && se.Code() == http.StatusUnauthorized &&
				mode == plugins.IdentityOptional && req.Identity == nil && m.Challenge != nil {
				m.Challenge(w)
			}
			core.WriteError(w, r, err)
		case resp != nil && resp.Stream != nil:
			core.WriteStream(w, r, resp, core.StreamOptions{KeepAlive: m.KeepAlive, Stop: m.live.stopping()})
		default:
			core.WriteResponse(w, r, resp)
		}
	})
}
