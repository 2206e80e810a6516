package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

// setupAuth opens the login records and sets the authenticator on mount.
func setupAuth(_ context.Context, _ *options, mount *plugins.Mount, _ *slog.Logger) (func(), error) {
	mount.Require = func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			core.WriteError(w, r, core.Status(401, "Unauthorized"))
		})
	}
	return func() {}, nil
}

// runAdminToken prints the administrator token of a secret file.
func runAdminToken(_ []string, _, _ io.Writer) error {
	return fmt.Errorf("admin-token: not available yet")
}
