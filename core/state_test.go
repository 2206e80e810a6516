package core

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRouterStateReuse: the request contexts the router reuses start clean
// for every request, on a connection of a Listen listener (kept-alive
// requests) and elsewhere (the pool); outside the router's handler there is
// none; a router inside a handler continues the outer one's.
func TestRouterStateReuse(t *testing.T) {
	inner, err := NewRouter([]Route{{Match: "GET /in", Handler: echo("v")}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := NewRouter([]Route{
		{Match: "GET /set/(?P<v>[a-z]+)", Handler: echo("v")},
		{Match: "GET /plain", Handler: echo("v")},
		{Match: "GET /nest/(?P<v>[a-z]+)", Handler: inner},
		{Match: "GET /twice", Handler: HTTP(HandlerFunc(func(_ context.Context, req *Request) (*Response, error) {
			a, b := Value(req, "a"), Value(req, "b")
			if a == b || string(a.Body) != `"a"` {
				t.Errorf("two Values share an answer: %q %q", a.Body, b.Body)
			}
			return b, nil
		}))},
	})
	if err != nil {
		t.Fatal(err)
	}
	outside := make(chan *Request, 16)
	after := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			outside <- FromContext(r.Context())
		})
	}
	cases := []struct{ target, want string }{
		{"/set/abc", "GET consumed=/set/abc path= query= v=abc"},
		{"/plain", "GET consumed=/plain path= query= v="},
		{"/nest/xyz/in", "GET consumed=/nest/xyz/in path= query= v=xyz"},
		{"/plain?q", "GET consumed=/plain path= query=q v="},
		{"/twice", `"b"`},
		{"/plain", "GET consumed=/plain path= query= v="},
	}

	t.Run("connection", func(t *testing.T) {
		srv := httptest.NewUnstartedServer(after(rt))
		srv.Listener = Listen(srv.Listener)
		srv.Config.ConnContext = ConnContext
		srv.Start()
		defer srv.Close()
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(conn)
		for _, c := range cases { // one connection, one request after another
			io.WriteString(conn, "GET "+c.target+" HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != c.want {
				t.Errorf("%s: %q, want %q", c.target, b, c.want)
			}
			if req := <-outside; req != nil {
				t.Errorf("%s: a request context outside the router: %+v", c.target, req)
			}
		}
	})
	t.Run("pool", func(t *testing.T) {
		h := after(rt)
		for _, c := range cases {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", c.target, nil))
			if w.Body.String() != c.want {
				t.Errorf("%s: %q, want %q", c.target, w.Body.String(), c.want)
			}
			if req := <-outside; req != nil {
				t.Errorf("%s: a request context outside the router: %+v", c.target, req)
			}
		}
	})
}

// TestValueOutsideRouter: Value on a request context made by hand renders
// a response of its own each time.
func TestValueOutsideRouter(t *testing.T) {
	req := &Request{}
	a, b := Value(req, "a"), Value(req, nil)
	if a == b || string(a.Body) != `"a"` || a.ContentType != TypeJSON || len(b.Body) != 0 {
		t.Errorf("%+v %+v", a, b)
	}
	if !strings.HasPrefix(string(Value(&Request{Vars: map[string]string{VarAccept: TypeXML}}, Node{Name: "n"}).Body), "<n") {
		t.Error("ACCEPT ignored")
	}
}

// TestKeptContext: a context kept past its request never answers with the
// state of a later request on the same connection, whether it is the
// request's own context, one derived from it or one detached from its
// cancellation; while the request lives, its own and derived contexts
// answer with it.
func TestKeptContext(t *testing.T) {
	type key struct{}
	kept := make(map[string]context.Context)
	var got []string
	name := func(ctx context.Context) string {
		if req := FromContext(ctx); req != nil {
			return req.Path
		}
		return "nil"
	}
	rt, err := NewRouter([]Route{{Match: "GET /", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		derived, cancel := context.WithCancel(context.WithValue(ctx, key{}, 1))
		defer cancel()
		got = append(got, "during "+name(ctx)+" "+name(derived))
		switch FromContext(ctx).Path {
		case "first":
			kept["own"] = ctx
			kept["value"] = context.WithValue(ctx, key{}, 2)
			kept["derived"] = derived
			kept["detached"] = context.WithoutCancel(ctx)
		case "second":
			for _, k := range []string{"own", "value", "derived", "detached"} {
				got = append(got, k+" "+name(kept[k]))
			}
		}
		io.WriteString(w, "ok")
	})}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(rt)
	srv.Listener = Listen(srv.Listener)
	srv.Config.ConnContext = ConnContext
	srv.Start()
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	for _, target := range []string{"/first", "/second"} { // one connection
		io.WriteString(conn, "GET "+target+" HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	want := []string{
		"during first first",
		"during second second",
		"own nil", "value nil", "derived nil", "detached nil",
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
