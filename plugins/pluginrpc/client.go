package pluginrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
	"github.com/reso-project/reso/plugins/pluginrpc/pluginv2"
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

// inlineBody is the largest request body sent with the request; a longer
// body, or one of unknown length, is pulled by the plugin when it reads.
const inlineBody = 64 << 10

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
	// its handshake; 0 means 10 seconds.
	StartTimeout time.Duration
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

	mu     sync.Mutex // serializes Routes and (re)binding a process
	host   plugins.Host
	routes []*pluginv2.Route
	built  []plugins.Route
}

// conn is one plugin process.
type conn struct {
	pc     *plugin.Client
	rpc    pluginv2.PluginClient
	broker *plugin.GRPCBroker
	exited context.Context // done when the process exits
	pool   *streamPool     // the idle Exchange streams
	pid    int
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
		cfg.StartTimeout = 10 * time.Second
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
	prog := filepath.Base(cmd.Path)
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  handshake,
		Plugins:          pluginSet(nil),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     timeout,
		Logger:           newHclog(c.log, prog),
		Stderr:           newLineWriter(c.log, "stderr"),
		SyncStdout:       newLineWriter(c.log, "stdout"),
		SyncStderr:       newLineWriter(c.log, "stderr"),
		GRPCDialOptions: []grpc.DialOption{
			// A fixed window bounds what a download buffers in the host.
			grpc.WithInitialWindowSize(1 << 20),
			grpc.WithInitialConnWindowSize(4 << 20),
		},
	})
	stop := context.AfterFunc(ctx, pc.Kill)
	defer stop()
	rpcClient, err := pc.Client()
	if err != nil {
		pc.Kill()
		return nil, c.startError(err)
	}
	raw, err := rpcClient.Dispense(PluginName)
	if err != nil {
		pc.Kill()
		return nil, fmt.Errorf("pluginrpc: plugin %q: %w", c.cfg.Name, err)
	}
	cn, ok := raw.(*conn)
	if !ok {
		pc.Kill()
		return nil, fmt.Errorf("pluginrpc: plugin %q: dispensed %T", c.cfg.Name, raw)
	}
	cn.pc = pc
	cn.pid, _ = strconv.Atoi(pc.ID())
	cn.pool = newStreamPool(cn.exited, cn.rpc)
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
		rs, err := c.bind(ctx, cn, c.host)
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

// bind serves the host's services to process cn and asks it for its routes.
func (c *Client) bind(ctx context.Context, cn *conn, host plugins.Host) ([]*pluginv2.Route, error) {
	id := cn.broker.NextId()
	hs := &hostServer{host: host, bodies: &c.bodies}
	go cn.broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		s := grpc.NewServer(opts...)
		pluginv2.RegisterHostServer(s, hs)
		return s
	})
	resp, err := cn.rpc.Routes(ctx, &pluginv2.RoutesRequest{HostBrokerId: id, Capabilities: capabilities(host)})
	if err != nil {
		return nil, fmt.Errorf("pluginrpc: plugin %q: routes: %s", c.cfg.Name, status.Convert(err).Message())
	}
	if e := resp.GetError(); e != nil {
		return nil, fmt.Errorf("pluginrpc: plugin %q: routes: %w", c.cfg.Name, decodeError(e))
	}
	return resp.GetRoutes(), nil
}

func sameRoutes(a, b []*pluginv2.Route) bool {
	return slices.EqualFunc(a, b, func(x, y *pluginv2.Route) bool { return proto.Equal(x, y) })
}

// Routes asks the plugin for its routes (once: later calls return the same
// routes) and serves host to it. The handlers forward to the plugin process.
func (c *Client) Routes(ctx context.Context, host plugins.Host) ([]plugins.Route, error) {
	if host == nil {
		return nil, fmt.Errorf("pluginrpc: plugin %q: Routes: nil host", c.cfg.Name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.built != nil {
		return slices.Clone(c.built), nil
	}
	cn := c.cur.Load()
	if cn == nil {
		return nil, fmt.Errorf("pluginrpc: plugin %q: %w", c.cfg.Name, ErrUnavailable)
	}
	rs, err := c.bind(ctx, cn, host)
	if err != nil {
		return nil, err
	}
	c.host, c.routes = host, rs
	built := make([]plugins.Route, len(rs))
	for i, r := range rs {
		built[i] = decodeRoute(r)
		if r.GetHasHandler() {
			built[i].Handler = &remoteHandler{c: c, route: uint32(i)}
		}
		if r.GetHasSession() {
			built[i].Session = &remoteSession{c: c, route: uint32(i)}
		}
	}
	c.built = built
	return slices.Clone(built), nil
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

// Shutdown calls the plugin's Close (plugins.Closer), if it has one, in
// its process, and returns its error; the process keeps running until
// Close. The host calls it at shutdown (see plugins.Mount.Close).
func (c *Client) Shutdown(ctx context.Context) error {
	cn := c.cur.Load()
	if cn == nil {
		return nil
	}
	resp, err := cn.rpc.Close(ctx, &pluginv2.ClosePluginRequest{})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("pluginrpc: plugin %q: close: %s", c.cfg.Name, status.Convert(err).Message())
	}
	if e := resp.GetError(); e != nil {
		return decodeError(e)
	}
	return nil
}

// kill ends the process (gracefully first, as go-plugin does); the
// requests waiting on it fail.
func (cn *conn) kill() {
	cn.pc.Kill()
}

// remoteHandler forwards the requests of one route to the plugin process.
type remoteHandler struct {
	c     *Client
	route uint32
}

// Handle sends req to the plugin and returns its answer. The request's
// context crosses: cancelling it cancels the handler's context. When the
// request's context ends first, or the handler fails because it ended, the
// error is the context's own (context.Canceled when the client went away),
// as in process: never a new error with its text.
func (h *remoteHandler) Handle(ctx context.Context, req *core.Request) (*core.Response, error) {
	c := h.c
	cn := c.cur.Load()
	if cn == nil {
		return nil, ErrUnavailable
	}
	m := &pluginv2.HandleRequest{Route: h.route, Request: encodeRequest(req)}
	if req.Body != nil {
		body, token := c.bodies.encode(req.Body, req.ContentLength)
		if token != 0 {
			defer c.bodies.remove(token)
		}
		m.Request.Body = body
	}
	resp, err := cn.pool.call(ctx, m)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		switch status.Code(err) {
		case codes.Unavailable, codes.Canceled, codes.Aborted:
			return nil, ErrUnavailable
		}
		return nil, fmt.Errorf("pluginrpc: plugin %q: %s", c.cfg.Name, status.Convert(err).Message())
	}
	if e := resp.GetError(); e != nil {
		err := decodeError(e)
		if ctxErr := ctx.Err(); ctxErr != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			return nil, ctxErr
		}
		return nil, err
	}
	r := resp.GetResponse()
	if r == nil {
		return nil, nil
	}
	out := decodeResponseFields(r)
	if h := r.GetStream(); h != 0 {
		out.Stream = &remoteEvents{rpc: cn.rpc, handle: h}
	}
	if ct := r.GetContent(); ct != nil {
		out.Content = &core.Content{
			Name:     string(ct.GetName()),
			ModTime:  decodeTime(ct.GetModTime()),
			Size:     ct.GetSize(),
			ReaderAt: &remoteContent{ctx: ctx, rpc: cn.rpc, handle: ct.GetHandle(), size: ct.GetSize()},
		}
	}
	return out, nil
}

// maxIdleStreams bounds the idle Exchange streams kept per plugin process.
const maxIdleStreams = 128

// streamPool holds the idle Exchange streams of one plugin process. A
// request takes one (or opens one), sends itself, waits for the answer on
// the same stream and puts it back: one message each way, and the answer
// wakes the waiting handler directly.
type streamPool struct {
	ctx context.Context // the process's life
	rpc pluginv2.PluginClient

	mu   sync.Mutex
	idle []*exchangeStream
}

type exchangeStream struct {
	stream pluginv2.Plugin_ExchangeClient
	cancel context.CancelFunc
}

func newStreamPool(ctx context.Context, rpc pluginv2.PluginClient) *streamPool {
	return &streamPool{ctx: ctx, rpc: rpc}
}

// call sends m on an idle stream and returns the answer. When ctx ends
// first, the stream is cancelled (which cancels the handler's context in
// the plugin) and dropped.
func (p *streamPool) call(ctx context.Context, m *pluginv2.HandleRequest) (*pluginv2.HandleResponse, error) {
	s, err := p.get()
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, s.cancel)
	err = s.stream.Send(m)
	var resp *pluginv2.HandleResponse
	if err == nil {
		resp, err = s.stream.Recv()
	} else {
		// Send reports io.EOF for a stream that ended; Recv has the reason.
		_, err = s.stream.Recv()
	}
	if !stop() {
		return nil, ctx.Err()
	}
	if err != nil {
		s.cancel()
		return nil, err
	}
	p.put(s)
	return resp, nil
}

func (p *streamPool) get() (*exchangeStream, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		s := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return s, nil
	}
	p.mu.Unlock()
	ctx, cancel := context.WithCancel(p.ctx)
	stream, err := p.rpc.Exchange(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	return &exchangeStream{stream: stream, cancel: cancel}, nil
}

func (p *streamPool) put(s *exchangeStream) {
	p.mu.Lock()
	if len(p.idle) < maxIdleStreams {
		p.idle = append(p.idle, s)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	_ = s.stream.CloseSend()
	s.cancel()
}

// bodyTable holds the request bodies that plugins pull with Host.ReadBody.
type bodyTable struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]*bodySource
}

type bodySource struct {
	mu   sync.Mutex
	r    io.Reader
	done bool
}

// encode returns the body message of r: all of it inline when it is short
// and its length declared, else a token for the plugin to pull it with.
func (t *bodyTable) encode(r io.Reader, contentLength int64) (*pluginv2.Body, uint64) {
	b := &pluginv2.Body{Present: true}
	if r == http.NoBody {
		return b, 0
	}
	if contentLength >= 0 && contentLength <= inlineBody {
		data, err := readAtMost(r, int(contentLength)+1)
		b.Data = data
		switch {
		case err == io.EOF:
			return b, 0
		case err != nil:
			b.Error = encodeBodyError(err)
			return b, 0
		}
		// Longer than declared: the rest is pulled.
	}
	t.mu.Lock()
	t.next++
	token := t.next
	t.m[token] = &bodySource{r: r}
	t.mu.Unlock()
	b.Token = token
	return b, token
}

func (t *bodyTable) get(token uint64) *bodySource {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[token]
}

func (t *bodyTable) remove(token uint64) {
	t.mu.Lock()
	delete(t.m, token)
	t.mu.Unlock()
}

// readAtMost reads from r until it has n bytes (err nil) or r fails (err
// io.EOF at the end).
func readAtMost(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, n)
	got := 0
	for got < n {
		m, err := r.Read(buf[got:])
		got += m
		if err != nil {
			return buf[:got], err
		}
	}
	return buf, nil
}

// hostServer serves the host's services to one plugin process.
type hostServer struct {
	pluginv2.UnimplementedHostServer
	host   plugins.Host
	bodies *bodyTable
}

// errNoSettings answers a settings call when the host offers none (the
// plugin's host did not offer them either, so only a plugin that ignored
// that gets it).
var errNoSettings = errors.New("pluginrpc: the host offers no settings")

// Setting returns a shared setting; the host's error crosses in band.
func (s *hostServer) Setting(ctx context.Context, req *pluginv2.SettingRequest) (*pluginv2.SettingResponse, error) {
	settings, ok := s.host.(plugins.Settings)
	if !ok {
		return &pluginv2.SettingResponse{Error: encodeError(errNoSettings)}, nil
	}
	v, err := settings.Setting(ctx, string(req.GetName()))
	if err != nil {
		return &pluginv2.SettingResponse{Error: encodeError(err)}, nil
	}
	return &pluginv2.SettingResponse{Value: wire(v)}, nil
}

// SetSetting changes a shared setting; the host's error crosses in band.
func (s *hostServer) SetSetting(ctx context.Context, req *pluginv2.SetSettingRequest) (*pluginv2.SetSettingResponse, error) {
	settings, ok := s.host.(plugins.Settings)
	if !ok {
		return &pluginv2.SetSettingResponse{Error: encodeError(errNoSettings)}, nil
	}
	if err := settings.SetSetting(ctx, string(req.GetName()), string(req.GetValue())); err != nil {
		return &pluginv2.SetSettingResponse{Error: encodeError(err)}, nil
	}
	return &pluginv2.SetSettingResponse{}, nil
}

// ReadBody reads the next bytes of a request body.
func (s *hostServer) ReadBody(_ context.Context, req *pluginv2.ReadBodyRequest) (*pluginv2.ReadBodyResponse, error) {
	src := s.bodies.get(req.GetToken())
	if src == nil {
		return nil, status.Error(codes.NotFound, "pluginrpc: no such request body (the request is over)")
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.done {
		return &pluginv2.ReadBodyResponse{Eof: true}, nil
	}
	n := int(min(max(req.GetMax(), 1), chunkSize))
	data, err := readAtMost(src.r, n)
	resp := &pluginv2.ReadBodyResponse{Data: data}
	switch {
	case err == io.EOF:
		src.done, resp.Eof = true, true
	case err != nil:
		src.done, resp.Error = true, encodeBodyError(err)
	}
	return resp, nil
}

var (
	_ plugins.Plugin      = (*Client)(nil)
	_ plugins.Shutdowner  = (*Client)(nil)
	_ io.Closer           = (*Client)(nil)
	_ core.Handler        = (*remoteHandler)(nil)
	_ pluginv2.HostServer = (*hostServer)(nil)
)
