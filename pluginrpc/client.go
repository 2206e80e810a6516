package pluginrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginrpc/pluginv3"
	"github.com/reso-project/reso/plugins"
)

// ErrUnavailable answers the routes of a plugin whose process is not
// running (it exited or was killed and is being restarted).
var ErrUnavailable = core.Status(http.StatusServiceUnavailable, "Plugin Unavailable")

// Restart backoff: the first restart waits minBackoff, each failed start
// doubles the wait up to maxBackoff; a process that ran for resetBackoff
// starts the count again.
const (
	minBackoff   = 100 * time.Millisecond
	maxBackoff   = 2 * time.Second
	resetBackoff = 10 * time.Second
)

// Config configures a plugin for [Load].
type Config struct {
	// Name names the plugin in errors and logs. Required.
	Name string
	// Cmd returns a new, unstarted command that runs the plugin program;
	// it is called again for every restart. Stdin, Stdout and Stderr must be
	// left unset (go-plugin uses them). Required.
	Cmd func() *exec.Cmd
	// Logger receives the plugin's standard error, line by line, and the
	// supervisor's messages. Nil discards them.
	Logger *slog.Logger
	// StartTimeout bounds the start of one plugin process, up to the end of
	// its handshake; 0 means a minute (go-plugin's default).
	StartTimeout time.Duration
	// Watch, when set, runs the GETs kept open of the host's tree
	// (plugins.Services.Tree) that the plugin's doors.Watch asks for, in
	// the host: the application passes doors.Watch. A notification to
	// many of them then crosses the boundary no time at all (watch.go).
	// Nil: the plugin runs its streams itself, as an older host makes it.
	Watch WatchFunc
	// Door, when set, serves in the host the sessions of the plugin's
	// door routes: a route whose session handler is the WebSocket door
	// onto the host's tree (doors.Session over plugins.Services.Tree),
	// which the plugin declares as such. The application passes
	// doors.NewSession. None of those sessions'
	// messages then crosses the boundary, and they outlive the plugin's
	// process (door.go). Nil: the plugin serves them, as an older host
	// makes it.
	Door DoorFunc
}

// Client is the host's end of a plugin running in a child process: a
// [plugins.Plugin] whose route handlers forward to the process, which it
// supervises and restarts. Close it to end the process.
type Client struct {
	cfg    Config
	log    *slog.Logger
	bodies bodyTable

	ctx    context.Context // the client's life; Close cancels it
	cancel context.CancelFunc
	done   chan struct{} // closed when the supervisor has stopped

	cur atomic.Pointer[conn] // the running process; nil while restarting
	// restarts counts the processes started after the first.
	restarts atomic.Uint64
	// crossed counts the messages that carried frames for a session or
	// events of a stream across the boundary (splice.go).
	crossed crossings

	mu     sync.Mutex // serializes Routes and (re)binding a process
	host   *plugins.Services
	routes []*pluginv3.Route
	built  []plugins.Route
}

// conn is one plugin process.
type conn struct {
	pc     *plugin.Client
	rpc    pluginv3.PluginClient
	broker *plugin.GRPCBroker
	exited context.Context // done when the process exits
	pool   *streamPool     // the idle Exchange streams, for a plugin without Requests
	// requests carries the requests on the Requests call.
	requests *requestMux
	// sessions are the Sessions calls that carry the sessions.
	sessions *sessionMux
	pid      int
	// sockets is the directory of the process's socket (socketdir.go),
	// removed once the process ended; "" for none.
	sockets string
}

// Load starts the plugin program of cfg and completes go-plugin's handshake.
// ctx bounds the start only; the client lives until Close. An error names
// the plugin: a program that writes to standard output before the handshake
// or speaks another protocol version fails here.
func Load(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Name == "" {
		return nil, errors.New("pluginrpc: Load: no plugin name")
	}
	if cfg.Cmd == nil {
		return nil, fmt.Errorf("pluginrpc: plugin %q: no command", cfg.Name)
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = time.Minute
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{cfg: cfg, log: logger.With("plugin", cfg.Name), done: make(chan struct{})}
	c.bodies.m = make(map[uint64]*bodySource)
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	cn, err := c.start(ctx)
	if err != nil {
		c.cancel()
		return nil, err
	}
	c.cur.Store(cn)
	go c.supervise(cn)
	return c, nil
}

// start runs one plugin process and opens its request stream.
func (c *Client) start(ctx context.Context) (*conn, error) {
	timeout := c.cfg.StartTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pluginrpc: plugin %q: %w", c.cfg.Name, err)
	}
	cmd := c.cfg.Cmd()
	if cmd == nil {
		return nil, fmt.Errorf("pluginrpc: plugin %q: no command", c.cfg.Name)
	}
	setParentDeathSignal(cmd)
	tlsConf, keys, err := hostMTLS(cmd)
	if err != nil {
		return nil, err
	}
	// The child has its end of the pipe once started; the host's copy
	// goes, whatever the start did.
	defer keys.Close()
	sockets, err := socketDir(cmd)
	if err != nil {
		return nil, fmt.Errorf("pluginrpc: plugin %q: socket directory: %w", c.cfg.Name, err)
	}
	prog := filepath.Base(cmd.Path)
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  handshake,
		Plugins:          pluginSet(nil),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		// Mutual TLS with keys of the host's making (mtls.go), not
		// AutoMTLS's; addEnv put the host's environment in cmd.
		TLSConfig:    tlsConf,
		SkipHostEnv:  true,
		StartTimeout: timeout,
		Logger:       newHclog(c.log, prog),
		Stderr:       newLineWriter(c.log, "stderr"),
		SyncStdout:   newLineWriter(c.log, "stdout"),
		SyncStderr:   newLineWriter(c.log, "stderr"),
		GRPCDialOptions: []grpc.DialOption{
			// A fixed window bounds what a download buffers in the host.
			grpc.WithInitialWindowSize(1 << 20),
			grpc.WithInitialConnWindowSize(4 << 20),
		},
	})
	stop := context.AfterFunc(ctx, pc.Kill)
	defer stop()
	fail := func(err error) (*conn, error) {
		pc.Kill()
		removeSockets(sockets)
		return nil, err
	}
	rpcClient, err := pc.Client()
	if err != nil {
		return fail(c.startError(err))
	}
	raw, err := rpcClient.Dispense(PluginName)
	if err != nil {
		return fail(fmt.Errorf("pluginrpc: plugin %q: %w", c.cfg.Name, err))
	}
	cn, ok := raw.(*conn)
	if !ok {
		return fail(fmt.Errorf("pluginrpc: plugin %q: dispensed %T", c.cfg.Name, raw))
	}
	cn.pc, cn.sockets = pc, sockets
	cn.pid, _ = strconv.Atoi(pc.ID())
	cn.pool = newStreamPool(cn.exited, cn.rpc)
	cn.requests = newRequestMux(cn.exited, cn.rpc)
	return cn, nil
}

// startError names the plugin in a start failure and says what went wrong
// in the handshake, in words.
func (c *Client) startError(err error) error {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "Unrecognized remote plugin message: "):
		line, _, _ := strings.Cut(strings.TrimPrefix(msg, "Unrecognized remote plugin message: "), "\n")
		if line == "" {
			return fmt.Errorf("pluginrpc: plugin %q exited before the handshake (is it a reso plugin? its stderr is in the log)", c.cfg.Name)
		}
		return fmt.Errorf("pluginrpc: plugin %q failed the handshake: it wrote %q to stdout (a plugin must write nothing to stdout; log to stderr)", c.cfg.Name, line)
	case strings.HasPrefix(strings.ToLower(msg), "incompatible api version with plugin"):
		v := "another"
		if _, after, ok := strings.Cut(msg, "Plugin version: "); ok {
			v, _, _ = strings.Cut(after, ",")
		}
		return fmt.Errorf("pluginrpc: plugin %q speaks plugin protocol version %s; this server speaks version %d (rebuild the plugin against this reso)", c.cfg.Name, v, ProtocolVersion)
	case strings.HasPrefix(msg, "plugin exited before we could connect"):
		return fmt.Errorf("pluginrpc: plugin %q exited before the handshake (is it a reso plugin? its stderr is in the log)", c.cfg.Name)
	}
	return fmt.Errorf("pluginrpc: plugin %q failed to start: %w", c.cfg.Name, err)
}

// supervise restarts the plugin process whenever it exits, until Close.
func (c *Client) supervise(cn *conn) {
	defer close(c.done)
	backoff := minBackoff
	for {
		started := time.Now()
		select {
		case <-cn.exited.Done():
		case <-c.ctx.Done():
			c.cur.Store(nil)
			cn.kill()
			return
		}
		c.cur.CompareAndSwap(cn, nil)
		cn.kill()
		c.log.Warn("plugin process exited; restarting", "pid", cn.pid, "ran", time.Since(started).Round(time.Millisecond))
		if time.Since(started) > resetBackoff {
			backoff = minBackoff
		}
		down := time.Now()
		for {
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-c.ctx.Done():
				t.Stop()
				return
			}
			backoff = min(backoff*2, maxBackoff)
			next, err := c.restart()
			if err == nil {
				c.restarts.Add(1)
				cn = next
				c.log.Info("plugin process restarted", "pid", cn.pid, "down", time.Since(down).Round(time.Millisecond))
				break
			}
			if c.ctx.Err() != nil {
				return
			}
			c.log.Error("plugin restart failed", "err", err, "retry", backoff)
		}
	}
}

// restart starts a new process and gives it the host's services and the
// route list again.
func (c *Client) restart() (*conn, error) {
	cn, err := c.start(c.ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx.Err() != nil {
		cn.kill()
		return nil, c.ctx.Err()
	}
	if c.host != nil {
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.StartTimeout)
		rs, err := c.bind(ctx, cn, *c.host)
		cancel()
		if err != nil {
			cn.kill()
			return nil, err
		}
		if !sameRoutes(rs, c.routes) {
			c.log.Error("restarted plugin gives other routes than at start; the route table keeps the first ones")
		}
	}
	c.cur.Store(cn)
	return cn, nil
}

// PID returns the process id of the running plugin process, or 0 while
// none runs.
func (c *Client) PID() int {
	if cn := c.cur.Load(); cn != nil {
		return cn.pid
	}
	return 0
}

// Close ends the plugin process and stops restarting it. In-flight requests
// answer ErrUnavailable. Close is safe to call more than once.
func (c *Client) Close() error {
	c.cancel()
	<-c.done
	return nil
}

// addEnv adds the variables kv (NAME=value) to the environment cmd starts
// with, the host's unless cmd set its own. go-plugin does not add the
// host's (ClientConfig.SkipHostEnv), so a variable added here comes after
// any of the same name that the host has, and wins.
func addEnv(cmd *exec.Cmd, kv ...string) {
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, kv...)
}

// kill ends the process (gracefully first, as go-plugin does); the
// requests waiting on it fail.
func (cn *conn) kill() {
	cn.pc.Kill()
	removeSockets(cn.sockets)
}

var (
	_ plugins.Plugin = (*Client)(nil)
	_ io.Closer      = (*Client)(nil)
)

// Name returns the plugin's name (Config.Name).
func (c *Client) Name() string { return c.cfg.Name }

// Running reports whether the plugin's process is up now: false while it
// is being restarted and after Close.
func (c *Client) Running() bool { return c.cur.Load() != nil }

// Restarts returns how many times the process was started again after it
// exited.
func (c *Client) Restarts() uint64 { return c.restarts.Load() }
