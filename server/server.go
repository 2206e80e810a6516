// Package server is what reso adds to each connection of a net/http
// server, in one place: the listener wrapper that writes exact reason
// phrases (core.Listen) and the connection context that goes with it
// (core.ConnContext), TLS that keeps those phrases (HTTP/1.1 only), the
// requests in flight, named when shutdown has to cut them, and the hooks
// that run when shutdown begins. cmd/reso serves with it, and so does an
// embedding program that wants the exact reason phrases:
//
//	srv := server.New(mux, server.Options{})
//	srv.RegisterOnShutdown(ch.GoAway) // streams and sessions end at once
//	go srv.Serve(ln)
//	...
//	srv.Shutdown(ctx)
//
// Without it, a reso handler mounted on any http.Server works the same,
// with the standard reason phrases on the wire (bodies still carry the
// exact status line).
package server

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/reso-project/reso/core"
)

// Options configure a [Server]. The zero value serves plain HTTP with the
// defaults its fields name.
type Options struct {
	// TLS, when set, makes the server answer HTTPS with its certificates:
	// HTTP/1.1 only (ALPN "http/1.1"), since HTTP/2 carries no reason
	// phrase, and TLS 1.2 at least. A plain HTTP request on the TLS port
	// gets 400 Bad Request.
	TLS *tls.Config
	// ReadTimeout bounds the reading of a whole request, body included; 0
	// means none (ReadHeaderTimeout still bounds the header).
	ReadTimeout time.Duration
	// Logger receives net/http's own errors, at level Warn; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Default limits of a [Server]'s http.Server.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
)

// Server is an http.Server with what reso adds to each connection. Its
// Serve and ListenAndServe wrap the listener; the other methods are
// http.Server's (Shutdown, Close, RegisterOnShutdown, ...). Change the
// fields of the http.Server before serving, not ConnContext, ConnState or
// TLSNextProto, which New set.
type Server struct {
	*http.Server
	tls      *tls.Config
	inflight *inFlight
}

// New returns a Server for h, configured: header read timeout
// ([DefaultReadHeaderTimeout]), idle timeout ([DefaultIdleTimeout]),
// header size limit ([DefaultMaxHeaderBytes]), and the connection context
// that lets handlers write exact reason phrases and the router reuse its
// request state.
func New(h http.Handler, o Options) *Server {
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	inflight := newInFlight()
	srv := &http.Server{
		Handler:           inflight.wrap(h),
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		MaxHeaderBytes:    DefaultMaxHeaderBytes,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return inflight.connContext(core.ConnContext(ctx, c), c)
		},
		ConnState: inflight.connState,
		ErrorLog:  slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	s := &Server{Server: srv, inflight: inflight}
	if o.TLS != nil {
		s.tls = tlsConfig(o.TLS)
		tlsSetUp(srv)
	}
	return s
}

// Serve serves HTTP (HTTPS with Options.TLS) on ln, wrapped so that its
// connections carry exact reason phrases; it returns as http.Server.Serve
// does (http.ErrServerClosed after Shutdown or Close).
func (s *Server) Serve(ln net.Listener) error {
	if s.tls != nil {
		ln = tlsListen(ln, s.tls)
	}
	return s.Server.Serve(core.Listen(ln))
}

// ListenAndServe listens on the TCP address s.Addr (":http", or ":https"
// with TLS, when empty) and calls Serve.
func (s *Server) ListenAndServe() error {
	addr := s.Addr
	if addr == "" {
		addr = ":http"
		if s.tls != nil {
			addr = ":https"
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Request is a request being served, as [Server.InFlight] reports it.
type Request struct {
	Method string
	// Target is the request target as sent: path and query.
	Target string
	// Client is the client's network address.
	Client string
	// Running is how long it has been served.
	Running time.Duration
}

// InFlight returns the requests being served: after a Shutdown that ran
// out of time, those it is about to cut.
func (s *Server) InFlight() []Request { return s.inflight.list() }
