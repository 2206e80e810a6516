package core

import (
	"context"
	"net/http"
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
