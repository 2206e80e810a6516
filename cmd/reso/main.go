// Command reso serves the reso example application: the configuration, file
// listing, file download, user list and private resources of SPEC 4.2 on
// port 8000, from the current directory.
//
// Usage:
//
//	reso [flags]                       serve (see -help for the flags)
//	reso plugin NAME [-users FILE]     serve a bundled plugin to a parent reso (internal)
//	reso admin-token -secret-file F    print the administrator token
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/reso-project/reso/core"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "reso:", err)
		os.Exit(1)
	}
}

// run is the whole program; main only wires signals and the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "plugin":
			return runPlugin(ctx, args[1:], stderr)
		case "admin-token":
			return runAdminToken(args[1:], stdout, stderr)
		}
	}
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if cfg.version {
		fmt.Fprintln(stdout, "reso", version)
		return nil
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	h, cleanup, err := build(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer cleanup()
	return serve(ctx, cfg, h, logger)
}

// serve listens on cfg.addr and serves h until ctx ends, then shuts down
// gracefully.
func serve(ctx context.Context, cfg *options, h http.Handler, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       cfg.readTimeout,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ConnContext:       core.ConnContext,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	logger.Info("reso listening", "addr", ln.Addr().String(), "version", version)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(core.Listen(ln)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("reso shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	return nil
}
