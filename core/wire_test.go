package core

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// newWireServer serves h with exact reason phrases on a loopback port.
func newWireServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = Listen(srv.Listener)
	srv.Config.ConnContext = ConnContext
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func statusLine(t *testing.T, br *bufio.Reader) (string, *http.Response) {
	t.Helper()
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	// The status line is consumed; give ReadResponse a stand-in one.
	resp, err := http.ReadResponse(bufio.NewReader(io.MultiReader(strings.NewReader("HTTP/1.1 200 OK\r\n"), &onlyBuffered{br})), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return strings.TrimRight(line, "\r\n"), resp
}

func TestReasonPhrasesOnTheWire(t *testing.T) {
	srv := newWireServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/path":
			WriteError(w, r, Status(400, "Invalid Path"))
		case "/admin":
			WriteError(w, r, Status(401, "Not Authorized as Admin"))
		case "/ok":
			io.WriteString(w, "fine")
		case "/plain-status":
			w.WriteHeader(404)
		case "/inject":
			// Request data never reaches a phrase: an invalid one falls back.
			WriteError(w, r, Status(400, "bad\r\nX-Evil: 1"))
		case "/body":
			io.ReadAll(r.Body)
			WriteError(w, r, ErrInvalidJSON)
		case "/panic-value":
			WriteError(w, r, fmt.Errorf("boom"))
		}
	}))
	addr := srv.Listener.Addr().String()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	cases := []struct{ target, want string }{
		{"/path", "HTTP/1.1 400 Invalid Path"},
		{"/ok", "HTTP/1.1 200 OK"},
		{"/admin", "HTTP/1.1 401 Not Authorized as Admin"},
		{"/plain-status", "HTTP/1.1 404 Not Found"},
		{"/inject", "HTTP/1.1 400 Bad Request"},
		{"/panic-value", "HTTP/1.1 500 Internal Server Error"},
		{"/path", "HTTP/1.1 400 Invalid Path"},
	}
	for _, cs := range cases {
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", cs.target)
		got, resp := statusLine(t, br)
		if got != cs.want {
			t.Errorf("%s: %q, want %q", cs.target, got, cs.want)
		}
		if resp.Close {
			t.Errorf("%s: connection not kept alive", cs.target)
		}
	}
	// Expect: 100-continue passes unchanged and the final phrase is exact.
	fmt.Fprintf(c, "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n")
	line, _ := br.ReadString('\n')
	if strings.TrimSpace(line) != "HTTP/1.1 100 Continue" {
		t.Fatalf("interim %q", line)
	}
	br.ReadString('\n')
	io.WriteString(c, "abc")
	if got, _ := statusLine(t, br); got != "HTTP/1.1 400 Invalid JSON content" {
		t.Errorf("after 100-continue: %q", got)
	}
}

func TestWriteErrorWithoutWrapper(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, r, Status(400, "Invalid Path"))
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || string(b) != "400 Invalid Path\n" {
		t.Errorf("%d %q", resp.StatusCode, b)
	}
}

func TestValueAndResource(t *testing.T) {
	h := Resource(resourceFuncs{
		get: func(ctx context.Context, r *Request) (any, error) {
			return Node{Name: "hello", Content: r.Path}, nil
		},
		put: func(ctx context.Context, r *Request) (any, error) {
			return Node{Name: "got", Content: r.Entity}, nil
		},
	})
	rt, err := NewRouter([]Route{{Match: "GET,PUT,POST,DELETE,HEAD /r/", Handler: HTTP(h)}})
	if err != nil {
		t.Fatal(err)
	}
	srv := newWireServer(t, rt)
	cases := []struct {
		name, req, status, ctype, body string
	}{
		{"get", "GET /r/x HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 200 OK", "application/json", `{"hello": "x"}`},
		{"put text", "PUT /r/ HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi", "HTTP/1.1 200 OK", "application/json", `{"got": "hi"}`},
		{"put json", "PUT /r/ HTTP/1.1\r\nHost: h\r\nContent-Type: APPLICATION/json\r\nContent-Length: 8\r\n\r\n[\"a\", 1]", "HTTP/1.1 200 OK", "application/json", `{"got": ["a", 1]}`},
		{"put json object keeps order", "PUT /r/ HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 31\r\n\r\n{\"z\": 1, \"a\": {\"y\": 2, \"b\": 3}}", "HTTP/1.1 200 OK", "application/json", `{"got": {"z": 1, "a": {"y": 2, "b": 3}}}`},
		{"put json repeated name", "PUT /r/ HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 24\r\n\r\n{\"z\": 1, \"a\": 2, \"z\": 3}", "HTTP/1.1 200 OK", "application/json", `{"got": {"z": 3, "a": 2}}`},
		{"put bad json", "PUT /r/ HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{x", "HTTP/1.1 400 Invalid JSON content", "text/plain", "400 Invalid JSON content\n"},
		{"put trailing json", "PUT /r/ HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 4\r\n\r\n1 2x", "HTTP/1.1 400 Invalid JSON content", "text/plain", "400 Invalid JSON content\n"},
		{"put empty json", "PUT /r/ HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n", "HTTP/1.1 200 OK", "application/json", `{"got": ""}`},
		{"put no length", "PUT /r/ HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 400 Invalid Content-Length", "text/plain", "400 Invalid Content-Length\n"},
		{"put chunked", "PUT /r/ HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", "HTTP/1.1 200 OK", "application/json", `{"got": "ok"}`},
		{"post undefined", "POST /r/ HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", "HTTP/1.1 405 Method Not Allowed", "text/plain", "405 Method Not Allowed\n"},
		{"post undefined no length", "POST /r/ HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 405 Method Not Allowed", "text/plain", "405 Method Not Allowed\n"},
		{"delete undefined", "DELETE /r/ HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 405 Method Not Allowed", "text/plain", "405 Method Not Allowed\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(conn, c.req)
			br := bufio.NewReader(conn)
			line, _ := br.ReadString('\n')
			resp, err := http.ReadResponse(bufio.NewReader(io.MultiReader(strings.NewReader(line), br)), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			if got := strings.TrimSpace(line); got != c.status || resp.Header.Get("Content-Type") != c.ctype || string(b) != c.body {
				t.Errorf("got %q %q %q\nwant %q %q %q", got, resp.Header.Get("Content-Type"), b, c.status, c.ctype, c.body)
			}
		})
	}
}

// onlyBuffered reads br one byte at a time so that a reader on top of it
// never takes bytes of the next answer.
type onlyBuffered struct{ br *bufio.Reader }

func (o *onlyBuffered) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	b, err := o.br.ReadByte()
	if err != nil {
		return 0, err
	}
	p[0] = b
	return 1, nil
}

// resourceFuncs is a resource made of functions, for tests.
type resourceFuncs struct {
	get, put func(context.Context, *Request) (any, error)
}

func (r resourceFuncs) Get(ctx context.Context, req *Request) (any, error) { return r.get(ctx, req) }
func (r resourceFuncs) Put(ctx context.Context, req *Request) (any, error) { return r.put(ctx, req) }

func TestNilResultIsEmpty(t *testing.T) {
	h := Resource(resourceFuncs{get: func(context.Context, *Request) (any, error) { return nil, nil }})
	w := httptest.NewRecorder()
	HTTP(h).ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Type") != "text/plain" {
		t.Errorf("%d %q %q", w.Code, w.Header(), w.Body.String())
	}
}

func TestHijacked(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := Hijacked(a); got != a {
		t.Errorf("Hijacked of a connection not of Listen = %v, want it as it is", got)
	}
	if got := Hijacked(&reasonConn{Conn: a, gone: make(chan struct{})}); got != a {
		t.Errorf("Hijacked of a connection of Listen = %v, want the connection it wraps", got)
	}
}
