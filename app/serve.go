package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/reso-project/reso/server"
)

// listen binds the server's address.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-addr %s: %s", addr, describeListen(err))
	}
	return ln, nil
}

// describeListen names the usual listen failures in words.
func describeListen(err error) string {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err.Error()
	}
	return err.Error()
}

// serve serves h on ln until ctx ends, then shuts down gracefully: open
// streams and sessions end at once (when h has a GoAway method), requests
// in flight get cfg.shutdownTimeout to finish; those still running after it
// are logged and cut, and serve returns nil.
func serve(ctx context.Context, cfg *options, ln net.Listener, h http.Handler, logger *slog.Logger) error {
	srv := newServer(cfg, h, logger)
	if g, ok := h.(interface{ GoAway() }); ok {
		// Streams and sessions never finish by themselves: end them when
		// shutdown begins, so that Shutdown can complete.
		srv.RegisterOnShutdown(g.GoAway)
	}
	logger.Info("reso listening", "addr", ln.Addr().String(), "tls", cfg.tls.enabled(), "version", versionString())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Readiness fails first, then the drain starts.
	if cfg.ops != nil {
		cfg.ops.shutting.Store(true)
	}
	logger.Info("reso shutting down", "grace", cfg.shutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		for _, r := range srv.InFlight() {
			logger.Warn("request cut at shutdown", "method", r.Method, "path", r.Target,
				"client", r.Client, "running", r.Running.Round(time.Millisecond).String())
		}
		srv.Close()
		return nil
	}
	return err
}

// newServer returns the server serve runs (package server: exact reason
// phrases, TLS with -tls-cert, requests in flight).
func newServer(cfg *options, h http.Handler, logger *slog.Logger) *server.Server {
	return server.New(h, server.Options{TLS: cfg.tls.config(), ReadTimeout: cfg.readTimeout, Logger: logger})
}
