package pluginrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
	"github.com/reso-project/reso/plugins/pluginrpc/pluginv2"
)

// ContentIdle is how long the plugin keeps an open download that the
// host neither reads nor closes.
const ContentIdle = 2 * time.Minute

// chunkSize is the size of the chunks of a download.
const chunkSize = 256 << 10

// server is the plugin's end: it serves the Plugin service for impl.
type server struct {
	pluginv2.UnimplementedPluginServer
	impl     plugins.Plugin
	broker   *plugin.GRPCBroker
	contents *contentTable

	streams *eventTable

	mu       sync.RWMutex
	handlers []core.Handler
	sessions []core.SessionHandler
	host     *remoteHost
	hostConn *grpc.ClientConn
}

func newServer(impl plugins.Plugin, broker *plugin.GRPCBroker) *server {
	return &server{impl: impl, broker: broker, contents: newContentTable(ContentIdle), streams: newEventTable(ContentIdle)}
}

// Routes dials the host's services and asks the plugin for its routes.
func (s *server) Routes(ctx context.Context, req *pluginv2.RoutesRequest) (*pluginv2.RoutesResponse, error) {
	if s.broker == nil {
		return nil, status.Error(codes.FailedPrecondition, "pluginrpc: no broker to reach the host")
	}
	cc, err := s.broker.Dial(req.GetHostBrokerId())
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "pluginrpc: dial the host: %v", err)
	}
	return s.routes(ctx, cc, stringList(req.GetCapabilities()))
}

// routes asks the plugin for its routes, with the host reached through cc.
func (s *server) routes(ctx context.Context, cc *grpc.ClientConn, capabilities []string) (*pluginv2.RoutesResponse, error) {
	host := &remoteHost{client: pluginv2.NewHostClient(cc)}
	rs, err := s.impl.Routes(ctx, host.view(capabilities))
	if err != nil {
		cc.Close()
		return &pluginv2.RoutesResponse{Error: encodeError(err)}, nil
	}
	handlers := make([]core.Handler, len(rs))
	sessions := make([]core.SessionHandler, len(rs))
	out := &pluginv2.RoutesResponse{Routes: make([]*pluginv2.Route, len(rs))}
	for i, r := range rs {
		handlers[i], sessions[i] = r.Handler, r.Session
		out.Routes[i] = encodeRoute(r)
	}
	s.mu.Lock()
	old := s.hostConn
	s.handlers, s.sessions, s.host, s.hostConn = handlers, sessions, host, cc
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return out, nil
}

// Exchange answers the requests of one stream, one after the other, each
// in the stream's goroutine. The host sends a request only on an idle
// stream, and cancels the stream to cancel the request on it.
func (s *server) Exchange(stream pluginv2.Plugin_ExchangeServer) error {
	ctx := stream.Context()
	for {
		m, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		resp := s.handle(ctx, m)
		if err := stream.Send(resp); err != nil {
			if c := resp.GetResponse().GetContent(); c != nil {
				s.contents.close(c.GetHandle())
			}
			if h := resp.GetResponse().GetStream(); h != 0 {
				s.streams.close(h)
			}
			return err
		}
	}
}

// handle runs the handler of req.Route and encodes its answer. A handler
// that panics answers like core.NewPanicError would, and the plugin lives on.
func (s *server) handle(ctx context.Context, m *pluginv2.HandleRequest) (out *pluginv2.HandleResponse) {
	s.mu.RLock()
	handlers, host := s.handlers, s.host
	s.mu.RUnlock()
	i := int(m.GetRoute())
	if i >= len(handlers) || handlers[i] == nil {
		return &pluginv2.HandleResponse{Error: &pluginv2.Error{Message: fmt.Appendf(nil, "pluginrpc: no handler for route %d", i)}}
	}
	req := decodeRequest(ctx, m.GetRequest(), host)
	defer func() {
		if v := recover(); v != nil {
			out = &pluginv2.HandleResponse{Error: encodeError(core.NewPanicError(v))}
		}
	}()
	resp, err := handlers[i].Handle(ctx, req)
	if err != nil {
		return &pluginv2.HandleResponse{Error: encodeError(err)}
	}
	if resp == nil {
		return &pluginv2.HandleResponse{}
	}
	out = &pluginv2.HandleResponse{Response: encodeResponse(resp)}
	if resp.Stream != nil {
		out.Response.Stream = s.streams.open(resp.Stream, req, core.EventStream(req.Header))
	}
	if c := resp.Content; c != nil {
		out.Response.Content = &pluginv2.Content{
			Handle:  s.contents.open(c.ReaderAt),
			Name:    wire(c.Name),
			ModTime: encodeTime(c.ModTime),
			Size:    c.Size,
		}
	}
	return out
}

// decodeRequest rebuilds the request a handler sees.
func decodeRequest(ctx context.Context, m *pluginv2.Request, host *remoteHost) *core.Request {
	req := decodeRequestFields(m)
	if b := m.GetBody(); b.GetPresent() {
		req.Body = &bodyReader{ctx: ctx, host: host, data: b.GetData(), token: b.GetToken(), err: b.GetError()}
	}
	return req
}

// Read streams the bytes of an open download.
func (s *server) Read(req *pluginv2.ReadRequest, stream pluginv2.Plugin_ReadServer) error {
	off, n := req.GetOffset(), req.GetLength()
	if off < 0 || n < 0 {
		return status.Error(codes.InvalidArgument, "pluginrpc: negative offset or length")
	}
	ra, release := s.contents.acquire(req.GetHandle())
	if ra == nil {
		return status.Errorf(codes.NotFound, "pluginrpc: no open content %d", req.GetHandle())
	}
	defer release()
	ctx := stream.Context()
	for n > 0 {
		if err := ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		buf := make([]byte, min(n, chunkSize))
		m, err := ra.ReadAt(buf, off)
		if m > 0 {
			if err := stream.Send(&pluginv2.ReadChunk{Data: buf[:m]}); err != nil {
				return err
			}
			off += int64(m)
			n -= int64(m)
		}
		if err == io.EOF || err == nil && m < len(buf) {
			return nil
		}
		if err != nil {
			return status.Errorf(codes.Internal, "pluginrpc: read content: %v", err)
		}
	}
	return nil
}

// CloseContent releases an open download.
func (s *server) CloseContent(_ context.Context, req *pluginv2.CloseContentRequest) (*pluginv2.CloseContentResponse, error) {
	s.contents.close(req.GetHandle())
	return &pluginv2.CloseContentResponse{}, nil
}

// shutdown releases what the server holds.
func (s *server) shutdown() {
	s.contents.closeAll()
	s.streams.closeAll()
	s.mu.Lock()
	if s.hostConn != nil {
		s.hostConn.Close()
		s.hostConn = nil
	}
	s.mu.Unlock()
}

// contentTable holds the open downloads of a plugin by handle.
type contentTable struct {
	idle time.Duration

	mu   sync.Mutex
	next uint64
	m    map[uint64]*openContent
}

type openContent struct {
	ra      io.ReaderAt
	readers int
	timer   *time.Timer
}

func newContentTable(idle time.Duration) *contentTable {
	return &contentTable{idle: idle, m: make(map[uint64]*openContent)}
}

// open keeps ra and returns its handle (never 0).
func (t *contentTable) open(ra io.ReaderAt) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	h := t.next
	t.m[h] = &openContent{ra: ra, timer: time.AfterFunc(t.idle, func() { t.expire(h) })}
	return h
}

// acquire returns the content of handle h for reading, or nil.
func (t *contentTable) acquire(h uint64) (io.ReaderAt, func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.m[h]
	if c == nil || c.ra == nil {
		return nil, nil
	}
	c.readers++
	c.timer.Stop()
	return c.ra, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		c.readers--
		if c.readers == 0 && t.m[h] == c {
			c.timer.Reset(t.idle)
		}
	}
}

// expire closes content h unless it is being read.
func (t *contentTable) expire(h uint64) {
	t.mu.Lock()
	c := t.m[h]
	if c == nil || c.readers > 0 {
		t.mu.Unlock()
		return
	}
	delete(t.m, h)
	t.mu.Unlock()
	closeReaderAt(c.ra)
}

// close closes content h.
func (t *contentTable) close(h uint64) {
	t.mu.Lock()
	c := t.m[h]
	delete(t.m, h)
	t.mu.Unlock()
	if c != nil {
		c.timer.Stop()
		closeReaderAt(c.ra)
	}
}

func (t *contentTable) closeAll() {
	t.mu.Lock()
	m := t.m
	t.m = make(map[uint64]*openContent)
	t.mu.Unlock()
	for _, c := range m {
		c.timer.Stop()
		closeReaderAt(c.ra)
	}
}

func closeReaderAt(ra io.ReaderAt) {
	if c, ok := ra.(io.Closer); ok {
		_ = c.Close()
	}
}

// remoteHost is the host's services as the plugin sees them.
type remoteHost struct {
	client pluginv2.HostClient
}

// view returns the host the plugin sees: one that offers exactly the
// capabilities the host named (plugins.Host's capability interfaces), so
// that a type assertion in the plugin answers as it would in process.
func (h *remoteHost) view(capabilities []string) plugins.Host {
	if slices.Contains(capabilities, capSettings) {
		return settingsHost{h}
	}
	return hostOnly{}
}

// hostOnly is a host that offers no service.
type hostOnly struct{}

// settingsHost is a host that offers plugins.Settings.
type settingsHost struct{ h *remoteHost }

// Setting asks the host for a shared setting.
func (s settingsHost) Setting(ctx context.Context, name string) (string, error) {
	return s.h.Setting(ctx, name)
}

// SetSetting asks the host to change a shared setting.
func (s settingsHost) SetSetting(ctx context.Context, name, value string) error {
	return s.h.SetSetting(ctx, name, value)
}

// Setting asks the host for a shared setting. The host's own error comes
// back as it was written; a failure to reach the host is the context's
// error when the context ended, else names the setting.
func (h *remoteHost) Setting(ctx context.Context, name string) (string, error) {
	resp, err := h.client.Setting(ctx, &pluginv2.SettingRequest{Name: wire(name)})
	if err != nil {
		return "", hostCallError(ctx, err, "host setting", name)
	}
	if e := resp.GetError(); e != nil {
		return "", decodeError(e)
	}
	return string(resp.GetValue()), nil
}

// SetSetting asks the host to change a shared setting.
func (h *remoteHost) SetSetting(ctx context.Context, name, value string) error {
	resp, err := h.client.SetSetting(ctx, &pluginv2.SetSettingRequest{Name: wire(name), Value: wire(value)})
	if err != nil {
		return hostCallError(ctx, err, "host set setting", name)
	}
	if e := resp.GetError(); e != nil {
		return decodeError(e)
	}
	return nil
}

// hostCallError is the error of a host service call that failed in gRPC.
func hostCallError(ctx context.Context, err error, what, name string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return fmt.Errorf("pluginrpc: %s %q: %s", what, name, status.Convert(err).Message())
}

// bodyReader is a request body in the plugin: the inline bytes, then the
// rest pulled from the host, then the host's read error or io.EOF.
type bodyReader struct {
	ctx   context.Context
	host  *remoteHost
	data  []byte
	token uint64
	err   *pluginv2.BodyError
	done  bool
}

// Read reads the body.
func (b *bodyReader) Read(p []byte) (int, error) {
	for len(b.data) == 0 {
		if b.token == 0 || b.done {
			if b.err != nil {
				return 0, decodeBodyError(b.err)
			}
			return 0, io.EOF
		}
		if len(p) == 0 {
			return 0, nil
		}
		if b.host == nil {
			return 0, errors.New("pluginrpc: request body: no host")
		}
		resp, err := b.host.client.ReadBody(b.ctx, &pluginv2.ReadBodyRequest{Token: b.token, Max: int32(min(max(len(p), 32<<10), chunkSize))})
		if err != nil {
			b.done = true
			b.err = &pluginv2.BodyError{Message: wire("pluginrpc: request body: " + status.Convert(err).Message())}
			continue
		}
		b.data = resp.GetData()
		if resp.GetEof() || resp.GetError() != nil {
			b.done = true
			b.err = resp.GetError()
		}
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

var (
	_ pluginv2.PluginServer = (*server)(nil)
	_ plugins.Host          = hostOnly{}
	_ plugins.Settings      = settingsHost{}
	_ io.Reader             = (*bodyReader)(nil)
)
