package middleware

import (
	"bufio"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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
