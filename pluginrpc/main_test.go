package pluginrpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
	channelplugin "github.com/reso-project/reso/plugins/channel"
	"github.com/reso-project/reso/plugins/users"
)

// childStderr is the process's standard error as it started: go-plugin's
// Serve replaces os.Stderr by a pipe it streams to the host.
var childStderr = os.Stderr

// childEnv switches the test binary into a plugin process: TestMain serves
// the test plugin (or misbehaves, as the value says) instead of testing.
const childEnv = "RESO_PLUGINRPC_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// childProfileEnv, when set in the test's environment, names a file where
// a plugin process of the tests writes its CPU profile when it ends
// (RESO_PLUGINRPC_CHILD_CPUPROFILE=/tmp/plugin.prof go test -bench ...):
// -cpuprofile covers the host's side only.
const childProfileEnv = "RESO_PLUGINRPC_CHILD_CPUPROFILE"

// runChild is the plugin process of the tests.
func runChild(mode string) int {
	p := testPlugin{}
	if path := os.Getenv(childProfileEnv); path != "" {
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	var err error
	switch mode {
	case "serve":
		err = Serve(p)
	case "automtls":
		// A plugin built before the host made its keys (mtls.go): it
		// ignores the pipe, and go-plugin's AutoMTLS makes its keys.
		os.Unsetenv(mtlsFDEnv)
		err = Serve(p)
	case "exchange":
		serveExchangeOnly(p)
	case "channel":
		err = Serve(channelplugin.New())
	case "lazytree":
		err = Serve(lazyPlugin{})
	case "channel-exchange":
		serveExchangeOnly(channelplugin.New())
	case "watchdrop":
		err = Serve(dropPlugin{})
	case "stdout":
		fmt.Println("hello from a plugin that prints to stdout")
		err = Serve(p)
	case "version":
		hs := handshake
		hs.ProtocolVersion = 99
		err = serve(p, hs)
	case "version1":
		hs := handshake
		hs.ProtocolVersion = 1
		err = serve(p, hs)
	case "version2":
		hs := handshake
		hs.ProtocolVersion = 2
		err = serve(p, hs)
	case "exit":
		fmt.Fprintln(os.Stderr, "giving up before the handshake")
		return 2
	default:
		err = fmt.Errorf("unknown child mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// childCmd returns a Cmd that runs the test binary as a plugin process.
func childCmd(mode string) func() *exec.Cmd {
	return func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+mode)
		return cmd
	}
}

// testPlugin exercises every part of the contract. Its answers describe
// what the handler saw, so that a suite can compare in-process and
// out-of-process runs byte for byte.
type testPlugin struct{}

// downloadData is the content of GET /download: 1 MiB + 3 bytes, so that
// chunk boundaries do not line up.
var downloadData = func() []byte {
	b := make([]byte, 1<<20+3)
	for i := range b {
		b[i] = byte(i*7 + i>>11)
	}
	return b
}()

var downloadTime = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

func (testPlugin) Routes(_ context.Context, offered plugins.Services) ([]plugins.Route, error) {
	host := offered.Settings
	if host == nil {
		return nil, errors.New("test plugin: the host offers no settings")
	}
	closeHost.Store(&host)
	h := func(f func(ctx context.Context, req *core.Request) (*core.Response, error)) core.Handler {
		return core.HandlerFunc(f)
	}
	return []plugins.Route{
		{Match: `GET,PUT,POST /alias/(?P<rest>.*)`, Rewrite: "GET,PUT,POST /echo/%(rest)s", Assign: []string{"ALIASED=yes"}},
		{Match: `GET,PUT,POST,DELETE /echo`, Handler: h(echo)},
		{Match: `GET /private`, Identity: plugins.IdentityRequired, Handler: h(echo)},
		{Match: `GET /status`, Handler: h(func(context.Context, *core.Request) (*core.Response, error) {
			return nil, fmt.Errorf("wrapped: %w", core.Status(418, "Not A Teapot Today"))
		})},
		{Match: `GET /fail`, Handler: h(func(context.Context, *core.Request) (*core.Response, error) {
			return nil, errors.New("plain failure: something broke")
		})},
		{Match: `GET /nil`, Handler: h(func(context.Context, *core.Request) (*core.Response, error) {
			return nil, nil
		})},
		{Match: `GET /custom`, Handler: h(func(context.Context, *core.Request) (*core.Response, error) {
			return &core.Response{
				Code:   201,
				Reason: "Made It",
				Header: http.Header{"Content-Type": {"text/x-custom"}, "X-Multi": {"a", "b"}},
				Cookies: []*http.Cookie{
					{Name: "plain", Value: "v1"},
					{Name: "full", Value: "v 2", Quoted: true, Path: "/p", Domain: "example.org", Expires: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), MaxAge: 60, Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode},
				},
				Body: []byte("custom body\n"),
			}, nil
		})},
		{Match: `GET /value`, Handler: core.Resource(valueResource{})},
		{Match: `GET /setting/(?P<name>\w+)`, Handler: h(func(ctx context.Context, req *core.Request) (*core.Response, error) {
			v, err := host.Setting(ctx, req.Var("name"))
			if err != nil {
				return nil, err
			}
			return &core.Response{Body: []byte(v)}, nil
		})},
		{Match: `PUT /setting/(?P<name>\w+)`, Handler: h(func(ctx context.Context, req *core.Request) (*core.Response, error) {
			b, err := core.ReadBody(req.Body)
			if err != nil {
				return nil, err
			}
			return nil, host.SetSetting(ctx, req.Var("name"), string(b))
		})},
		{Match: `GET /download`, Handler: h(func(ctx context.Context, req *core.Request) (*core.Response, error) {
			return &core.Response{
				Header: http.Header{"Content-Type": {core.TypeOctet}},
				Content: &core.Content{Name: "data.bin", ModTime: downloadTime, Size: int64(len(downloadData)),
					ReaderAt: &trackedReader{Reader: bytes.NewReader(downloadData), host: host, ctx: context.WithoutCancel(ctx)}},
			}, nil
		})},
		{Match: `GET /wait`, Handler: h(func(ctx context.Context, req *core.Request) (*core.Response, error) {
			_ = host.SetSetting(context.WithoutCancel(ctx), "waiting", "yes")
			<-ctx.Done()
			_ = host.SetSetting(context.WithoutCancel(ctx), "cancelled", "yes")
			return nil, ctx.Err()
		})},
		{Match: `GET /ctxerr`, Handler: h(func(context.Context, *core.Request) (*core.Response, error) {
			return nil, fmt.Errorf("test: gave up: %w", context.Canceled)
		})},
		{Match: `GET /log`, Handler: h(func(context.Context, *core.Request) (*core.Response, error) {
			// One record through go-plugin's stdio stream (os.Stderr is
			// its pipe once Serve runs), one straight to file descriptor 2.
			slog.New(slog.NewTextHandler(os.Stderr, nil)).Warn("text record", "who", "a b", "n", 42, "path", "/caf\xe9")
			slog.New(slog.NewJSONHandler(childStderr, nil)).Error("json record", "n", 7, "g", slog.GroupValue(slog.String("k", "v w")))
			fmt.Fprintln(os.Stderr, "a plain line")
			return nil, nil
		})},
		{Match: `GET,PUT,POST /bytes`, Handler: h(bytesEcho)},
		{Match: `GET /fail-with`, Handler: h(func(_ context.Context, req *core.Request) (*core.Response, error) {
			return nil, errors.New("failed with " + req.Path + "?" + req.Query + " " + req.Header.Get("User-Agent"))
		})},
		{Match: `GET /named`, Handler: h(func(_ context.Context, req *core.Request) (*core.Response, error) {
			// The content's name (its extension gives the type) is request data.
			return &core.Response{Content: &core.Content{Name: req.Path, ModTime: downloadTime, Size: 5, ReaderAt: strings.NewReader("named")}}, nil
		})},
		{Match: `GET /panic`, Handler: h(func(context.Context, *core.Request) (*core.Response, error) {
			panic("handler panicked")
		})},
		{Match: `GET /users(?:/|$|\?)`, Handler: core.Bind(users.Example())},
		{Match: `GET /pid`, Handler: h(func(context.Context, *core.Request) (*core.Response, error) {
			return &core.Response{Body: []byte(fmt.Sprint(os.Getpid()))}, nil
		})},
		{Match: `GET /events/many`, Handler: h(func(context.Context, *core.Request) (*core.Response, error) {
			return &core.Response{Stream: &manyEvents{}}, nil
		})},
		{Match: `GET /events/wait`, Handler: h(func(context.Context, *core.Request) (*core.Response, error) {
			return &core.Response{Code: 202, Reason: "Streaming For You", Stream: &waitEvents{host: host}}, nil
		})},
		{Match: `GET /session/echo`, Session: core.SessionHandlerFunc(echoSession)},
		{Match: `GET /session/hold`, Session: core.SessionHandlerFunc(func(ctx context.Context, req *core.Request, s core.Session) error {
			if err := s.Send(ctx, core.Message{Data: []byte("ready " + req.Path)}); err != nil {
				return err
			}
			_, err := s.Recv(ctx)
			return err
		})},
		{Match: `GET /session/deaf`, Session: core.SessionHandlerFunc(func(ctx context.Context, _ *core.Request, s core.Session) error {
			// Reads nothing, ever (TestSessionPluginNotReading).
			if err := s.Send(ctx, core.Message{Data: []byte("ready")}); err != nil {
				return err
			}
			<-ctx.Done()
			return nil
		})},
		{Match: `GET /session/flood`, Session: core.SessionHandlerFunc(func(ctx context.Context, _ *core.Request, s core.Session) error {
			// floodCount messages of floodSize bytes, each starting with
			// its index, however slowly the client reads
			// (TestSessionClientNotReading).
			for i := range floodCount {
				data := fmt.Appendf(nil, "%08d", i)
				data = append(data, make([]byte, floodSize-len(data))...)
				if err := s.Send(ctx, core.Message{Binary: true, Data: data}); err != nil {
					return err
				}
			}
			return nil
		})},
		{Match: `GET /exit`, Handler: h(func(context.Context, *core.Request) (*core.Response, error) {
			os.Exit(7)
			return nil, nil
		})},
	}, nil
}

// echo answers a text description of the request it got.
func echo(_ context.Context, req *core.Request) (*core.Response, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "method=%s path=%q consumed=%q query=%q content-length=%d\n", req.Method, req.Path, req.Consumed, req.Query, req.ContentLength)
	names := make([]string, 0, len(req.Vars))
	for k := range req.Vars {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		fmt.Fprintf(&b, "var %s=%q\n", k, req.Vars[k])
	}
	for _, k := range []string{"X-Test", "Content-Type", "User-Agent"} {
		fmt.Fprintf(&b, "header %s=%q\n", k, req.Header.Values(k))
	}
	if req.Identity != nil {
		fmt.Fprintf(&b, "identity %d %s\n", req.Identity.ID, req.Identity.Email)
	}
	if req.Body == nil {
		b.WriteString("no body\n")
	} else if req.Method == http.MethodPut || req.Method == http.MethodPost {
		body, err := core.ReadBody(req.Body)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "body %d bytes, sum %d\n", len(body), sum(body))
	}
	return &core.Response{Body: []byte(b.String())}, nil
}

// bytesEcho answers with every text of the request as raw bytes, in the
// body and in response headers, so that any byte that does not cross the
// boundary intact shows.
func bytesEcho(_ context.Context, req *core.Request) (*core.Response, error) {
	var b bytes.Buffer
	for _, s := range []string{req.Method, req.Path, req.Consumed, req.Query} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	names := make([]string, 0, len(req.Vars))
	for k := range req.Vars {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		b.WriteString(k + "=" + req.Vars[k] + "\x00")
	}
	for _, k := range []string{"User-Agent", "Content-Type", "X-Test"} {
		b.WriteString(k + ": " + strings.Join(req.Header.Values(k), "|") + "\x00")
	}
	if req.Body != nil {
		body, err := core.ReadBody(req.Body)
		if err != nil {
			return nil, err
		}
		b.Write(body)
	}
	return &core.Response{
		ContentType: req.Header.Get("Content-Type"),
		Header:      http.Header{"X-Path": {req.Path}, "X-Query": {req.Query}, "X-Agent": req.Header.Values("User-Agent")},
		Body:        b.Bytes(),
	}, nil
}

func sum(b []byte) (s int) {
	for _, c := range b {
		s += int(c)
	}
	return s
}

type valueResource struct{}

// Get answers a node with a record, rendered in the type ACCEPT names.
func (valueResource) Get(context.Context, *core.Request) (any, error) {
	return core.Node{Name: "value", Content: core.Record{{Name: "text", Value: "h\u00e9llo <&>"}, {Name: "n", Value: 42}}}, nil
}

// trackedReader counts closes in the host setting "closed".
type trackedReader struct {
	*bytes.Reader
	host   plugins.Settings
	ctx    context.Context
	closed atomic.Bool
}

func (r *trackedReader) Close() error {
	if r.closed.Swap(true) {
		return errors.New("closed twice")
	}
	v, _ := r.host.Setting(r.ctx, "closed")
	n := 0
	fmt.Sscan(v, &n)
	return r.host.SetSetting(r.ctx, "closed", fmt.Sprint(n+1))
}

// closeHost is the host of the last Routes call, for Close.
var closeHost atomic.Pointer[plugins.Settings]

// Close records in the host setting "plugin-closed" that it ran.
func (testPlugin) Close(ctx context.Context) error {
	if h := closeHost.Load(); h != nil {
		return (*h).SetSetting(ctx, "plugin-closed", "yes")
	}
	return errors.New("test plugin: closed before Routes")
}

// manyEvents gives manyCount events of about 4 KiB each, with ids, names
// and values that show any byte lost or reordered, then io.EOF.
type manyEvents struct{ n int }

const manyCount = 300

func (e *manyEvents) Next(ctx context.Context) (core.Event, error) {
	if e.n == manyCount {
		return core.Event{}, io.EOF
	}
	e.n++
	ev := core.Event{ID: fmt.Sprint(e.n), Value: core.Node{Name: "event", Content: core.Record{
		{Name: "n", Value: e.n}, {Name: "text", Value: "h\u00e9llo <&>\n" + strings.Repeat(string(rune('a'+e.n%26)), 4000)},
	}}}
	if e.n%3 == 0 {
		ev.Name = "third"
	}
	return ev, nil
}

func (e *manyEvents) Close() error { return nil }

// waitEvents gives one event, then waits for its context to end and
// records in host settings that it did ("stream-cancelled") and how many
// times it was closed ("stream-closed").
type waitEvents struct {
	host plugins.Settings
	sent bool
}

func (e *waitEvents) Next(ctx context.Context) (core.Event, error) {
	if !e.sent {
		e.sent = true
		return core.Event{ID: "1", Name: "first", Value: "waiting"}, nil
	}
	<-ctx.Done()
	_ = e.host.SetSetting(context.WithoutCancel(ctx), "stream-cancelled", "yes")
	return core.Event{}, ctx.Err()
}

func (e *waitEvents) Close() error {
	v, _ := e.host.Setting(context.Background(), "stream-closed")
	n := 0
	fmt.Sscan(v, &n)
	return e.host.SetSetting(context.Background(), "stream-closed", fmt.Sprint(n+1))
}

// echoSession sends every message back as it came; "close" closes the
// session with 4000 "bye".
func echoSession(ctx context.Context, _ *core.Request, s core.Session) error {
	for {
		m, err := s.Recv(ctx)
		if err != nil {
			var ce *core.CloseError
			if errors.As(err, &ce) {
				return nil // the client closed
			}
			return err
		}
		if !m.Binary && string(m.Data) == "close" {
			return s.Close(4000, "bye")
		}
		if err := s.Send(ctx, m); err != nil {
			return err
		}
	}
}

var (
	_ plugins.Closer   = testPlugin{}
	_ core.EventSource = (*manyEvents)(nil)
	_ core.EventSource = (*waitEvents)(nil)
	_ plugins.Plugin   = testPlugin{}
	_ io.ReaderAt      = (*trackedReader)(nil)
)
