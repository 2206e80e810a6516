package app

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// validateAdmin checks -admin-addr and -pprof: the profiles show the
// server's internals, so -pprof wants -admin-addr on loopback.
func validateAdmin(addr string, withPprof bool) error {
	if addr == "" {
		if withPprof {
			return usagef("-pprof needs -admin-addr")
		}
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("-admin-addr %s: want HOST:PORT, e.g. 127.0.0.1:9090", addr)
	}
	if !withPprof || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return usagef("-admin-addr %s: with -pprof only a loopback address is allowed (127.0.0.1, ::1 or localhost)", addr)
	}
	return nil
}

// listenAdmin binds -admin-addr.
func listenAdmin(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usagef("-admin-addr %s: %s", addr, describeListen(err))
	}
	return ln, nil
}

// serveAdmin serves the admin listener on ln until stop is called:
// /metrics (Prometheus text), /healthz, /readyz and, with withPprof, Go's
// profiles under /debug/pprof/.
func serveAdmin(ln net.Listener, o *ops, withPprof bool, logger *slog.Logger) (stop func()) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.metrics.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}))
	mux.HandleFunc("GET /healthz", o.healthz)
	mux.HandleFunc("GET /readyz", o.readyz)
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	logger.Info("reso admin listening", "addr", ln.Addr().String(), "pprof", withPprof)
	go srv.Serve(ln)
	return func() { srv.Close() }
}
