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
//
// # Values
//
// Handlers answer with a unified value (docs/wire.md#value-shapes) made of
// plain Go values:
//
//   - [Node]: a named node (name, content)
//   - [Record]: an ordered sequence of named fields
//   - [List] (or any other slice): children, each rendered on its own
//   - scalars: string, bool, the integer and float types
//   - nil: none
//
// Maps with string keys render as records in key order, structs as records
// in field order, pointers as the value they point to. A struct field is
// named by its json tag when it has one, else by its Go name; unexported
// fields and fields tagged json:"-" are left out, and embedded structs are
// fields like the others (named by their type), not flattened. [Bind]
// addresses struct fields by the same names. A type may render itself by
// implementing [JSONAppender] or [XMLAppender], or convert itself with
// [Valuer]. Other values that implement encoding.TextMarshaler or error
// render as that text, nil pointers as none, and other kinds (complex
// numbers, channels, functions) as their %v text. A value nested more than
// 64 levels deep (counting Valuer conversions and pointer dereferences)
// renders as none. [Render], [AppendJSON], [AppendXML] and [AppendText]
// write values; [DecodeJSON] reads JSON into them, keeping field order.
//
// # Resources
//
// A resource offers some of the methods GET, PUT, POST, DELETE and HEAD by
// implementing [Getter], [Putter], [Poster], [Deleter] and [Headable]; each
// returns the value to render (nil for an empty body) or an error.
// [Resource] dispatches to them and [Bind] serves a nested value read-only.
//
// # Defaults
//
// The library's defaults suit a router inside someone else's server: the
// body of a 404 from the router and of a 500 is the status line alone. The
// example application opts in to more with [WithRouteList] (the route forms
// in a 404) and [ShowErrors] (an error's text, a panic's trace in a 500).
package core
