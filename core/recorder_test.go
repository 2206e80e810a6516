package core

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRouteRecorder: the router reports the Match of the route whose handler
// answered, never the path; "" when no route answered.
func TestRouteRecorder(t *testing.T) {
	inner, err := NewRouter([]Route{{Match: "GET /sub/(?P<id>[0-9]+)", Handler: echo()}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := NewRouter([]Route{
		{Match: "GET,PUT,POST /(?P<type>xml|plain)/(?P<path>.*)", Rewrite: "GET,PUT,POST /%(path)s", Assign: []string{"ACCEPT=text/%(type)s"}},
		{Match: `GET /files(?:/|$|\?)`, Handler: echo()},
		{Match: "GET /nested", Handler: inner},
	})
	if err != nil {
		t.Fatal(err)
	}
	routes := make(chan string, 1)
	srv := newWireServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rec RouteRecorder
		rt.ServeHTTP(w, r.WithContext(WithRouteRecorder(r.Context(), &rec)))
		routes <- rec.Route
	}))
	cases := []struct{ target, want string }{
		{"/files/a/b?x=1", `GET /files(?:/|$|\?)`},
		{"/xml/files", `GET /files(?:/|$|\?)`},
		{"/files", `GET /files(?:/|$|\?)`},
		{"/nested/sub/7", "GET /sub/(?P<id>[0-9]+)"},
		{"/nested/other", "GET /nested"}, // the inner router's 404 keeps the outer route
		{"/nothing", ""},
	}
	for _, c := range cases {
		exchange(t, srv.Listener.Addr().String(), "GET "+c.target+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", false)
		if got := <-routes; got != c.want {
			t.Errorf("%s: route %q, want %q", c.target, got, c.want)
		}
	}
	recordRoute(context.Background(), "x") // without a recorder: nothing to do
}

// TestServeRecorded: the route that answers reaches the recorder given to
// ServeRecorded, on a connection of a Listen listener (where the request is
// not copied) and on a plain one; an inner recorder in the request's
// context is not shadowed by the connection's, and the connection keeps no
// recorder after the request.
func TestServeRecorded(t *testing.T) {
	rt, err := NewRouter([]Route{{Match: `GET /files(?:/|$|\?)`, Handler: echo()}})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		outer, inner string
		copied, left bool
	}
	results := make(chan result, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var outer, inner RouteRecorder
		var res result
		ServeRecorded(http.HandlerFunc(func(w http.ResponseWriter, r2 *http.Request) {
			res.copied = r2 != r
			if r.URL.Query().Has("inner") {
				rt.ServeHTTP(w, r2.WithContext(WithRouteRecorder(r2.Context(), &inner)))
				return
			}
			rt.ServeHTTP(w, r2)
		}), w, r, &outer)
		res.outer, res.inner = outer.Route, inner.Route
		res.left = RouteRecorderFrom(r.Context()) != nil
		results <- res
	})
	const files = `GET /files(?:/|$|\?)`
	for _, c := range []struct {
		name   string
		listen bool
		target string
		want   result
	}{
		{"listen", true, "/files", result{outer: files}},
		{"listen inner", true, "/files?inner", result{inner: files}},
		{"listen none", true, "/nothing", result{}},
		{"plain", false, "/files", result{outer: files, copied: true}},
		{"plain inner", false, "/files?inner", result{inner: files, copied: true}},
	} {
		var addr string
		if c.listen {
			addr = newWireServer(t, h).Listener.Addr().String()
		} else {
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			addr = srv.Listener.Addr().String()
		}
		exchange(t, addr, "GET "+c.target+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", false)
		if got := <-results; got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}
