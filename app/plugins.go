package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/reso-project/reso/doors"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/pluginrpc"
	"github.com/reso-project/reso/plugins"
)

// setupPlugins applies -isolate and -plugin to the bundled entries:
//
//   - -isolate LIST (names separated by commas, or all) replaces each named
//     bundled plugin by a client of a child process that runs this same
//     binary as "reso plugin NAME" (see runPlugin); its routes keep their
//     place in the table.
//   - every -plugin NAME=PATH loads a third-party plugin binary; their
//     routes come after those of all bundled plugins, in flag order.
//   - with -plugin-optional, a -plugin that fails to load or to give its
//     routes is logged and left out instead of stopping the server.
//
// The returned cleanup ends every plugin process.
func setupPlugins(ctx context.Context, cfg *options, entries []pluginhost.Entry, logger *slog.Logger) ([]pluginhost.Entry, func(), error) {
	isolated, err := isolateNames(cfg.isolate, entries)
	if err != nil {
		return nil, nil, err
	}
	if err := checkPluginNames(cfg.plugins, entries); err != nil {
		return nil, nil, err
	}
	if len(isolated) == 0 && len(cfg.plugins) == 0 {
		return entries, func() {}, nil
	}
	exe, err := os.Executable()
	if err != nil && len(isolated) > 0 {
		return nil, nil, fmt.Errorf("-isolate: finding this program to run the plugins: %w", err)
	}
	// On Linux, run this very program even if its file was replaced or
	// removed since it started (an upgrade, go run's temporary build):
	// a restarted plugin must speak the same protocol as the server.
	self := exe
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		self = "/proc/self/exe"
	}
	usersArgs, err := usersArgs(cfg)
	if err != nil {
		return nil, nil, err
	}

	// What to start: the isolated bundled plugins in place, then the
	// third-party ones. Every process starts at the same time.
	type job struct {
		name     string
		index    int // in entries; -1 for a third-party plugin
		path     string
		argv0    string // shown by ps; "" means path
		args     []string
		optional bool
		client   *pluginrpc.Client
		err      error
	}
	var jobs []*job
	for i, e := range entries {
		if isolated[e.Name] {
			args := []string{"plugin", e.Name}
			if e.Name == "users" {
				args = append(args, usersArgs...)
			}
			jobs = append(jobs, &job{name: e.Name, index: i, path: self, argv0: exe, args: args})
		}
	}
	for _, p := range cfg.plugins {
		jobs = append(jobs, &job{name: p.name, index: -1, path: p.path, optional: cfg.pluginOpt})
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() {
			j.client, j.err = pluginrpc.Load(ctx, pluginrpc.Config{
				Name: j.name,
				Cmd: func() *exec.Cmd {
					cmd := exec.Command(j.path, j.args...)
					if j.argv0 != "" {
						cmd.Args[0] = j.argv0
					}
					if j.index >= 0 && os.Getenv("GOMAXPROCS") == "" {
						// A bundled plugin does little per request: one
						// scheduler thread saves the cross-thread wake-ups
						// that would otherwise cost more than its work.
						cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
					}
					return cmd
				},
				Logger: logger,
				// The GETs kept open of the plugin's doors run here,
				// on the tree, without crossing per notification.
				Watch: doors.Watch,
				// The sessions of its WebSocket doors onto the tree
				// are served here too: none of their messages crosses.
				Door: doors.NewSession,
			})
		})
	}
	wg.Wait()

	var clients []*pluginrpc.Client
	cleanup := func() {
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Go(func() { c.Close() })
		}
		wg.Wait()
	}
	var errs []error
	out := slices.Clone(entries)
	for _, j := range jobs {
		if j.err != nil {
			if j.optional {
				logger.Error("plugin left out (-plugin-optional)", "plugin", j.name, "err", j.err)
				continue
			}
			errs = append(errs, j.err)
			continue
		}
		clients = append(clients, j.client)
		if j.index >= 0 {
			out[j.index].Plugin = j.client
			continue
		}
		var p plugins.Plugin = j.client
		if j.optional {
			p = optionalPlugin{name: j.name, p: j.client, logger: logger}
		}
		out = append(out, pluginhost.Entry{Name: j.name, Plugin: p})
	}
	if len(errs) > 0 {
		cleanup()
		return nil, nil, errors.Join(errs...)
	}
	return out, cleanup, nil
}

// isolateNames resolves the -isolate list against the bundled entries.
func isolateNames(list string, entries []pluginhost.Entry) (map[string]bool, error) {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	out := make(map[string]bool)
	if strings.TrimSpace(list) == "" {
		return out, nil
	}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "all":
			for _, name := range names {
				out[name] = true
			}
		case slices.Contains(names, n):
			out[n] = true
		default:
			return nil, fmt.Errorf("-isolate: unknown plugin %q (bundled plugins: %s, or all)", n, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// checkPluginNames rejects -plugin names that are taken.
func checkPluginNames(ps pluginFlags, entries []pluginhost.Entry) error {
	seen := make(map[string]bool)
	for _, e := range entries {
		seen[e.Name] = true
	}
	for _, p := range ps {
		if seen[p.name] {
			return fmt.Errorf("-plugin %s=%s: the name %q is taken", p.name, p.path, p.name)
		}
		seen[p.name] = true
	}
	return nil
}

// usersArgs passes -users on to an isolated users plugin, as an absolute
// path.
func usersArgs(cfg *options) ([]string, error) {
	if cfg.users == "" {
		return nil, nil
	}
	abs, err := filepath.Abs(cfg.users)
	if err != nil {
		return nil, fmt.Errorf("-users: %w", err)
	}
	return []string{"-users", abs}, nil
}

// optionalPlugin leaves a -plugin-optional plugin out of the route table
// when it cannot give its routes.
type optionalPlugin struct {
	name   string
	p      plugins.Plugin
	logger *slog.Logger
}

// Routes returns the plugin's routes, or none when it fails.
func (o optionalPlugin) Routes(ctx context.Context, host plugins.Services) ([]plugins.Route, error) {
	rs, err := o.p.Routes(ctx, host)
	if err != nil {
		o.logger.Error("plugin left out (-plugin-optional)", "plugin", o.name, "err", err)
		return nil, nil
	}
	return rs, nil
}

// runPlugin serves a bundled plugin to the parent reso that started this
// process (reso -isolate): reso plugin NAME [-users FILE].
func runPlugin(_ context.Context, args []string, stderr io.Writer, compiled []pluginhost.Entry) error {
	fs := flag.NewFlagSet("reso plugin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	usersFile := fs.String("users", "", "JSON file with the user records (the users plugin)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: reso plugin NAME [-users FILE]\n\nServes the bundled plugin NAME to a parent reso (started by reso -isolate).")
		fs.PrintDefaults()
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fs.Usage()
		return errors.New("plugin: want a plugin name")
	}
	name := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("plugin %s: unexpected argument %q", name, fs.Arg(0))
	}
	entries, err := compiledPlugins(&options{users: *usersFile, compiled: compiled})
	if err != nil {
		return fmt.Errorf("plugin %s: %w", name, err)
	}
	i := slices.IndexFunc(entries, func(e pluginhost.Entry) bool { return e.Name == name })
	if i < 0 {
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name
		}
		return fmt.Errorf("plugin: unknown plugin %q (compiled-in plugins: %s)", name, strings.Join(names, ", "))
	}
	if err := pluginrpc.Serve(entries[i].Plugin); err != nil {
		return fmt.Errorf("plugin %s: %w", name, err)
	}
	return nil
}

var _ plugins.Plugin = optionalPlugin{}
