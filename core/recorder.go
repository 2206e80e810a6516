package core

import "context"

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
