package plugins

import (
	"cmp"
	"context"
	"fmt"
	"net/http"

	"github.com/reso-project/reso/core"
)

// DefaultBodyLimit is the request body cap of a [Mount] whose BodyLimit is 0.
const DefaultBodyLimit = 1 << 20

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
	// BodyLimit caps request bodies in bytes (413 past it); 0 means
	// [DefaultBodyLimit] and a negative value means no cap.
	BodyLimit int64
}

// Routes asks every plugin for its routes and returns the route table.
func (m *Mount) Routes(ctx context.Context, entries []Entry) ([]core.Route, error) {
	var table []core.Route
	for _, e := range entries {
		rs, err := e.Plugin.Routes(ctx, m.Host)
		if err != nil {
			return nil, fmt.Errorf("plugins: %s: %w", e.Name, err)
		}
		for _, r := range rs {
			cr := core.Route{Match: r.Match, Rewrite: r.Rewrite, Assign: r.Assign}
			if r.Handler != nil {
				h := m.handler(r.Handler, r.Auth)
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
		if limit := cmp.Or(m.BodyLimit, DefaultBodyLimit); limit > 0 && r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		req := core.Prepare(r)
		req.Body = r.Body
		if auth && m.Identity != nil {
			req.Identity = m.Identity(r.Context())
		}
		core.Serve(w, r, h, req)
	})
}
