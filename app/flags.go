package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/reso-project/reso/pluginhost"
)

// options holds the command-line flags of the server.
type options struct {
	addr            string
	db              string
	dbSync          dbSync
	login           string
	loginSet        bool // -login was given explicitly
	users           string
	compiled        []pluginhost.Entry // the plugins compiled in (Main's)
	directory       string
	bodyLimit       int64
	readTimeout     time.Duration
	shutdownTimeout time.Duration
	secretFile      string
	digest          bool
	signedCookies   bool
	loginAttempts   int
	loginBackoff    time.Duration
	isolate         string
	plugins         pluginFlags
	pluginOpt       bool
	version         bool
	accessLog       bool
	adminAddr       string
	pprof           bool
	ops             *ops // not a flag: set by run for the parts that report to it
	channel         channelOptions
	call            callOptions
	www             wwwOptions
	tls             tlsOptions
	logFormat       logFormat
	fleet           fleetOptions
	nats            *nats.Conn // not a flag: the connection of -nats, set by run
}

// usageError is a mistake on the command line: main prints it as one line
// and exits with status 2, before anything is created on disk.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// pluginFlags collects repeated -plugin NAME=PATH flags in order.
type pluginFlags []pluginFlag

type pluginFlag struct{ name, path string }

func (p *pluginFlags) String() string {
	parts := make([]string, len(*p))
	for i, f := range *p {
		parts[i] = f.name + "=" + f.path
	}
	return strings.Join(parts, ",")
}

func (p *pluginFlags) Set(s string) error {
	name, path, ok := strings.Cut(s, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("want NAME=PATH")
	}
	*p = append(*p, pluginFlag{name: name, path: path})
	return nil
}

// durationFlag is a time.Duration flag that explains a number without a
// unit and refuses negative values.
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return fmt.Errorf("use a unit, e.g. %ss", s)
		}
		return errors.New("want a duration such as 30s or 1m")
	}
	if d < 0 {
		return errors.New("must not be negative")
	}
	*f.d = d
	return nil
}

// newFlagSet returns a flag set that reports errors only through Parse's
// result, so the caller prints one line.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseError turns an error of flag.FlagSet.Parse into a usage error
// ("invalid value "5" for flag -read-timeout: use a unit, e.g. 5s").
func parseError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return &usageError{msg: err.Error()}
}

// serverFlags declares the server's flags on fs, filling cfg.
func serverFlags(fs *flag.FlagSet, cfg *options) {
	fs.StringVar(&cfg.addr, "addr", ":8000", "address to listen on, HOST:PORT (HOST may be empty for all interfaces)")
	fs.StringVar(&cfg.db, "db", "", "SQLite file of the login records (default <state>/reso.db; :memory: keeps nothing)")
	dbSyncFlag(fs, &cfg.dbSync)
	fs.StringVar(&cfg.login, "login", defaultLogin, "the example user, EMAIL:PASSWORD (split at the first colon); '' registers none and removes "+defaultEmail)
	fs.StringVar(&cfg.users, "users", "", "JSON file with the list of user records bound at /users (default: two example records)")
	fs.StringVar(&cfg.directory, "directory", ".", "initial directory of file requests (GET /config shows it)")
	fs.Int64Var(&cfg.bodyLimit, "body-limit", 1<<20, "largest request body in bytes (413 past it)")
	cfg.readTimeout = time.Minute
	fs.Var(durationFlag{&cfg.readTimeout}, "read-timeout", "time limit for reading a whole request, e.g. 30s")
	cfg.shutdownTimeout = 10 * time.Second
	fs.Var(durationFlag{&cfg.shutdownTimeout}, "shutdown-timeout", "grace period for requests in flight at SIGTERM or SIGINT")
	fs.StringVar(&cfg.secretFile, "secret-file", "", "file holding the instance secret, created 0600 when missing (default <state>/secret)")
	fs.BoolVar(&cfg.digest, "digest", false, "also offer HTTP Digest (a second WWW-Authenticate challenge)")
	fs.BoolVar(&cfg.signedCookies, "signed-cookies", false, "sign the token and user_id cookies with securecookie")
	fs.IntVar(&cfg.loginAttempts, "login-attempts", 5, "failed logins per account and client address answered before 429 Too Many Requests (4x per address over all accounts; 0 turns login throttling off)")
	cfg.loginBackoff = time.Second
	fs.Var(durationFlag{&cfg.loginBackoff}, "login-backoff", "first delay (Retry-After) of a throttled client; doubles with every further failure, up to 15m")
	fs.StringVar(&cfg.isolate, "isolate", "", "bundled plugins to run as child processes: names separated by commas, or all")
	fs.Var(&cfg.plugins, "plugin", "load a third-party plugin binary, NAME=PATH (repeatable; its routes go after those of all bundled plugins, in flag order)")
	fs.BoolVar(&cfg.pluginOpt, "plugin-optional", false, "start without a -plugin that fails to load instead of failing")
	fs.BoolVar(&cfg.accessLog, "access-log", false, "log one line per request to standard error")
	logFormatFlag(fs, &cfg.logFormat)
	tlsFlags(fs, &cfg.tls)
	channelFlags(fs, &cfg.channel)
	callFlags(fs, &cfg.call)
	fleetFlags(fs, &cfg.fleet, true)
	wwwFlags(fs, &cfg.www)
	fs.StringVar(&cfg.adminAddr, "admin-addr", "", "also serve /metrics (Prometheus), /healthz and /readyz on this address, e.g. 127.0.0.1:9090 (default off)")
	fs.BoolVar(&cfg.pprof, "pprof", false, "also serve Go's profiles (/debug/pprof/) on -admin-addr, which must then be a loopback address")
	fs.BoolVar(&cfg.version, "version", false, "print the version and exit")
}

// parseFlags parses and validates the server's flags. It touches nothing on
// disk: every mistake it can find is found before a file is created.
func parseFlags(args []string, stdout io.Writer) (*options, error) {
	cfg := &options{}
	fs := newFlagSet("reso")
	serverFlags(fs, cfg)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout, fs)
		}
		return nil, parseError(err)
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "login" {
			cfg.loginSet = true
		}
	})
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q (subcommands: user, admin-token, plugin; see reso -h)", fs.Arg(0))
	}
	if cfg.version {
		return cfg, nil
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// validate checks the values that flag parsing alone cannot.
func (cfg *options) validate() error {
	if err := validateAddr(cfg.addr); err != nil {
		return err
	}
	if err := validateAdmin(cfg.adminAddr, cfg.pprof); err != nil {
		return err
	}
	if err := cfg.call.validate(); err != nil {
		return err
	}
	if err := cfg.channel.validate(); err != nil {
		return err
	}
	if err := cfg.tls.validate(); err != nil {
		return err
	}
	if err := cfg.fleet.validate(); err != nil {
		return err
	}
	if err := cfg.www.validate(); err != nil {
		return err
	}
	if cfg.bodyLimit <= 0 {
		return usagef("-body-limit must be a positive number of bytes")
	}
	if cfg.loginAttempts < 0 {
		return usagef("-login-attempts must not be negative (0 turns throttling off)")
	}
	if cfg.loginBackoff == 0 {
		return usagef("-login-backoff must be more than 0 (e.g. 1s)")
	}
	if cfg.readTimeout == 0 {
		return usagef("-read-timeout must be more than 0 (e.g. 30s)")
	}
	if cfg.login != "" {
		if email, _, ok := strings.Cut(cfg.login, ":"); !ok || email == "" {
			return usagef("-login: want EMAIL:PASSWORD, or '' for no example user")
		}
	}
	st, err := os.Stat(cfg.directory)
	switch {
	case err != nil:
		return usagef("-directory %s: %s", cfg.directory, describe(err))
	case !st.IsDir():
		return usagef("-directory %s: not a directory", cfg.directory)
	}
	if cfg.users != "" {
		if _, err := os.Stat(cfg.users); err != nil {
			return usagef("-users %s: %s", cfg.users, describe(err))
		}
	}
	if cfg.db == ":memory:" || cfg.db == "" {
		return nil
	}
	if st, err := os.Stat(cfg.db); err == nil && st.IsDir() {
		return usagef("-db %s: a directory, want a file", cfg.db)
	}
	return nil
}

// validateAddr checks a listen address: HOST:PORT with a port from 0 to
// 65535. A bare port number gets a hint.
func validateAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if _, nerr := strconv.Atoi(addr); nerr == nil {
			return usagef("-addr %s: missing colon: did you mean :%s?", addr, addr)
		}
		return usagef("-addr %s: want HOST:PORT, e.g. :8000 or 127.0.0.1:8000", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		if _, err := net.LookupPort("tcp", port); err != nil {
			return usagef("-addr %s: bad port %q", addr, port)
		}
	}
	if strings.ContainsAny(host, " /") {
		return usagef("-addr %s: bad host %q", addr, host)
	}
	return nil
}

// describe names a file error in words.
func describe(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "no such file or directory"
	case errors.Is(err, os.ErrPermission):
		return "permission denied"
	}
	return err.Error()
}

// The example user registered at start (see -login).
const (
	defaultEmail = "user@example.org"
	defaultLogin = defaultEmail + ":example"
)
