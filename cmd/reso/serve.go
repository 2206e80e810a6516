package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/reso-project/reso/core"
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
	srv, inflight := newServer(cfg, h, logger)
	if g, ok := h.(interface{ GoAway() }); ok {
		// Streams and sessions never finish by themselves: end them when
		// shutdown begins, so that Shutdown can complete.
		srv.RegisterOnShutdown(g.GoAway)
	}
	logger.Info("reso listening", "addr", ln.Addr().String(), "tls", cfg.tls.enabled(), "version", versionString())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(core.Listen(cfg.tls.listener(ln))) }()
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
		for _, r := range inflight.list() {
			logger.Warn("request cut at shutdown", "method", r.method, "path", r.path,
				"client", r.client, "running", r.running.Round(time.Millisecond).String())
		}
		srv.Close()
		return nil
	}
	return err
}

// newServer returns the http.Server serve runs, to be served on a listener
// wrapped by core.Listen (over the TLS listener of cfg.tls.listener with
// -tls-cert), and the requests it has in flight.
func newServer(cfg *options, h http.Handler, logger *slog.Logger) (*http.Server, *inFlight) {
	inflight := newInFlight()
	srv := &http.Server{
		Handler:           inflight.wrap(h),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       cfg.readTimeout,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ConnContext:       inflight.connContext,
		ConnState:         inflight.connState,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	cfg.tls.setUp(srv)
	return srv, inflight
}
