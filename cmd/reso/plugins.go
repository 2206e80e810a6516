package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/reso-project/reso/plugins"
)

// setupPlugins applies -isolate and -plugin to the bundled entries. (The
// out-of-process transport comes with package pluginrpc.)
func setupPlugins(_ context.Context, cfg *options, entries []plugins.Entry, _ *slog.Logger) ([]plugins.Entry, func(), error) {
	if cfg.isolate != "" || len(cfg.plugins) > 0 {
		return nil, nil, fmt.Errorf("-isolate and -plugin are not available yet")
	}
	return entries, func() {}, nil
}

// runPlugin serves a bundled plugin to a parent reso process.
func runPlugin(_ context.Context, args []string, _ io.Writer) error {
	return fmt.Errorf("plugin %v: out-of-process plugins are not available yet", args)
}
