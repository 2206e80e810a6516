package app

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/justinas/alice"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/middleware"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
	"github.com/reso-project/reso/plugins/call"
	"github.com/reso-project/reso/plugins/channel"
	"github.com/reso-project/reso/plugins/config"
	"github.com/reso-project/reso/plugins/console"
	"github.com/reso-project/reso/plugins/files"
	"github.com/reso-project/reso/plugins/private"
	"github.com/reso-project/reso/plugins/represent"
	"github.com/reso-project/reso/plugins/users"
	"github.com/reso-project/reso/plugins/www"
)

// Bundled returns the plugins bundled with reso, in the route order of the
// example application (docs/wire.md#example-routes), for [Main]. The users
// plugin gets the records of -users when the program runs.
func Bundled() []pluginhost.Entry {
	return []pluginhost.Entry{
		{Name: "represent", Plugin: represent.Plugin{}},
		{Name: "config", Plugin: config.Plugin{}},
		{Name: "files", Plugin: files.Plugin{}},
		{Name: "users", Plugin: users.Plugin{}},
		{Name: "private", Plugin: private.Plugin{}},
		// After the example application's routes, which keep their order.
		{Name: "channel", Plugin: channel.New()},
		{Name: "call", Plugin: &call.Plugin{}},
		{Name: "console", Plugin: console.Plugin{}},
		// Last: its prefix must clash with no other route (-www-prefix).
		{Name: "www", Plugin: www.Plugin{}},
	}
}

// compiledPlugins returns the compiled-in plugins of cfg (Bundled when none were
// given), with the records of -users given to the users plugin.
func compiledPlugins(cfg *options) ([]pluginhost.Entry, error) {
	entries := slices.Clone(cfg.compiled)
	if entries == nil {
		entries = Bundled()
	}
	if cfg.users == "" {
		return entries, nil
	}
	list, err := users.Load(cfg.users)
	if err != nil {
		return nil, err
	}
	for i, e := range entries {
		if u, ok := e.Plugin.(users.Plugin); ok {
			u.Users = list
			entries[i].Plugin = u
		}
	}
	return entries, nil
}

// hiddenFiles returns the value of plugins.SettingHidden: the absolute
// paths of the server's own state files, one per line, which the files
// plugin never lists or serves. They are the -db database (unless
// :memory:) with its -wal, -shm and -journal companions, -secret-file,
// and the state directory, nothing in which is ever served.
func hiddenFiles(cfg *options) (string, error) {
	var paths []string
	if cfg.db != "" && cfg.db != ":memory:" {
		db, err := filepath.Abs(cfg.db)
		if err != nil {
			return "", fmt.Errorf("-db: %w", err)
		}
		paths = append(paths, db, db+"-wal", db+"-shm", db+"-journal")
	}
	if cfg.secretFile != "" {
		secret, err := filepath.Abs(cfg.secretFile)
		if err != nil {
			return "", fmt.Errorf("-secret-file: %w", err)
		}
		paths = append(paths, secret)
	}
	if dir, err := stateDir(); err == nil {
		paths = append(paths, dir)
	}
	return strings.Join(paths, "\n"), nil
}

// build assembles the server's handler: (access log ->) show errors ->
// recover -> cookies -> (a fleet node's admission ->) router.
func build(ctx context.Context, cfg *options, logger *slog.Logger) (http.Handler, func(), error) {
	var closers []func()
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	entries, err := compiledPlugins(cfg)
	if err != nil {
		return nil, nil, err
	}
	entries = cfg.www.entries(entries)
	hidden, err := hiddenFiles(cfg)
	if err != nil {
		return nil, nil, err
	}
	settings := map[string]string{
		plugins.SettingDirectory:  cfg.directory,
		plugins.SettingHidden:     hidden,
		call.SettingMaxExpires:    cfg.call.maxExpires.String(),
		call.SettingWait:          cfg.call.wait.String(),
		call.SettingWaitCount:     strconv.Itoa(cfg.call.waitCount),
		call.SettingWaitBytes:     strconv.Itoa(cfg.call.waitBytes),
		channel.SettingMaxMessage: strconv.FormatInt(cfg.channel.readLimit, 10),
	}
	maps.Copy(settings, cfg.www.settings())
	host := &pluginhost.Host{
		Services: plugins.Services{Settings: pluginhost.NewSettings(settings, plugins.SettingHidden, call.SettingMaxExpires, call.SettingWait,
			call.SettingWaitCount, call.SettingWaitBytes, channel.SettingMaxMessage, www.SettingDir, www.SettingPrefix)},
		BodyLimit: cfg.bodyLimit,
	}
	a, closeAuth, err := setupAuth(ctx, cfg, host, logger)
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, closeAuth)
	closeChannel, admit, err := setupChannel(ctx, cfg, host, a, logger)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	closers = append(closers, closeChannel)
	entries, closePlugins, err := setupPlugins(ctx, cfg, entries, logger)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	closers = append(closers, closePlugins)
	if cfg.ops != nil {
		cfg.ops.addPlugins(entries)
	}
	table, err := host.Routes(ctx, entries)
	if err == nil {
		err = cfg.www.checkTable(table)
	}
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	// Before the plugin processes end: every plugin's Close, in reverse
	// order (isolated ones in their process).
	closers = append(closers, func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.shutdownTimeout)
		defer cancel()
		if err := host.Close(cctx); err != nil {
			logger.Error("closing plugins", "err", err)
		}
	})
	// The example application's contract (docs/wire.md#no-matching-route,
	// docs/wire.md#error-bodies) lists the routes in a 404 and shows error
	// texts and panic traces in a 500; a library router does neither.
	router, err := core.NewRouter(table, core.WithRouteList())
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("route table: %w", err)
	}
	chain := alice.New(core.ShowErrors, middleware.Recover, middleware.Cookies)
	if admit != nil {
		chain = chain.Append(admit)
	}
	if cfg.ops != nil && cfg.ops.metrics != nil {
		chain = alice.New(middleware.Metrics(cfg.ops.metrics)).Extend(chain)
	}
	if cfg.accessLog {
		chain = alice.New(middleware.Log(logger)).Extend(chain)
	}
	var h http.Handler = chain.Then(router)
	if cfg.ops != nil {
		h = cfg.ops.wrap(h)
	}
	return goAwayHandler{h, host.GoAway}, cleanup, nil
}

// goAwayHandler is the server's handler with the host's GoAway, which
// serve calls when shutdown begins: open streams end and open sessions get
// a going-away close within the grace period.
type goAwayHandler struct {
	http.Handler
	goAway func()
}

// GoAway ends open streams and sessions.
func (h goAwayHandler) GoAway() { h.goAway() }
