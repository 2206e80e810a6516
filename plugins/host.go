package plugins

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/reso-project/reso/core"
)

// Entry is a named plugin in the server's ordered plugin list.
type Entry struct {
	Name   string
	Plugin Plugin
}

// Mount builds the route table of plugins, in list order: each plugin's
// routes in the order it gives them.
type Mount struct {
	// Host is offered to every plugin. Required.
	Host Host
	// Require wraps the handler of a route that asks for an identity; it
	// answers unauthenticated requests itself. Required when a route sets Auth.
	Require func(http.Handler) http.Handler
	// Identity returns the caller that Require authenticated, from the
	// request context.
	Identity func(ctx context.Context) *core.Identity
	// BodyLimit caps request bodies in bytes (413 past it); 0 means no cap.
	BodyLimit int64
	// Sessions is the door of session routes (Route.Session): it turns a
	// request into a message session. Nil answers session routes with
	// 501 Sessions Not Supported.
	Sessions SessionTransport
	// KeepAlive is the silence after which an open stream gets a
	// keep-alive (see core.StreamOptions); 0 means core.DefaultKeepAlive.
	KeepAlive time.Duration

	live live // open streams and sessions, end hooks, plugins to close
}

// Routes asks every plugin for its routes and returns the route table.
func (m *Mount) Routes(ctx context.Context, entries []Entry) ([]core.Route, error) {
	var table []core.Route
	m.live.setEntries(entries)
	for _, e := range entries {
		rs, err := e.Plugin.Routes(ctx, m.Host)
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
					h = m.sessionHandler(r.Session, r.Auth)
				} else {
					h = m.handler(r.Handler, r.Auth)
				}
				if r.Auth {
					if m.Require == nil {
						return nil, fmt.Errorf("plugins: %s: route %q needs an identity and no authenticator is set", e.Name, r.Match)
					}
					h = m.Require(h)
				}
				cr.Handler = h
			}
			table = append(table, cr)
		}
	}
	return table, nil
}

// handler adapts a plugin handler to net/http: it caps the body, passes the
// caller's identity and writes the response.
func (m *Mount) handler(h core.Handler, auth bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.BodyLimit > 0 && r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, m.BodyLimit)
		}
		req := core.Prepare(r)
		req.Body = r.Body
		if auth && m.Identity != nil {
			req.Identity = m.Identity(r.Context())
		}
		resp, err := h.Handle(r.Context(), req)
		switch {
		case err != nil:
			core.WriteError(w, r, err)
		case resp != nil && resp.Stream != nil:
			core.WriteStream(w, r, resp, core.StreamOptions{KeepAlive: m.KeepAlive, Stop: m.live.stopping()})
		default:
			core.WriteResponse(w, r, resp)
		}
	})
}
