package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/reso-project/reso/middleware/auth"
	"github.com/reso-project/reso/plugins"
)

// setupAuth opens the login records (-db), loads the instance secret
// (-secret-file), registers the example user (-login), configures login
// throttling (-login-attempts, -login-backoff) and sets the authenticator
// on mount for the routes that need an identity.
func setupAuth(ctx context.Context, cfg *options, mount *plugins.Mount, logger *slog.Logger) (func(), error) {
	secret, err := auth.LoadSecret(cfg.secretFile)
	if err != nil {
		return nil, err
	}
	st, err := auth.OpenSQLite(ctx, cfg.db)
	if err != nil {
		return nil, err
	}
	a, err := auth.New(auth.Config{
		Store:         st,
		Secret:        secret,
		Digest:        cfg.digest,
		SignedCookies: cfg.signedCookies,
		Throttle: auth.Throttle{
			Off:        cfg.loginAttempts == 0,
			Attempts:   cfg.loginAttempts,
			Backoff:    cfg.loginBackoff,
			MaxBackoff: max(auth.DefaultMaxLoginBackoff, cfg.loginBackoff),
		},
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	if cfg.login != "" {
		email, pw, err := auth.ParseLogin(cfg.login)
		if err == nil {
			_, err = a.Register(ctx, email, pw)
		}
		if err != nil {
			st.Close()
			return nil, fmt.Errorf("-login: %w", err)
		}
		logger.Info("example user registered", "email", email, "realm", a.Realm())
	}
	mount.Require = auth.Required(a)
	mount.Identity = auth.FromContext
	return func() { st.Close() }, nil
}

// runAdminToken prints the administrator token of the secret in -secret-file.
func runAdminToken(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reso admin-token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("secret-file", "", "file holding the instance secret (required; created 0600 when missing)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" || fs.NArg() > 0 {
		return fmt.Errorf("usage: reso admin-token -secret-file FILE")
	}
	secret, err := auth.LoadSecret(*file)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, auth.AdminToken(secret))
	return nil
}
