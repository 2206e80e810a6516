package core

import (
	"context"
	"io"
	"maps"
	"net/http"
	"time"
)

// Names of the request variables that routes may assign
// (docs/wire.md#request-variables).
const (
	VarAccept      = "ACCEPT"       // representation type; default application/json
	VarContentType = "CONTENT_TYPE" // type of the request body
	VarBody        = "BODY"         // a preset request body
	VarLinkPrefix  = "LINK_PREFIX"  // put before url paths by HTML links (see HTMLPage)
)

// Request is the transport-neutral request context
// (docs/wire.md#request-context). The router keeps one in the context of
// every request it routes; [FromContext] returns it. The same type crosses
// the plugin boundary, so it holds no http.ResponseWriter and no connection
// state.
type Request struct {
	// Method is the request method, possibly replaced by a rewrite.
	Method string
	// Path is the remaining (percent-decoded) path after the part consumed
	// by the matching route.
	Path string
	// Consumed is the part of the path consumed before the handler: the
	// prefix that a handler in front removed from the path the client sent
	// (http.StripPrefix; see [Mount]), then the part the matching route
	// consumed. Consumed+Path is the path as the client sees it, so an
	// answer that names a path (a Location, a link) starts with Consumed.
	Consumed string
	// Query is the text after ? as sent (not decoded).
	Query string
	// Vars holds the named groups of matched routes and route assignments
	// such as ACCEPT, CONTENT_TYPE and BODY.
	Vars map[string]string
	// Header is the request header (Authorization, Cookie, Content-Type, ...).
	Header http.Header
	// Body is the request body. Resource dispatch reads it for PUT and POST;
	// nil means no body.
	Body io.Reader
	// ContentLength is the declared body length, -1 when the body is chunked
	// and -2 when the request declared neither.
	ContentLength int64
	// Identity is the authenticated caller, nil for an anonymous one. It
	// agrees with the request's context, the identity's one home: the
	// router and [Prepare] take it from there ([IdentityFromContext]), and
	// [NewIdentityContext], which authentication middleware calls, sets it
	// on the request the router is routing.
	Identity *Identity
	// Entity is the request body as read by resource dispatch: the parsed
	// JSON value when CONTENT_TYPE is application/json, else the body text.
	Entity any

	// x is the router's state of the request, which this Request is part
	// of; nil for a Request made otherwise.
	x *reqState
}

// Clone returns a copy of r that outlives the HTTP request r came from:
// its Vars and Header are copies, and it holds none of the router's state,
// which the router reuses once the request is answered. A handler that
// keeps serving after its HTTP handler returned (a session) works on a
// clone.
func (r *Request) Clone() *Request {
	c := *r
	c.Vars = maps.Clone(r.Vars)
	c.Header = r.Header.Clone()
	c.x = nil
	return &c
}

// Var returns the request variable called name, or "" when it is not set.
func (r *Request) Var(name string) string { return r.Vars[name] }

// SetVar sets the request variable called name.
func (r *Request) SetVar(name, value string) {
	if r.Vars == nil {
		r.Vars = make(map[string]string)
	}
	r.Vars[name] = value
}

// Accept returns the representation type of the request: the ACCEPT variable,
// or application/json when it is unset.
func (r *Request) Accept() string {
	if a := r.Vars[VarAccept]; a != "" {
		return a
	}
	return "application/json"
}

// Response is what a [Handler] answers. A zero Response is 200 OK with an
// empty text/plain body.
type Response struct {
	// Code is the status code; 0 means 200.
	Code int
	// Reason is the reason phrase; "" means the standard phrase of Code.
	Reason string
	// ContentType is the Content-Type of the answer; "" means the one in
	// Header, else text/plain.
	ContentType string
	// Header holds further response headers.
	Header http.Header
	// Cookies are set on the response (unchanged ones are dropped by the
	// cookie middleware).
	Cookies []*http.Cookie
	// Body is the response body.
	Body []byte
	// Content, when not nil, is served instead of Body with the semantics of
	// http.ServeContent: streamed, with Range and conditional requests.
	Content *Content
	// Stream, when not nil, is served instead of Body: a streamed answer
	// of events, written with [WriteStream] (Server-Sent Events or
	// newline-delimited JSON) until the source ends or the client goes
	// away. ContentType is then chosen by the framing.
	Stream EventSource
}

// Content is a file-like body served with Range and conditional requests.
type Content struct {
	Name    string
	ModTime time.Time
	Size    int64
	// ReaderAt reads the bytes; if it is also an io.Closer it is closed
	// when the response is done.
	ReaderAt io.ReaderAt
}

// Handler is a transport-neutral resource handler: it answers a [Request]
// with a [Response] or an error. A [StatusError] gives its status line; any
// other error gives 500 Internal Server Error.
type Handler interface {
	Handle(ctx context.Context, req *Request) (*Response, error)
}

// HandlerFunc adapts a function to [Handler].
type HandlerFunc func(ctx context.Context, req *Request) (*Response, error)

// Handle calls f(ctx, req).
func (f HandlerFunc) Handle(ctx context.Context, req *Request) (*Response, error) {
	return f(ctx, req)
}

type requestKey struct{}

// NewContext returns a copy of ctx that carries req.
func NewContext(ctx context.Context, req *Request) context.Context {
	return context.WithValue(ctx, requestKey{}, req)
}

// FromContext returns the request context stored in ctx by the router, or nil.
// The router's request context is valid until the route's handler returns:
// the router reuses it for a later request (see [Router]). A context kept
// past its request answers nil, never a later request's context.
func FromContext(ctx context.Context) *Request {
	switch v := ctx.Value(requestKey{}).(type) {
	case *Request:
		return v
	case *connState:
		return v.request(ctx)
	}
	return nil
}

var _ Handler = HandlerFunc(nil)
