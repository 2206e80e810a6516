// Package core is the kernel of reso: an ordered router over regular
// expressions, the per-request context (docs/wire.md#request-context), the
// unified value with its JSON, XML and plain-text renderers, status errors
// with exact reason phrases, resource dispatch and bound objects.
//
// core imports only the standard library. Everything above it (middleware,
// authentication, plugins, the server binary) is built from the pieces here.
//
// The request flow is: a [Router] matches the method and <path>[?<query>]
// against its routes in order; rewrite routes change the [Request] and
// matching continues; the first route with a handler runs it. Handlers are
// ordinary http.Handler values, so middleware chains fit in front of them.
// Transport-neutral resources implement [Handler] and are mounted with [HTTP].
//
// Every route whose methods have GET also serves HEAD, which answers like
// GET without a body and never changes state (see [Route]). A server set up
// with [Listen] and [ConnContext] puts exact reason phrases on the wire, on
// HTTP/1.0 and HTTP/1.1, and answers a client that half-closes its
// connection after its request in full (see [Listen]). Middleware outside
// the router learns which route answered through a [RouteRecorder].
package core
