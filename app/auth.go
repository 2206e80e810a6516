package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/reso-project/reso/middleware/auth"
	"github.com/reso-project/reso/middleware/auth/sqlitestore"
	"github.com/reso-project/reso/pluginhost"
)

// setupAuth opens the login records (-db), loads the instance secret
// (-secret-file), applies -login, configures login throttling
// (-login-attempts, -login-backoff) and sets the authenticator on host for the
// routes that require or take an identity. It follows the store's log of
// removed users and changed passwords (reso user in another process
// included) until the returned function stops it and closes the store. In
// a fleet (-nats) the records and the secret are the fleet's.
func setupAuth(ctx context.Context, cfg *options, host *pluginhost.Host, logger *slog.Logger) (*auth.Authenticator, func(), error) {
	var a *auth.Authenticator
	var closeStore func()
	var err error
	if cfg.nats != nil {
		st, secret, ferr := cfg.fleet.openLogins(ctx, cfg.nats)
		if ferr != nil {
			return nil, nil, ferr
		}
		a, closeStore, err = newAuth(st, secret, cfg)
	} else {
		a, closeStore, err = openAuth(ctx, cfg.db, cfg.secretFile, cfg)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := exampleUser(ctx, a, cfg, logger); err != nil {
		closeStore()
		return nil, nil, err
	}
	host.Require = auth.Required(a)
	host.Optional = auth.Optional(a)
	host.Challenge = a.Challenge
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		_ = a.Watch(wctx, 0)
	}()
	a.OnEnd(func(email string) { logger.Info("sessions ended", "email", email) })
	return a, func() {
		stop()
		<-watched
		closeStore()
	}, nil
}

// openAuth opens the store at db (created 0600 when missing) and an
// authenticator over it. cfg may be nil (the user subcommands).
func openAuth(ctx context.Context, db, secretFile string, cfg *options) (*auth.Authenticator, func(), error) {
	secret, err := auth.LoadSecret(secretFile)
	if err != nil {
		return nil, nil, err
	}
	if err := createPrivate(db); err != nil {
		return nil, nil, err
	}
	sync := sqlitestore.SyncNormal
	if cfg != nil {
		sync = cfg.dbSync.logins()
	}
	st, err := sqlitestore.OpenSync(ctx, db, sync)
	if err != nil {
		return nil, nil, err
	}
	return newAuth(st, secret, cfg)
}

// newAuth returns an authenticator over st with the instance secret and,
// unless cfg is nil, the server's login options. Closing it closes st.
func newAuth(st auth.Store, secret []byte, cfg *options) (*auth.Authenticator, func(), error) {
	c := auth.Config{Store: st, Secret: secret}
	if cfg != nil {
		c.Digest, c.SignedCookies = cfg.digest, cfg.signedCookies
		c.Throttle = auth.Throttle{
			Off:        cfg.loginAttempts == 0,
			Attempts:   cfg.loginAttempts,
			Backoff:    cfg.loginBackoff,
			MaxBackoff: max(auth.DefaultMaxLoginBackoff, cfg.loginBackoff),
		}
	}
	if cfg != nil && cfg.ops != nil && cfg.ops.metrics != nil {
		c.OnCheck = cfg.ops.metrics.loginChecked
	}
	a, err := auth.New(c)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return a, func() { st.Close() }, nil
}

// exampleUser applies -login: an explicit EMAIL:PASSWORD is registered (or
// its password reset) at every start; the default example user is
// registered only when missing, so a password changed with reso user passwd
// stays; -login ” removes the default example user, so none is left.
func exampleUser(ctx context.Context, a *auth.Authenticator, cfg *options, logger *slog.Logger) error {
	if cfg.login == "" {
		err := a.Remove(ctx, defaultEmail)
		switch {
		case err == nil:
			logger.Info("example user removed (-login '')", "email", defaultEmail)
		case !errors.Is(err, auth.ErrNoRecord):
			return fmt.Errorf("-login '': %w", err)
		}
		return nil
	}
	email, pw, err := auth.ParseLogin(cfg.login)
	if err != nil {
		return fmt.Errorf("-login: %w", err)
	}
	if !cfg.loginSet {
		if _, err := a.Lookup(ctx, email); err == nil {
			logger.Info("example user present", "email", email, "realm", a.Realm())
			return nil
		} else if !errors.Is(err, auth.ErrNoRecord) {
			return fmt.Errorf("-login: %w", err)
		}
	}
	if _, err := a.Register(ctx, email, pw); err != nil {
		return fmt.Errorf("-login: %w", err)
	}
	logger.Info("example user registered", "email", email, "realm", a.Realm())
	return nil
}

// runAdminToken prints the administrator token of the instance secret:
// reso admin-token [-secret-file FILE].
func runAdminToken(args []string, stdout io.Writer) error {
	fs := newFlagSet("reso admin-token")
	file := fs.String("secret-file", "", "file holding the instance secret (default <state>/secret; created 0600 when missing)")
	var fo fleetOptions
	fleetFlags(fs, &fo, false)
	if err := fs.Parse(args); err != nil {
		return parseError(err)
	}
	if fs.NArg() > 0 {
		return usagef("usage: reso admin-token [-secret-file FILE | -nats URL[,URL...] [-fleet NAME]]")
	}
	if fo.on() {
		if err := fo.validate(); err != nil {
			return err
		}
		nc, err := fo.connect(slog.New(slog.DiscardHandler))
		if err != nil {
			return err
		}
		defer nc.Close()
		_, secret, err := fo.openLogins(context.Background(), nc)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, auth.AdminToken(secret))
		return nil
	}
	db := ":memory:"
	if err := statePaths(&db, file); err != nil {
		return err
	}
	secret, err := auth.LoadSecret(*file)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, auth.AdminToken(secret))
	return nil
}
