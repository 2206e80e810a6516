// Package hello is a third-party reso plugin, written only against reso's
// public plugin contract (packages core and plugins). It answers GET /hello
// with {"hello": "world"} and GET /hello/NAME with {"hello": "NAME"}, in
// JSON, XML or plain text like every reso resource, and GET /hello-whoami
// with the caller's e-mail, or "anonymous": a route with an optional
// identity. GET /hello-events/NAME streams three greetings: Server-Sent
// Events for a client that accepts text/event-stream, else one JSON line
// each.
//
// The same plugin runs out of process (examples/hello-plugin, loaded with
// reso -plugin hello=PATH) or compiled into a reso binary of one's own
// (examples/custom).
package hello

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

// Plugin is the hello plugin.
type Plugin struct {
	// Logger receives the plugin's records; nil means slog.Default().
	Logger *slog.Logger
}

// Routes returns the plugin's routes. It is called once, when the server
// builds its route table.
func (p Plugin) Routes(ctx context.Context, host plugins.Services) ([]plugins.Route, error) {
	logger := p.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.Info("hello-plugin ready")
	return []plugins.Route{
		{
			// The server checks credentials when the caller sends some and
			// passes the caller in req.Identity; anonymous callers pass too.
			Match:    `GET /hello-whoami(?:$|\?)`,
			Identity: plugins.IdentityOptional,
			Handler:  core.Resource(whoami{}),
		},
		{
			Match:   `GET /hello-events(?:/(?P<name>[^/?]*))?(?:$|\?)`,
			Handler: core.HandlerFunc(helloEvents),
		},
		{
			Match:   `GET /hello(?:/(?P<name>[^/?]*))?(?:$|\?)`,
			Handler: core.Resource(hello{}),
		},
	}, nil
}

// helloEvents answers with a stream of three greetings; the host writes them as Server-Sent Events or JSON lines,
// flushes each and keeps the stream alive.
func helloEvents(_ context.Context, req *core.Request) (*core.Response, error) {
	name := req.Var("name")
	if name == "" {
		name = "world"
	}
	count := 3
	if q, err := url.ParseQuery(req.Query); err == nil && q.Get("count") != "" {
		n, err := strconv.Atoi(q.Get("count"))
		if err != nil || n < 0 || n > maxGreetings {
			return nil, errBadCount
		}
		count = n
	}
	return &core.Response{Stream: &greetings{name: name, count: count}}, nil
}

// maxGreetings bounds ?count=.
const maxGreetings = 1_000_000

var errBadCount = core.Status(400, "Invalid Count")

// greetings is the event source of /hello-events: count events (three
// unless ?count= says otherwise), then the end (io.EOF).
type greetings struct {
	name  string
	n     int
	count int
}

// Next returns the next greeting. It returns when ctx ends: the client went
// away or the server is shutting down.
func (g *greetings) Next(ctx context.Context) (core.Event, error) {
	if g.n == g.count {
		return core.Event{}, io.EOF
	}
	g.n++
	if g.n > 1 {
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return core.Event{}, ctx.Err()
		}
	}
	return core.Event{
		ID:    strconv.Itoa(g.n),
		Name:  "greeting",
		Value: core.Node{Name: "hello", Content: core.Record{{Name: "name", Value: g.name}, {Name: "n", Value: g.n}}},
	}, nil
}

// Close releases the source; the host calls it once, however the stream
// ended. Greetings hold nothing.
func (g *greetings) Close() error { return nil }

// pause is the time between two greetings.
const pause = 10 * time.Millisecond

// hello is the resource behind the route: core.Resource calls Get for GET
// and answers 405 Method Not Allowed for the other methods.
type hello struct{}

// Get answers the node hello whose content is the name in the path, or
// "world".
func (hello) Get(_ context.Context, req *core.Request) (any, error) {
	name := req.Var("name")
	if name == "" {
		name = "world"
	}
	return core.Node{Name: "hello", Content: name}, nil
}

// whoami is the resource behind GET /hello-whoami.
type whoami struct{}

// Get answers the node whoami whose content is the caller's e-mail, or
// "anonymous" when the caller sent no credentials.
func (whoami) Get(_ context.Context, req *core.Request) (any, error) {
	if req.Identity == nil {
		return core.Node{Name: "whoami", Content: "anonymous"}, nil
	}
	return core.Node{Name: "whoami", Content: req.Identity.Email}, nil
}

var (
	_ plugins.Plugin   = Plugin{}
	_ core.Getter      = hello{}
	_ core.Getter      = whoami{}
	_ core.EventSource = (*greetings)(nil)
)
