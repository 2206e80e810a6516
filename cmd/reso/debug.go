package main

import (
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"log/slog"
)

// validateDebugAddr accepts only loopback addresses for -debug-addr: the
// profiles show the server's internals and must not reach the network.
func validateDebugAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("-debug-addr %s: want HOST:PORT on loopback, e.g. 127.0.0.1:6060", addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return usagef("-debug-addr %s: only a loopback address is allowed (127.0.0.1, ::1 or localhost)", addr)
	}
	return nil
}

// serveDebug serves net/http/pprof on addr until stop is called.
func serveDebug(addr string, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usagef("-debug-addr %s: %s", addr, describeListen(err))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	logger.Info("reso debug listening", "addr", ln.Addr().String())
	go srv.Serve(ln)
	return func() { srv.Close() }, nil
}
