package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// options holds the command-line flags of the server.
type options struct {
	addr          string
	db            string
	login         string
	users         string
	directory     string
	bodyLimit     int64
	readTimeout   time.Duration
	secretFile    string
	digest        bool
	signedCookies bool
	loginAttempts int
	loginBackoff  time.Duration
	isolate       string
	plugins       pluginFlags
	pluginOpt     bool
	version       bool
	accessLog     bool
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
		return fmt.Errorf("want NAME=PATH, got %q", s)
	}
	*p = append(*p, pluginFlag{name: name, path: path})
	return nil
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	cfg := &options{}
	fs := flag.NewFlagSet("reso", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.addr, "addr", ":8000", "address to listen on")
	fs.StringVar(&cfg.db, "db", "reso.db", "SQLite file of the login records (:memory: keeps nothing)")
	fs.StringVar(&cfg.login, "login", defaultLogin, "the example user, EMAIL:PASSWORD (split at the first colon)")
	fs.StringVar(&cfg.users, "users", "", "JSON file with the list of user records bound at /users (default: two example records)")
	fs.StringVar(&cfg.directory, "directory", ".", "initial directory of file requests (GET /config shows it)")
	fs.Int64Var(&cfg.bodyLimit, "body-limit", 1<<20, "largest request body in bytes (413 past it)")
	fs.DurationVar(&cfg.readTimeout, "read-timeout", time.Minute, "time limit for reading a whole request")
	fs.StringVar(&cfg.secretFile, "secret-file", "", "file holding the instance secret (created 0600 when missing; default: random per process)")
	fs.BoolVar(&cfg.digest, "digest", false, "also offer HTTP Digest (a second WWW-Authenticate challenge)")
	fs.BoolVar(&cfg.signedCookies, "signed-cookies", false, "sign the token and user_id cookies with securecookie")
	fs.IntVar(&cfg.loginAttempts, "login-attempts", 5, "failed logins per account and client address answered before 429 Too Many Requests (4× per address over all accounts; 0 turns login throttling off)")
	fs.DurationVar(&cfg.loginBackoff, "login-backoff", time.Second, "first delay (Retry-After) of a throttled client; doubles with every further failure, up to 15m")
	fs.StringVar(&cfg.isolate, "isolate", "", "bundled plugins to run as child processes: names separated by commas, or all")
	fs.Var(&cfg.plugins, "plugin", "load a third-party plugin binary, NAME=PATH (repeatable; its routes go after those of all bundled plugins, in flag order)")
	fs.BoolVar(&cfg.pluginOpt, "plugin-optional", false, "start without a -plugin that fails to load instead of failing")
	fs.BoolVar(&cfg.accessLog, "access-log", false, "log one line per request to standard error")
	fs.BoolVar(&cfg.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.bodyLimit <= 0 {
		return nil, fmt.Errorf("-body-limit must be positive")
	}
	if cfg.loginAttempts < 0 {
		return nil, fmt.Errorf("-login-attempts must not be negative")
	}
	if cfg.loginBackoff <= 0 {
		return nil, fmt.Errorf("-login-backoff must be positive")
	}
	if _, _, ok := strings.Cut(cfg.login, ":"); !ok && cfg.login != "" {
		return nil, fmt.Errorf("-login: want EMAIL:PASSWORD")
	}
	return cfg, nil
}

// defaultLogin is the example user of SPEC 2.7.
const defaultLogin = "user@example.org:example"
