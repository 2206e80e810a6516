package core

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRouterHead: HEAD matches a route whose methods have GET and not HEAD,
// at GET's position, and stays HEAD; a route that rewrites GET to another
// method does not apply to HEAD; a route listing HEAD is matched as written.
func TestRouterHead(t *testing.T) {
	routes := []Route{
		{Match: "GET,PUT,POST /(?P<type>xml|plain)/(?P<path>.*)", Rewrite: "GET,PUT,POST /%(path)s", Assign: []string{"ACCEPT=text/%(type)s"}},
		{Match: `GET /config\?directory=(?P<directory>[^&]*)`, Rewrite: "PUT /config", Assign: []string{"BODY=%(directory)u"}, Handler: echo("BODY")},
		{Match: `GET,PUT,POST /config(?:$|\?)`, Rewrite: "GET,PUT,PUT /config", Handler: echo("ACCEPT")},
		{Match: "PUT,GET /swap", Rewrite: "GET,HEAD /swapped"},
		{Match: "GET /swapped", Handler: echo()},
		{Match: "HEAD /swapped", Handler: echo()},
		{Match: "HEAD,GET /explicit", Rewrite: "POST,GET /explicit2"},
		{Match: "POST /explicit2", Handler: echo()},
		{Match: "GET /files", Handler: echo()},
		{Match: "PUT /putonly", Handler: echo()},
	}
	rt, err := NewRouter(routes)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, target, want string
	}{
		{"plain GET route", "/files/x", "HEAD consumed=/files path=/x query="},
		{"prefix rewrite keeps HEAD", "/xml/config", "HEAD consumed=/config path= query= ACCEPT=text/xml"},
		{"rewrite to PUT skipped", "/config?directory=x", "HEAD consumed=/config path= query= ACCEPT="},
		{"GET rewritten to HEAD", "/swap", "HEAD consumed=/swapped path= query="},
		{"listed HEAD as written", "/explicit", "POST consumed=/explicit2 path= query="},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			rt.ServeHTTP(w, httptest.NewRequest("HEAD", c.target, nil))
			if w.Code != 200 || w.Body.String() != c.want {
				t.Errorf("%d %q\nwant %q", w.Code, w.Body.String(), c.want)
			}
		})
	}
	for _, target := range []string{"/putonly", "/nothing"} {
		w := httptest.NewRecorder()
		rt.ServeHTTP(w, httptest.NewRequest("HEAD", target, nil))
		if w.Code != 404 {
			t.Errorf("HEAD %s: %d, want 404", target, w.Code)
		}
	}
	// Other methods do not match GET routes.
	w := httptest.NewRecorder()
	rt.ServeHTTP(w, httptest.NewRequest("DELETE", "/files", nil))
	if w.Code != 404 {
		t.Errorf("DELETE /files: %d, want 404", w.Code)
	}
	if i := rt.Lookup("HEAD", "/config?directory=x"); i != 2 {
		t.Errorf("Lookup HEAD /config?directory=x: %d, want 2", i)
	}
}

// headResource has a Getter only.
type headResource struct{}

func (headResource) Get(context.Context, *Request) (any, error) {
	return Node{Name: "got", Content: "x"}, nil
}

// ownHead has its own Head.
type ownHead struct{ headResource }

func (ownHead) Head(context.Context, *Request) (any, error) { return "own head", nil }

// putOnly has neither Get nor Head.
type putOnly struct{}

func (putOnly) Put(context.Context, *Request) (any, error) { return nil, nil }

// TestHeadOnTheWire: HEAD answers like GET without a body, over a real
// connection, with Content-Length, for values, errors, 404 and Content.
func TestHeadOnTheWire(t *testing.T) {
	mod := time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC)
	content := HandlerFunc(func(context.Context, *Request) (*Response, error) {
		return &Response{ContentType: TypeOctet, Content: &Content{Name: "f", ModTime: mod, Size: 13, ReaderAt: strings.NewReader("hello, world\n")}}, nil
	})
	rt, err := NewRouter([]Route{
		{Match: "GET /get", Handler: HTTP(Resource(headResource{}))},
		{Match: "GET /own", Handler: HTTP(Resource(ownHead{}))},
		{Match: "GET,PUT /put", Handler: HTTP(Resource(putOnly{}))},
		{Match: "GET /bound", Handler: HTTP(Bind([]string{"a", "b"}))},
		{Match: "GET /error", Handler: HTTP(HandlerFunc(func(context.Context, *Request) (*Response, error) { return nil, Status(400, "Invalid Path") }))},
		{Match: "GET /content", Handler: HTTP(content)},
	}, WithRouteList())
	if err != nil {
		t.Fatal(err)
	}
	srv := newWireServer(t, rt)
	const (
		date = "Date: -\r\n"
		last = "Last-Modified: Tue, 14 Nov 2023 22:13:20 GMT\r\n"
	)
	cases := []struct {
		name, target, want string
		sameAsGet          bool // GET answers the same header, and a body of Content-Length bytes
	}{
		{"getter", "/get", "HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: application/json\r\n" + date + "\r\n", true},
		{"own head", "/own", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nContent-Type: application/json\r\n" + date + "\r\n", false},
		{"no getter", "/put", "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 23\r\nContent-Type: text/plain\r\n" + date + "\r\n", true},
		{"bound", "/bound/1", "HTTP/1.1 200 OK\r\nContent-Length: 15\r\nContent-Type: application/json\r\n" + date + "\r\n", true},
		{"error phrase", "/error", "HTTP/1.1 400 Invalid Path\r\nContent-Length: 17\r\nContent-Type: text/plain\r\n" + date + "\r\n", true},
		{"content", "/content", "HTTP/1.1 200 OK\r\nAccept-Ranges: bytes\r\nContent-Length: 13\r\nContent-Type: application/octet-stream\r\n" + last + date + "\r\n", true},
		{"no route", "/nothing", "HTTP/1.1 404 Not Found\r\nContent-Length: 80\r\nContent-Type: text/plain\r\n" + date + "\r\n", true},
	}
	addr := srv.Listener.Addr().String()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// HEAD then GET on one connection: the HEAD answer has no body,
			// so the GET answer follows the header at once.
			out := noDate(exchange(t, addr, "HEAD "+c.target+" HTTP/1.1\r\nHost: x\r\n\r\nGET "+c.target+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", false))
			if !strings.HasPrefix(out, c.want) {
				t.Fatalf("HEAD answered\n%q\nwant\n%q", out, c.want)
			}
			get := out[len(c.want):]
			if !c.sameAsGet {
				return
			}
			if wantGet := strings.TrimSuffix(c.want, "\r\n") + "Connection: close\r\n\r\n"; !strings.HasPrefix(get, wantGet) {
				t.Errorf("GET answered\n%q\nwant the header\n%q", get, wantGet)
			}
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(get)), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			if want := c.want[strings.Index(c.want, "Content-Length: ")+16:]; !strings.HasPrefix(want, strconv.Itoa(len(b))+"\r\n") {
				t.Errorf("GET body %q does not have HEAD's Content-Length", b)
			}
		})
	}
}

// exchange sends request on a new connection, half-closes its write side
// when halfClose is set, and returns all the server sends until it closes.
func exchange(t *testing.T, addr, request string, halfClose bool) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	if halfClose {
		if err := c.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading until the server closes: %v (got %q)", err, b)
	}
	return string(b)
}

// noDate replaces the value of the Date header with "-".
func noDate(s string) string {
	i := strings.Index(s, "\r\nDate: ")
	for i >= 0 {
		end := strings.Index(s[i+2:], "\r\n")
		s = s[:i] + "\r\nDate: -" + s[i+2+end:]
		next := strings.Index(s[i+2:], "\r\nDate: ")
		if next < 0 {
			break
		}
		i += 2 + next
	}
	return s
}

var _ Headable = ownHead{}
