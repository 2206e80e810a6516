// Command reso serves the reso example application on port 8000: the
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
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
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
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
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

// run is the whole program; main only wires signals and the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "plugin":
			return runPlugin(ctx, args[1:], stderr)
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

Serves the example application (configuration, file listing and download,
users, a private resource) on -addr. The login database and the instance
secret live in a per-user state directory unless -db and -secret-file say
otherwise: $XDG_STATE_HOME/reso, else ~/.local/state/reso (created 0700,
files 0600). The files plugin never lists or serves them.

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
