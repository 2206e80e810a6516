package core

import (
	"context"
	"net/http"
)

// RouteRecorder receives the route that answers a request, for middleware
// outside the [Router] such as an access log or metrics. Such middleware puts
// one in the request's context with [WithRouteRecorder] before the router
// runs and reads it when the answer is done.
//
// The router sets Route to the Match of the route whose handler it runs, for
// example `GET /files(?:/|$|\?)`: a pattern of the route table, never the
// request's path, so the value takes as many forms as the table has routes
// and suits a metrics label. Route stays "" when no route answered (404 Not
// Found, or an answer before the router). A router inside a handler sets it
// again, so the innermost route that answered wins.
type RouteRecorder struct {
	Route string
}

type recorderKey struct{}

// WithRouteRecorder returns a copy of ctx that carries rec, for the [Router]
// to fill in.
func WithRouteRecorder(ctx context.Context, rec *RouteRecorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, rec)
}

// ServeRecorded serves r with h while rec receives the route that answers
// it: [RouteRecorderFrom] finds rec in the contexts of the request, and a
// [Router] fills it in. On an HTTP/1 connection accepted by a [Listen]
// listener rec is kept on the connection while h runs (HTTP/1 serves one
// request at a time), which costs no copy of the request or its context;
// elsewhere, or when r's context carries a recorder of its own already, h
// gets r with a context that carries rec ([WithRouteRecorder]). A context
// kept past its request must not be given to a router.
func ServeRecorded(h http.Handler, w http.ResponseWriter, r *http.Request, rec *RouteRecorder) {
	ctx := r.Context()
	if c, ok := ctx.Value(connKey{}).(*reasonConn); ok && r.ProtoMajor == 1 {
		if cur := RouteRecorderFrom(ctx); cur == nil || cur == c.route.Load() {
			prev := c.route.Swap(rec)
			defer c.route.Store(prev)
			h.ServeHTTP(w, r)
			return
		}
	}
	h.ServeHTTP(w, r.WithContext(WithRouteRecorder(ctx, rec)))
}

// RouteRecorderFrom returns the recorder ctx carries, nil when none: a
// second piece of middleware that wants the route shares the first one's
// rather than hiding it behind its own.
func RouteRecorderFrom(ctx context.Context) *RouteRecorder {
	rec, _ := ctx.Value(recorderKey{}).(*RouteRecorder)
	return rec
}

// recordRoute tells the recorder in ctx, if any, that route answers.
func recordRoute(ctx context.Context, route string) {
	if rec, ok := ctx.Value(recorderKey{}).(*RouteRecorder); ok {
		rec.Route = route
	}
}
