package middleware

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/justinas/alice"

	"github.com/reso-project/reso/core"
)

// probe answers by path with what http.ResponseController offers: /flush
// sends "a", flushes and waits for release before "b"; /hijack answers on
// the raw connection; /control enables full duplex and sets deadlines.
// Failures are answered as 500 with the error.
func probe(release <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		fail := func(what string, err error) {
			http.Error(w, what+": "+err.Error(), http.StatusInternalServerError)
		}
		switch r.URL.Path {
		case "/flush":
			if _, ok := w.(http.Flusher); !ok {
				http.Error(w, "no http.Flusher", http.StatusInternalServerError)
				return
			}
			io.WriteString(w, "a")
			if err := rc.Flush(); err != nil {
				fail("Flush", err)
				return
			}
			<-release
			io.WriteString(w, "b")
		case "/hijack":
			if _, ok := w.(http.Hijacker); !ok {
				http.Error(w, "no http.Hijacker", http.StatusInternalServerError)
				return
			}
			conn, brw, err := rc.Hijack()
			if err != nil {
				fail("Hijack", err)
				return
			}
			defer conn.Close()
			brw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nraw hi")
			brw.Flush()
		case "/control":
			if err := rc.EnableFullDuplex(); err != nil {
				fail("EnableFullDuplex", err)
				return
			}
			if err := rc.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
				fail("SetWriteDeadline", err)
				return
			}
			if err := rc.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
				fail("SetReadDeadline", err)
				return
			}
			io.WriteString(w, "ok")
		}
	})
}

// serverLog collects what net/http logs for a server.
func serverLog(srv *httptest.Server) *lockedBuffer {
	var buf lockedBuffer
	srv.Config.ErrorLog = log.New(&buf, "", 0)
	return &buf
}

// TestResponseController: Flush, Hijack, EnableFullDuplex and the
// deadlines work through every middleware and through the chain cmd/reso
// builds (Log -> Recover -> Cookies -> router), over a real connection.
func TestResponseController(t *testing.T) {
	chain := func(h http.Handler) http.Handler {
		rt, err := core.NewRouter([]core.Route{{Match: "GET /", Handler: h}})
		if err != nil {
			t.Fatal(err)
		}
		logger := slog.New(slog.NewTextHandler(io.Discard, nil))
		return alice.New(Log(logger), core.ShowErrors, Recover, Cookies).Then(rt)
	}
	pieces := []struct {
		name string
		wrap func(http.Handler) http.Handler
	}{
		{"Log", Log(slog.New(slog.NewTextHandler(io.Discard, nil)))},
		{"Recover", Recover},
		{"Recover under ShowErrors", recoverShowing},
		{"Cookies", Cookies},
		{"chain", chain},
	}
	for _, p := range pieces {
		t.Run(p.name, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewUnstartedServer(p.wrap(probe(release)))
			srv.Listener = core.Listen(srv.Listener)
			srv.Config.ConnContext = core.ConnContext
			errs := serverLog(srv)
			srv.Start()
			defer srv.Close()
			get := func(path string) *http.Response {
				req, _ := http.NewRequest("GET", srv.URL+path, nil)
				req.Header.Set("Cookie", "a=1") // Cookies wraps the writer only then
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}

			resp := get("/flush")
			first := make([]byte, 1)
			if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "a" {
				t.Errorf("flush: %d %q %v", resp.StatusCode, first, err)
			}
			close(release) // the handler is held until the flushed byte arrived
			rest, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(rest) != "b" {
				t.Errorf("after flush: %q", rest)
			}

			resp = get("/hijack")
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != "raw hi" {
				t.Errorf("hijack: %d %q", resp.StatusCode, b)
			}

			resp = get("/control")
			b, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != "ok" {
				t.Errorf("control: %d %q", resp.StatusCode, b)
			}

			srv.Close() // waits for the handlers
			if s := errs.String(); s != "" {
				t.Errorf("net/http logged %q", s)
			}
		})
	}
}

// TestRecoverAfterHijack: a handler that panics after taking the
// connection over gets no 500 written after it; the connection stays with
// the hijacker, and net/http logs nothing.
func TestRecoverAfterHijack(t *testing.T) {
	conns := make(chan net.Conn, 1)
	done := make(chan struct{}, 1)
	signal := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() { done <- struct{}{} }()
			next.ServeHTTP(w, r)
		})
	}
	for _, recov := range []func(http.Handler) http.Handler{Recover, recoverShowing} {
		srv := httptest.NewUnstartedServer(alice.New(signal, recov).ThenFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n")
			brw.Flush()
			conns <- conn // the hijacker keeps the connection
			panic("after the upgrade")
		}))
		errs := serverLog(srv)
		srv.Start()
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n")
		server := <-conns
		<-done
		io.WriteString(server, "from the hijacker")
		server.Close()
		got, _ := io.ReadAll(bufio.NewReader(conn))
		conn.Close()
		srv.Close()
		want := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\nfrom the hijacker"
		if string(got) != want {
			t.Errorf("%p: got %q\nwant %q", recov, got, want)
		}
		if s := errs.String(); s != "" {
			t.Errorf("%p: net/http logged %q", recov, s)
		}
	}
}

// TestRecoverAfterFlush: a panic after the header went out, by a flush
// through http.ResponseController or http.Flusher, aborts the connection
// (http.ErrAbortHandler): the client sees an incomplete answer and
// net/http logs nothing.
func TestRecoverAfterFlush(t *testing.T) {
	flushes := map[string]func(http.ResponseWriter){
		"ResponseController": func(w http.ResponseWriter) { http.NewResponseController(w).Flush() },
		"Flusher":            func(w http.ResponseWriter) { w.(http.Flusher).Flush() },
	}
	for name, flush := range flushes {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(Recover(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "partial")
				flush(w)
				panic("late")
			})))
			errs := serverLog(srv)
			srv.Start()
			resp, err := srv.Client().Get(srv.URL)
			if err == nil {
				var b []byte
				b, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.HasPrefix(string(b), "partial") {
					t.Errorf("%d %q", resp.StatusCode, b)
				}
			}
			if err == nil {
				t.Error("a late panic gave a complete answer")
			}
			srv.Close()
			if s := errs.String(); s != "" {
				t.Errorf("net/http logged %q", s)
			}
		})
	}
}

// base is an http.ResponseWriter with none of the optional interfaces; the
// types below add them in each combination, to wrap.
type base struct {
	h        http.Header
	code     int
	body     bytes.Buffer
	flushed  bool
	hijacked bool
	read     bool
}

func (b *base) Header() http.Header         { return b.h }
func (b *base) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *base) WriteHeader(code int)        { b.code = code }
func (b *base) flush()                      { b.flushed = true }
func (b *base) hijack() (net.Conn, *bufio.ReadWriter, error) {
	b.hijacked = true
	return nil, nil, nil
}
func (b *base) readFrom(r io.Reader) (int64, error) {
	b.read = true
	return b.body.ReadFrom(r)
}

type (
	withF   struct{ *base }
	withH   struct{ *base }
	withR   struct{ *base }
	withFH  struct{ *base }
	withFR  struct{ *base }
	withHR  struct{ *base }
	withFHR struct{ *base }
	// unwraps has no optional interface but leads to a writer that has
	// Flush and Hijack (not ReadFrom, which io.Copy does not unwrap).
	unwraps struct{ http.ResponseWriter }
)

func (w withF) Flush()                                        { w.flush() }
func (w withH) Hijack() (net.Conn, *bufio.ReadWriter, error)  { return w.hijack() }
func (w withR) ReadFrom(r io.Reader) (int64, error)           { return w.readFrom(r) }
func (w withFH) Flush()                                       { w.flush() }
func (w withFH) Hijack() (net.Conn, *bufio.ReadWriter, error) { return w.hijack() }
func (w withFR) Flush()                                       { w.flush() }
func (w withFR) ReadFrom(r io.Reader) (int64, error)          { return w.readFrom(r) }
func (w withHR) Hijack() (net.Conn, *bufio.ReadWriter, error) { return w.hijack() }
func (w withHR) ReadFrom(r io.Reader) (int64, error)          { return w.readFrom(r) }
func (w withFHR) Flush()                                      { w.flush() }
func (w withFHR) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return w.hijack()
}
func (w withFHR) ReadFrom(r io.Reader) (int64, error) { return w.readFrom(r) }
func (w unwraps) Unwrap() http.ResponseWriter         { return w.ResponseWriter }

// interfaces names the optional interfaces w has.
func interfaces(w http.ResponseWriter) string {
	var s []string
	if _, ok := w.(http.Flusher); ok {
		s = append(s, "Flusher")
	}
	if _, ok := w.(http.Hijacker); ok {
		s = append(s, "Hijacker")
	}
	if _, ok := w.(io.ReaderFrom); ok {
		s = append(s, "ReaderFrom")
	}
	return strings.Join(s, "+")
}

// TestWriterInterfaces: the writer each middleware passes on, and the one
// the whole chain passes on, has exactly the optional interfaces of the
// writer it was given, and Unwrap; it is one wrapper, however many of the
// middleware the request went through; the interfaces it has reach the
// writer given, through http.ResponseController as well.
func TestWriterInterfaces(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	pieces := []struct {
		name string
		wrap func(http.Handler) http.Handler
	}{
		{"Log", Log(logger)},
		{"Metrics", Metrics(&nopRecorder{})},
		{"Recover", Recover},
		{"Cookies", Cookies},
		{"chain", alice.New(Log(logger), Metrics(&nopRecorder{}), core.ShowErrors, Recover, Cookies).Then},
	}
	inner := []struct {
		w    func(*base) http.ResponseWriter
		want string
	}{
		{func(b *base) http.ResponseWriter { return b }, ""},
		{func(b *base) http.ResponseWriter { return withF{b} }, "Flusher"},
		{func(b *base) http.ResponseWriter { return withH{b} }, "Hijacker"},
		{func(b *base) http.ResponseWriter { return withR{b} }, "ReaderFrom"},
		{func(b *base) http.ResponseWriter { return withFH{b} }, "Flusher+Hijacker"},
		{func(b *base) http.ResponseWriter { return withFR{b} }, "Flusher+ReaderFrom"},
		{func(b *base) http.ResponseWriter { return withHR{b} }, "Hijacker+ReaderFrom"},
		{func(b *base) http.ResponseWriter { return withFHR{b} }, "Flusher+Hijacker+ReaderFrom"},
		{func(b *base) http.ResponseWriter { return unwraps{withFHR{b}} }, "Flusher+Hijacker"},
	}
	for _, p := range pieces {
		for _, in := range inner {
			b := &base{h: http.Header{}}
			given := in.w(b)
			t.Run(p.name+"/"+interfaces(given), func(t *testing.T) {
				var seen http.ResponseWriter
				h := p.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					seen = w
					if got := interfaces(w); got != in.want {
						t.Errorf("the handler's writer has %q, want %q", got, in.want)
					}
					u, ok := w.(interface{ Unwrap() http.ResponseWriter })
					if !ok {
						t.Fatal("no Unwrap")
					}
					if u.Unwrap() != given {
						t.Errorf("more than one wrapper: Unwrap gives %T", u.Unwrap())
					}
					rc := http.NewResponseController(w)
					flushErr, hijackErr := rc.Flush(), error(nil)
					if _, _, err := rc.Hijack(); err != nil {
						hijackErr = err
					}
					wantFlush, wantHijack := strings.Contains(in.want, "Flusher"), strings.Contains(in.want, "Hijacker")
					if (flushErr == nil) != wantFlush || b.flushed != wantFlush {
						t.Errorf("ResponseController.Flush: %v, flushed %v", flushErr, b.flushed)
					}
					if (hijackErr == nil) != wantHijack || b.hijacked != wantHijack {
						t.Errorf("ResponseController.Hijack: %v, hijacked %v", hijackErr, b.hijacked)
					}
					if rf, ok := w.(io.ReaderFrom); ok {
						if n, err := rf.ReadFrom(strings.NewReader("body")); n != 4 || err != nil || !b.read {
							t.Errorf("ReadFrom: %d %v, reached %v", n, err, b.read)
						}
					}
				}))
				r := httptest.NewRequest("GET", "/", nil)
				r.Header.Set("Cookie", "a=1") // Cookies wraps the writer only then
				h.ServeHTTP(given, r)
				if seen == nil {
					t.Fatal("the handler did not run")
				}
			})
		}
	}
}

// nopRecorder is a Recorder that keeps nothing.
type nopRecorder struct{}

func (*nopRecorder) Start()           {}
func (*nopRecorder) Done(Observation) {}

// observations keeps what Metrics reports, for the tests of this package.
type observations struct {
	mu   sync.Mutex
	done []Observation
}

func (o *observations) Start() {}
func (o *observations) Done(obs Observation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done = append(o.done, obs)
}

func (o *observations) last() Observation {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.done[len(o.done)-1]
}

// TestWriterOnConnection: over real keep-alive connections, with and
// without the connection's own writer (core.Listen), through the chain
// cmd/reso builds with the access log and metrics on, each answer is logged
// and observed with its status and body bytes, unchanged cookies are gone
// from the header on the wire however the answer starts (WriteHeader,
// Write, ReadFrom, a flush) and only for requests with cookies, the
// handler's writer is one wrapper of net/http's, a panic before the answer
// becomes a 500 and the connection serves on, a panic after a partial
// write aborts the answer, and Log and Metrics report one duration, from
// the start the server noted on the connection when it did.
func TestWriterOnConnection(t *testing.T) {
	for _, kept := range []bool{true, false} {
		t.Run(map[bool]string{true: "kept on the connection", false: "pooled"}[kept], func(t *testing.T) {
			testWriterOnConnection(t, kept)
		})
	}
}

func testWriterOnConnection(t *testing.T, kept bool) {
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	obs := &observations{}
	done := make(chan http.ResponseWriter, 1)
	// outer gives the handler's writer to check and signals the end of
	// each request; on a connection of core.Listen it notes the start of
	// the request an hour back, as package server notes it (now).
	outer := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() { done <- w }()
			if l := core.ConnLocalFrom(r.Context()); l != nil {
				l.Start = core.Clock() - time.Hour
				defer func() { l.Start = 0 }()
			}
			next.ServeHTTP(w, r)
		})
	}
	var given http.ResponseWriter
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := w.(interface{ Unwrap() http.ResponseWriter }).Unwrap(); u != given {
			t.Errorf("%s: the handler's writer wraps %T, not net/http's", r.URL.Path, u)
		}
		http.SetCookie(w, &http.Cookie{Name: "same", Value: "1"})
		http.SetCookie(w, &http.Cookie{Name: "new", Value: "2"})
		switch r.URL.Path {
		case "/created":
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, "abc")
		case "/write":
			io.WriteString(w, "abcd")
		case "/readfrom":
			w.(io.ReaderFrom).ReadFrom(strings.NewReader("rf"))
		case "/flush":
			http.NewResponseController(w).Flush()
			io.WriteString(w, "xy")
		case "/boom":
			panic("boom")
		case "/late":
			io.WriteString(w, "partial")
			http.NewResponseController(w).Flush()
			panic("late")
		}
	})
	capture := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			given = w
			next.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewUnstartedServer(alice.New(outer, capture, Log(logger), Metrics(obs), core.ShowErrors, Recover, Cookies).Then(handler))
	if kept {
		srv.Listener = core.Listen(srv.Listener)
		srv.Config.ConnContext = core.ConnContext
	}
	errs := serverLog(srv)
	srv.Start()
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute))
	br := bufio.NewReader(conn)
	cases := []struct {
		path, cookie string
		code         int
		body         string // a prefix, for the 500's trace
		bytes        int64
		setCookie    []string
	}{
		{"/created", "same=1", 201, "abc", 3, []string{"new=2"}},
		{"/write", "", 200, "abcd", 4, []string{"same=1", "new=2"}},
		{"/readfrom", "same=1; new=1", 200, "rf", 2, []string{"new=2"}},
		{"/flush", "same=1", 200, "xy", 2, []string{"new=2"}},
		{"/boom", "same=1", 500, "panic: boom", -1, nil},
		{"/write", "same=2", 200, "abcd", 4, []string{"same=1", "new=2"}},
		{"/created", "same=1", 201, "abc", 3, []string{"new=2"}},
	}
	for i, c := range cases {
		req, _ := http.NewRequest("GET", srv.URL+c.path, nil)
		if c.cookie != "" {
			req.Header.Set("Cookie", c.cookie)
		}
		if err := req.Write(conn); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatalf("%d %s: %v", i, c.path, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		<-done
		if err != nil || resp.StatusCode != c.code || !strings.HasPrefix(string(b), c.body) {
			t.Errorf("%d %s: %d %.40q %v", i, c.path, resp.StatusCode, b, err)
		}
		if got := resp.Header.Values("Set-Cookie"); strings.Join(got, ",") != strings.Join(c.setCookie, ",") {
			t.Errorf("%d %s: Set-Cookie %q, want %q", i, c.path, got, c.setCookie)
		}
		bytes := c.bytes
		if bytes < 0 {
			bytes = int64(len(b))
		}
		o := obs.last()
		if o.Status != c.code || o.Bytes != bytes {
			t.Errorf("%d %s: observed %+v, want status %d, %d bytes", i, c.path, o, c.code, bytes)
		}
		if kept && o.Duration < time.Hour {
			t.Errorf("%d %s: duration %v, not from the start noted on the connection", i, c.path, o.Duration)
		}
		lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
		want := fmt.Sprintf("path=%s status=%d bytes=%d duration=%s ", c.path, c.code, bytes, o.Duration)
		if last := lines[len(lines)-1]; !strings.Contains(last, want) {
			t.Errorf("%d: log %q lacks %q", i, last, want)
		}
	}

	// A panic after a partial write: the client gets an incomplete answer.
	resp, err := srv.Client().Get(srv.URL + "/late")
	if err == nil {
		var b []byte
		b, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(string(b), "partial") {
			t.Errorf("/late: %d %q", resp.StatusCode, b)
		}
	}
	<-done
	if err == nil {
		t.Error("/late: a late panic gave a complete answer")
	}
	if o := obs.last(); o.Status != 200 || o.Bytes != 7 {
		t.Errorf("/late: observed %+v", o)
	}
	srv.Close()
	if s := errs.String(); s != "" {
		t.Errorf("net/http logged %q", s)
	}
}
