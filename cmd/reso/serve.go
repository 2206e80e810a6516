package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
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
	inflight := &inFlight{m: make(map[*http.Request]time.Time)}
	srv := &http.Server{
		Handler:           inflight.wrap(h),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       cfg.readTimeout,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ConnContext:       core.ConnContext,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	if g, ok := h.(interface{ GoAway() }); ok {
		// Streams and sessions never finish by themselves: end them when
		// shutdown begins, so that Shutdown can complete.
		srv.RegisterOnShutdown(g.GoAway)
	}
	logger.Info("reso listening", "addr", ln.Addr().String(), "version", versionString())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(core.Listen(ln)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
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

// inFlight tracks the requests being served, to name those cut at shutdown.
type inFlight struct {
	mu sync.Mutex
	m  map[*http.Request]time.Time
}

func (f *inFlight) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.m[r] = time.Now()
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			delete(f.m, r)
			f.mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	})
}

type cutRequest struct {
	method, path, client string
	running              time.Duration
}

func (f *inFlight) list() []cutRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]cutRequest, 0, len(f.m))
	for r, t := range f.m {
		out = append(out, cutRequest{method: r.Method, path: r.URL.RequestURI(), client: r.RemoteAddr, running: time.Since(t)})
	}
	return out
}
