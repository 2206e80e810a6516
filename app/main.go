// Package app is the reso server program, as a library: cmd/reso's main
// is app.Main(app.Bundled()...). A program of one's own compiles a
// third-party plugin into its reso binary by passing it along with the
// bundled ones (examples/custom):
//
//	func main() {
//		app.Main(append(app.Bundled(), pluginhost.Entry{Name: "hello", Plugin: hello.Plugin{}})...)
//	}
//
// The program then takes every flag and subcommand of reso; its plugins'
// routes come in list order, -isolate NAME runs any of them (the
// compiled-in third-party ones too) in a child process of the same
// binary, and -plugin NAME=PATH still loads plugin binaries.
//
// It serves the reso example application on port 8000: the
// configuration, file listing, file download, user list and private
// resources, from the current directory.
//
// Usage:
//
//	reso [flags]                                  serve (reso -h lists the flags)
//	reso user add|passwd|remove|list [-db F] ...  manage login records
//	reso admin-token [-secret-file F]             print the administrator token
//	reso plugin NAME [-users FILE]                serve a bundled plugin to a parent reso (internal)
//
// The login database and the instance secret live in a per-user state
// directory by default ($XDG_STATE_HOME/reso, else ~/.local/state/reso).
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/reso-project/reso/pluginhost"
)

// Main runs the reso server program with the plugins entries, in route
// order, and exits: it reads os.Args, stops gracefully on SIGINT or
// SIGTERM (at once on a second one), and exits 0, 1 on an error or 2 on a
// mistake on the command line.
func Main(entries ...pluginhost.Entry) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel() // the first signal starts a graceful shutdown
		<-sigs
		fmt.Fprintln(os.Stderr, "reso: second signal: exiting now")
		os.Exit(1)
	}()
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, entries)
	cancel()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err as one line and returns the exit status: 0 without
// an error or for -h, 2 for a mistake on the command line, 1 otherwise.
func exitCode(err error, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "reso:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "reso:", err)
		return 1
	}
}

// run is the whole program, with the compiled-in plugins entries; Main
// only wires signals and the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, entries []pluginhost.Entry) error {
	if len(args) > 0 {
		switch args[0] {
		case "plugin":
			return runPlugin(ctx, args[1:], stderr, entries)
		case "admin-token":
			return runAdminToken(args[1:], stdout)
		case "user":
			return runUser(ctx, args[1:], stdin, stdout, stderr)
		}
	}
	cfg, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	cfg.compiled = entries
	if cfg.version {
		fmt.Fprintln(stdout, "reso", versionString())
		return nil
	}
	logger := newLogger(cfg.logFormat, stderr)
	// Bind first: a port in use stops the server before it creates files.
	ln, err := listen(cfg.addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	cfg.ops = &ops{}
	if cfg.adminAddr != "" {
		aln, err := listenAdmin(cfg.adminAddr)
		if err != nil {
			return err
		}
		cfg.ops.metrics = newMetrics(cfg.ops)
		defer serveAdmin(aln, cfg.ops, cfg.pprof, logger)()
	}
	if cfg.fleet.on() {
		// A node of a fleet keeps no state of its own on disk.
		nc, err := cfg.fleet.connect(logger)
		if err != nil {
			return err
		}
		defer nc.Close()
		cfg.nats = nc
	} else if err := statePaths(&cfg.db, &cfg.secretFile); err != nil {
		return err
	}
	h, cleanup, err := build(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer cleanup()
	return serve(ctx, cfg, ln, h, logger)
}

// usage prints the help of reso -h.
func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: reso [flags]
       reso user add|passwd|remove EMAIL [-db FILE]   (password read from standard input)
       reso user list [-db FILE]
       reso admin-token [-secret-file FILE]
       reso plugin NAME                               (internal: started by reso -isolate)

Serves the bundled plugins on -addr: the example application
(configuration, file listing and download, users, a private resource), the
resource channel (a tree of resources that clients follow over a WebSocket
at /channel, plain HTTP and GETs kept open under /channel/), call control
(/login/, /call, /user), the live console (/console/; / redirects there)
and, with -www, a web app's static files. The login database and the
instance secret live in a per-user state directory unless -db and
-secret-file say otherwise: $XDG_STATE_HOME/reso, else ~/.local/state/reso
(created 0700, files 0600). The files plugin never lists or serves them.

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
