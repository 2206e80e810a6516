package pluginrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/internal/poll"
	"github.com/reso-project/reso/middleware"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
	"github.com/reso-project/reso/plugins/represent"
)

// testServer serves a route table built from plugin entries the way
// cmd/reso does: router behind recovery and the cookie filter, exact status
// lines, a body limit, and a stand-in authenticator.
type testServer struct {
	srv      *httptest.Server
	settings *pluginhost.SettingsMap
	mount    *pluginhost.Host
	// pipes receives the client end of every session the server accepts.
	pipes chan core.Session

	mu    sync.Mutex
	ended map[string]int           // end hook calls per session id
	endc  map[string]chan struct{} // closed at a session's first end
}

// sessionEnded is the server's session end hook.
func (s *testServer) sessionEnded(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended[id]++
	if s.ended[id] == 1 {
		close(s.endChan(id))
	}
}

// endChan returns the channel closed when session id ends; s.mu is held.
func (s *testServer) endChan(id string) chan struct{} {
	if s.endc == nil {
		s.endc = make(map[string]chan struct{})
	}
	c, ok := s.endc[id]
	if !ok {
		c = make(chan struct{})
		s.endc[id] = c
	}
	return c
}

func newTestServer(t testing.TB, entries ...pluginhost.Entry) *testServer {
	t.Helper()
	settings := pluginhost.NewSettings(map[string]string{"greeting": "hi there"})
	pipes := make(chan core.Session, 16)
	m := &pluginhost.Host{
		Services:  plugins.Services{Settings: settings},
		BodyLimit: 1 << 20,
		Sessions:  pipeTransport(pipes),
		Require: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				id, email, ok := strings.Cut(r.Header.Get("X-User"), " ")
				n, err := strconv.ParseInt(id, 10, 64)
				if !ok || err != nil {
					core.WriteError(w, r, core.Status(http.StatusUnauthorized, "Not Authorized Here"))
					return
				}
				ctx := core.NewIdentityContext(r.Context(), &core.Identity{ID: n, Email: email})
				next.ServeHTTP(w, r.WithContext(ctx))
			})
		},
	}
	ts := &testServer{settings: settings, mount: m, pipes: pipes, ended: make(map[string]int)}
	m.OnSessionEnd(ts.sessionEnded)
	table, err := m.Routes(t.Context(), entries)
	if err != nil {
		t.Fatal(err)
	}
	router, err := core.NewRouter(table)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(core.ShowErrors(middleware.Recover(middleware.Cookies(router))))
	srv.Listener = core.Listen(srv.Listener)
	srv.Config.ConnContext = core.ConnContext
	srv.Start()
	t.Cleanup(srv.Close)
	ts.srv = srv
	return ts
}

// pipeTransport is the session transport of the tests: each session is an
// in-memory pipe whose client end goes to pipes.
type pipeTransport chan core.Session

// Accept returns the server end of a new pipe.
func (p pipeTransport) Accept(_ http.ResponseWriter, _ *http.Request, id string) (core.Session, error) {
	server, client := core.Pipe(id)
	p <- client
	return server, nil
}

var _ pluginhost.SessionTransport = pipeTransport(nil)

var dateLine = regexp.MustCompile(`(?m)^Date: .*\r\n`)

// raw sends request on a new connection and returns every byte of the
// answer but the Date header.
func (s *testServer) raw(t testing.TB, request string) string {
	t.Helper()
	c, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	go io.WriteString(c, request) // large bodies: the answer may come first
	b, err := io.ReadAll(c)
	if err != nil && errors.Is(err, syscall.ECONNRESET) && bytes.Contains(b, []byte("\r\n\r\n")) {
		// The server answered before reading a body it refused, and reset
		// the connection as it closed it with the body unread.
		err = nil
	}
	if err != nil {
		t.Fatalf("reading the answer to %.60q: %v (got %.300q)", request, err, b)
	}
	return dateLine.ReplaceAllString(string(b), "")
}

// suiteCase is one request of the contract suite.
type suiteCase struct {
	name    string
	request string
	// want is checked against the whole answer (status line first).
	want func(t *testing.T, answer string)
	// noCompare: the answer is not byte-identical across transports
	// (a stack trace, a random multipart boundary).
	noCompare bool
}

func req(method, target string, header ...string) string {
	return method + " " + target + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n" + strings.Join(append(header, ""), "\r\n") + "\r\n"
}

func withBody(method, target string, body []byte, header ...string) string {
	header = append(header, "Content-Length: "+strconv.Itoa(len(body)))
	return req(method, target, header...) + string(body)
}

func chunked(method, target string, body []byte) string {
	var b strings.Builder
	b.WriteString(req(method, target, "Transfer-Encoding: chunked"))
	for len(body) > 0 {
		n := min(len(body), 7000)
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, body[:n])
		body = body[n:]
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

func statusIs(line string, contains ...string) func(t *testing.T, answer string) {
	return func(t *testing.T, answer string) {
		t.Helper()
		if !strings.HasPrefix(answer, line+"\r\n") {
			t.Errorf("status line: want %q, answer:\n%.600s", line, answer)
		}
		for _, c := range contains {
			if !strings.Contains(answer, c) {
				t.Errorf("answer lacks %q:\n%.600s", c, answer)
			}
		}
	}
}

func answerBody(answer string) string {
	_, body, _ := strings.Cut(answer, "\r\n\r\n")
	return body
}

func bodyIs(line string, want []byte) func(t *testing.T, answer string) {
	return func(t *testing.T, answer string) {
		t.Helper()
		statusIs(line)(t, answer)
		if got := answerBody(answer); got != string(want) {
			t.Errorf("body: got %d bytes, want %d", len(got), len(want))
		}
	}
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// suite is the contract suite, in order (later cases see earlier settings).
func suite() []suiteCase {
	return []suiteCase{
		{name: "echo", request: req("GET", "/echo/a%20b/c?x=1&y=%20", "X-Test: one", "X-Test: two", "User-Agent: suite"),
			want: statusIs("HTTP/1.1 200 OK", `method=GET path="/a b/c" consumed="/echo" query="x=1&y=%20" content-length=-2`, `header X-Test=["one" "two"]`, "Content-Type: text/plain")},
		{name: "rewrite then handler", request: req("POST", "/alias/deep/er", "Content-Length: 0"),
			want: statusIs("HTTP/1.1 200 OK", `method=POST path="/deep/er" consumed="/echo"`, `var ALIASED="yes"`, `var rest="deep/er"`, "body 0 bytes")},
		{name: "inline body", request: withBody("PUT", "/echo", []byte("small body"), "Content-Type: text/plain"),
			want: statusIs("HTTP/1.1 200 OK", "body 10 bytes, sum 999", `header Content-Type=["text/plain"]`)},
		{name: "large body pulled", request: withBody("POST", "/echo", pattern(300<<10)),
			want: statusIs("HTTP/1.1 200 OK", fmt.Sprintf("body %d bytes, sum %d", 300<<10, sum(pattern(300<<10))))},
		{name: "chunked body pulled", request: chunked("POST", "/echo", pattern(100<<10)),
			want: statusIs("HTTP/1.1 200 OK", "content-length=-1", fmt.Sprintf("body %d bytes, sum %d", 100<<10, sum(pattern(100<<10))))},
		{name: "body over the limit", request: withBody("PUT", "/echo", pattern(2<<20)),
			want: statusIs("HTTP/1.1 413 Request Entity Too Large", "Connection: close")},
		{name: "chunked body over the limit", request: chunked("PUT", "/echo", pattern(1<<20+1)),
			want: statusIs("HTTP/1.1 413 Request Entity Too Large")},
		{name: "unread body", request: withBody("GET", "/echo", pattern(200<<10)),
			want: statusIs("HTTP/1.1 200 OK", "method=GET")},
		{name: "unread body over the limit", request: withBody("GET", "/echo", pattern(2<<20)),
			want: statusIs("HTTP/1.1 200 OK", "method=GET")},
		{name: "no identity", request: req("GET", "/private/x"),
			want: statusIs("HTTP/1.1 401 Not Authorized Here", "401 Not Authorized Here\n")},
		{name: "identity", request: req("GET", "/private/x", "X-User: 42 ann@example.org"),
			want: statusIs("HTTP/1.1 200 OK", "identity 42 ann@example.org", `path="/x"`)},
		{name: "status error", request: req("GET", "/status"),
			want: statusIs("HTTP/1.1 418 Not A Teapot Today", "\r\n\r\n418 Not A Teapot Today\n")},
		{name: "plain error", request: req("GET", "/fail"),
			want: statusIs("HTTP/1.1 500 Internal Server Error", "\r\n\r\nplain failure: something broke")},
		{name: "nil response", request: req("GET", "/nil"),
			want: statusIs("HTTP/1.1 200 OK", "Content-Length: 0")},
		{name: "custom response", request: req("GET", "/custom"),
			want: statusIs("HTTP/1.1 201 Made It", "Content-Type: text/x-custom", "X-Multi: a\r\nX-Multi: b", "Set-Cookie: plain=v1",
				`Set-Cookie: full="v 2"; Path=/p; Domain=example.org; Expires=Wed, 02 Jan 2030 03:04:05 GMT; Max-Age=60; HttpOnly; Secure; SameSite=Strict`, "custom body\n")},
		{name: "unchanged cookie dropped", request: req("GET", "/custom", "Cookie: plain=v1"),
			want: func(t *testing.T, answer string) {
				statusIs("HTTP/1.1 201 Made It", "Set-Cookie: full=")(t, answer)
				if strings.Contains(answer, "plain=v1") {
					t.Errorf("unchanged cookie sent:\n%s", answer)
				}
			}},
		{name: "value as json", request: req("GET", "/value"),
			want: statusIs("HTTP/1.1 200 OK", "Content-Type: application/json", `{"value": {"text": "h\u00e9llo <&>", "n": 42}}`)},
		{name: "value as xml", request: req("GET", "/xml/value"),
			want: statusIs("HTTP/1.1 200 OK", "Content-Type: text/xml", "<value><text>h")},
		{name: "host setting", request: req("GET", "/setting/greeting"),
			want: statusIs("HTTP/1.1 200 OK", "\r\n\r\nhi there")},
		{name: "set host setting", request: withBody("PUT", "/setting/greeting", []byte("changed")),
			want: statusIs("HTTP/1.1 200 OK")},
		{name: "host setting changed", request: req("GET", "/setting/greeting"),
			want: statusIs("HTTP/1.1 200 OK", "\r\n\r\nchanged")},
		{name: "download", request: req("GET", "/download"),
			want: bodyIs("HTTP/1.1 200 OK", downloadData)},
		{name: "download range", request: req("GET", "/download", "Range: bytes=300000-700004"),
			want: bodyIs("HTTP/1.1 206 Partial Content", downloadData[300000:700005])},
		{name: "download suffix range", request: req("GET", "/download", "Range: bytes=-5"),
			want: bodyIs("HTTP/1.1 206 Partial Content", downloadData[len(downloadData)-5:])},
		{name: "download bad range", request: req("GET", "/download", "Range: bytes=9999999-"),
			want: statusIs("HTTP/1.1 416 Requested Range Not Satisfiable")},
		{name: "download not modified", request: req("GET", "/download", "If-Modified-Since: "+downloadTime.Add(time.Hour).Format(http.TimeFormat)),
			want: statusIs("HTTP/1.1 304 Not Modified")},
		{name: "download multiple ranges", request: req("GET", "/download", "Range: bytes=0-9,1048570-1048578"),
			want: statusIs("HTTP/1.1 206 Partial Content", "multipart/byteranges"), noCompare: true},
		{name: "panic", request: req("GET", "/panic"),
			want: statusIs("HTTP/1.1 500 Internal Server Error", "\r\n\r\npanic: handler panicked\n\n"), noCompare: true},
		{name: "method not routed", request: req("DELETE", "/status"),
			want: statusIs("HTTP/1.1 404 Not Found")},
		{name: "closed downloads", request: req("GET", "/setting/closed"),
			want: statusIs("HTTP/1.1 200 OK", "\r\n\r\n6")},
	}
}

// transports are the ways the suite reaches the test plugin.
func transports(t *testing.T) map[string]plugins.Plugin {
	return map[string]plugins.Plugin{
		"direct": testPlugin{},
		"stream": load(t, Config{Name: "test", Cmd: childCmd("serve")}),
		// A plugin that makes its own keys, as one built before the host
		// made them does (go-plugin's AutoMTLS; mtls.go).
		"automtls": load(t, Config{Name: "test", Cmd: childCmd("automtls")}),
	}
}

func load(t testing.TB, cfg Config) *Client {
	t.Helper()
	cfg.Logger = testLogger(t)
	c, err := Load(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestContract runs the suite against the plugin in process and in a child
// process (over its Requests stream), and checks that every answer is byte
// for byte the one the plugin gives in process.
func TestContract(t *testing.T) {
	answers := map[string][]string{}
	order := []string{"direct", "stream", "automtls"}
	ps := transports(t)
	for _, name := range order {
		t.Run(name, func(t *testing.T) {
			s := newTestServer(t, pluginhost.Entry{Name: "represent", Plugin: represent.Plugin{}}, pluginhost.Entry{Name: "test", Plugin: ps[name]})
			for _, c := range suite() {
				answer := s.raw(t, c.request)
				answers[name] = append(answers[name], answer)
				t.Run(c.name, func(t *testing.T) { c.want(t, answer) })
			}
		})
	}
	for _, name := range order[1:] {
		for i, c := range suite() {
			if c.noCompare || i >= len(answers[name]) || i >= len(answers["direct"]) {
				continue
			}
			if got, want := answers[name][i], answers["direct"][i]; got != want {
				t.Errorf("%s: %s: answer differs from in process:\n--- %s\n%.800s\n--- direct\n%.800s", name, c.name, name, got, want)
			}
		}
	}
}

// TestCancel checks that the end of a request cancels the handler's
// context in the plugin process.
func TestCancel(t *testing.T) {
	c := load(t, Config{Name: "test", Cmd: childCmd("serve")})
	s := newTestServer(t, pluginhost.Entry{Name: "test", Plugin: c})
	// The client resets the connection: a plain close (FIN) looks like a
	// half-close, after which the server still answers (see core.Listen),
	// so only a reset ends the request at once.
	conn, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "GET /wait HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the request to reach the plugin's handler", func() bool {
		v, _ := s.settings.Setting(t.Context(), "waiting")
		return v == "yes"
	})
	conn.(*net.TCPConn).SetLinger(0)
	conn.Close()
	poll.Until(t, 10*time.Second, "the plugin's handler to see the cancellation", func() bool {
		v, _ := s.settings.Setting(t.Context(), "cancelled")
		return v == "yes"
	})
}

// testLogger returns a logger whose output t shows when it fails.
func testLogger(t testing.TB) *slog.Logger {
	var buf lockedBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
