package channelhost

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/doors"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
	"github.com/reso-project/reso/websocket"
)

// Options configure a [Handler]. The zero value gives the defaults its
// fields name.
type Options struct {
	// Transport turns a request for the WebSocket door into a session; nil
	// means websocket.New(websocket.Options{}), with the limits a public
	// server needs (browsers only from the request's own host, 64 KiB
	// messages, 10,000 connections).
	Transport pluginhost.SessionTransport
	// MaxMessage is the largest message a WebSocket client may send, as
	// doors.Session.MaxMessage; 0 means doors.DefaultMaxMessage.
	MaxMessage int
	// BodyLimit caps the body of a request to the HTTP door in bytes (413
	// past it); 0 means pluginhost.DefaultBodyLimit, negative no cap.
	BodyLimit int64
	// Challenge sets the headers that ask a caller for credentials when the
	// HTTP door answers an anonymous caller 401 (the tree refused it):
	// with reso's authentication, (*auth.Authenticator).Challenge. Nil
	// sets none.
	Challenge func(http.ResponseWriter)
	// KeepAlive is the silence after which a GET kept open gets a
	// keep-alive; 0 means core.DefaultKeepAlive.
	KeepAlive time.Duration
	// Logger receives what the doors report on their own, such as a
	// session handler's panic; nil means slog.Default().
	Logger *slog.Logger
}

// Handler serves the doors of one tree on any net/http server, under any
// prefix: mount it with http.StripPrefix, behind the server's
// authentication, which names the caller with core.NewIdentityContext
// (auth.Optional does; a request without an identity is anonymous):
//
//	doors := channelhost.NewHandler(tree, channelhost.Options{Challenge: a.Challenge})
//	h := auth.Optional(a)(http.StripPrefix("/rt/channel", doors))
//	mux.Handle("/rt/channel", h)  // the WebSocket door
//	mux.Handle("/rt/channel/", h) // the HTTP door and GET kept open
//
// The path left after the prefix picks the door: none (the prefix itself)
// is the WebSocket door, /<path> the HTTP door for the tree path <path>
// (docs/channel.md). Answers that name a path name it as the client sees
// it: a POST to /rt/channel/room answers Location: /rt/channel/room/<id>.
// Each door is also a handler of its own (WebSocket, HTTP, Watch).
//
// Sessions and streams outlive their request: call GoAway when the server
// begins to shut down (http.Server.RegisterOnShutdown) and Close once it
// has stopped.
type Handler struct {
	host                *pluginhost.Host
	webSocket, door, gk http.Handler
}

// NewHandler returns the doors of tree.
func NewHandler(tree *channel.Tree, o Options) *Handler {
	t := TreeOf(tree)
	transport := o.Transport
	if transport == nil {
		transport = websocket.New(websocket.Options{})
	}
	host := &pluginhost.Host{
		Services:  plugins.Services{Tree: t},
		Sessions:  transport,
		Challenge: o.Challenge,
		BodyLimit: o.BodyLimit,
		KeepAlive: o.KeepAlive,
		Logger:    o.Logger,
	}
	maxMessage := o.MaxMessage
	if maxMessage <= 0 {
		maxMessage = doors.DefaultMaxMessage
	}
	return &Handler{
		host:      host,
		webSocket: methods(host.Session(&doors.Session{Tree: t, MaxMessage: maxMessage}), http.MethodGet),
		door:      methods(host.HTTP(&doors.Door{Tree: t}), http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete),
		gk:        methods(host.HTTP(&doors.Door{Tree: t, KeepOpen: true}), http.MethodGet),
	}
}

// ServeHTTP serves the WebSocket door at the path "" (the prefix that
// http.StripPrefix removed) and the HTTP door under it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "" {
		h.webSocket.ServeHTTP(w, r)
		return
	}
	h.door.ServeHTTP(w, r)
}

// WebSocket returns the WebSocket door alone: every GET is a handshake
// (docs/channel.md#the-websocket-door).
func (h *Handler) WebSocket() http.Handler { return h.webSocket }

// HTTP returns the HTTP door alone: the request path is the tree path, each
// request one message for the tree, a GET that asks for a stream kept open
// (see doors.Door).
func (h *Handler) HTTP() http.Handler { return h.door }

// Watch returns the GET kept open alone: every GET of a tree path is
// answered with its state and then its changes, as a GET with ?watch to
// the HTTP door is (see doors.Watch).
func (h *Handler) Watch() http.Handler { return h.gk }

// GoAway ends open streams and closes open WebSocket sessions with 1001
// (going away); streams and sessions that start later end at once. Call it
// when the server begins to shut down, so that they end within its grace
// period: srv.RegisterOnShutdown(h.GoAway).
func (h *Handler) GoAway() { h.host.GoAway() }

// Close ends open streams and sessions (see GoAway) and waits, within ctx,
// for their handlers to return and for their WebSockets' close handshakes
// to end. Call it once the server has stopped, and before the process
// exits.
func (h *Handler) Close(ctx context.Context) error { return h.host.Close(ctx) }

// methods answers a request whose method is not one of allowed with 405
// Method Not Allowed, and passes the others to next.
func methods(next http.Handler, allowed ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, m := range allowed {
			if r.Method == m {
				next.ServeHTTP(w, r)
				return
			}
		}
		core.WriteError(w, r, core.ErrMethodNotAllowed)
	})
}

var _ http.Handler = (*Handler)(nil)
