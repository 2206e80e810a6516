package core

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// echo answers the request context as text: method, consumed, path, query
// and the variables asked for.
func echo(vars ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := FromContext(r.Context())
		var b strings.Builder
		b.WriteString(req.Method + " consumed=" + req.Consumed + " path=" + req.Path + " query=" + req.Query)
		for _, v := range vars {
			b.WriteString(" " + v + "=" + req.Var(v))
		}
		io.WriteString(w, b.String())
	})
}

func TestRouterRules(t *testing.T) {
	routes := []Route{
		{Match: "GET,PUT,POST /(?P<type>xml|plain)/(?P<path>.*)", Rewrite: "GET,PUT,POST /%(path)s", Assign: []string{"ACCEPT=text/%(type)s"}},
		{Match: "GET,PUT,POST /json/(?P<path>.*)", Rewrite: "GET,PUT,POST /%(path)s", Assign: []string{"ACCEPT=application/json"}},
		{Match: `GET /config\?directory=(?P<directory>[^&]*)`, Rewrite: "PUT /config", Assign: []string{"CONTENT_TYPE=text/plain", "BODY=%(directory)u"}, Handler: echo("BODY", "CONTENT_TYPE", "directory")},
		{Match: `GET,PUT,POST /config(?:$|\?)`, Rewrite: "GET,PUT,PUT /config", Handler: echo("ACCEPT")},
		{Match: "GET /a/(?P<id>[0-9]+)", Rewrite: "GET /b/%(id)s?x=%(id)s&y=%%"},
		{Match: "GET /b/(?P<n>[0-9]+)", Handler: echo("id", "n")},
		{Match: "GET /opt(?P<o>-x)?/", Rewrite: "GET /opted/[%(o)s]"},
		{Match: "GET /opted/", Handler: echo("o")},
		{Match: "GET /dup/(?:(?P<d>a+)|(?P<d>b+))", Rewrite: "GET /files/%(d)s"},
		{Match: "GET /files", Handler: echo()},
		{Match: "DELETE,GET /q", Rewrite: "POST /q2"},
		{Match: "POST /q2", Handler: echo()},
	}
	rt, err := NewRouter(routes)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, method, target, want string
	}{
		{"plain handler", "GET", "/files/x/y", "GET consumed=/files path=/x/y query="},
		{"query kept", "GET", "/files/x?a=b", "GET consumed=/files path=/x query=a=b"},
		{"xml prefix continues", "GET", "/xml/config", "GET consumed=/config path= query= ACCEPT=text/xml"},
		{"plain prefix", "POST", "/plain/config", "PUT consumed=/config path= query= ACCEPT=text/plain"},
		{"json prefix", "PUT", "/json/config", "PUT consumed=/config path= query= ACCEPT=application/json"},
		{"post becomes put", "POST", "/config", "PUT consumed=/config path= query= ACCEPT="},
		{"config rewrite with decoded body", "GET", "/config?directory=%2Ftmp%20x", "PUT consumed=/config path= query= BODY=/tmp x CONTENT_TYPE=text/plain directory=%2Ftmp%20x"},
		{"rewrite chain keeps groups", "GET", "/a/42/rest", "GET consumed=/b/42 path= query=x=42&y=% id=42 n=42"},
		{"absent group is empty", "GET", "/opt/z", "GET consumed=/opted/ path=[] query= o="},
		{"present group", "GET", "/opt-x/z", "GET consumed=/opted/ path=[-x] query= o=-x"},
		{"method by position", "DELETE", "/q", "POST consumed=/q2 path= query="},
		{"duplicate group names: first one taking part", "GET", "/dup/bb", "GET consumed=/files path=/bb query="},
		{"decoded path", "GET", "/files/%2e%2e/a%20b", "GET consumed=/files path=/../a b query="},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			rt.ServeHTTP(w, httptest.NewRequest(c.method, c.target, nil))
			if w.Code != 200 || w.Body.String() != c.want {
				t.Errorf("%d %q\nwant %q", w.Code, w.Body.String(), c.want)
			}
		})
	}
}

// TestRouterKeepsWireRequest: a rewrite changes the request context, never
// the *http.Request: its method is what the client sent (HTTP Digest hashes
// it) and decides whether the answer carries a body.
func TestRouterKeepsWireRequest(t *testing.T) {
	var wire, routed string
	rt, err := NewRouter([]Route{
		{Match: "POST /a", Rewrite: "PUT /b"},
		{Match: "PUT /b", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			wire, routed = r.Method+" "+r.URL.Path, FromContext(r.Context()).Method
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	rt.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/a", nil))
	if wire != "POST /a" || routed != "PUT" {
		t.Errorf("wire %q, routed %q", wire, routed)
	}
}

func TestRouterNotFound(t *testing.T) {
	routes := []Route{
		{Match: "GET /a", Handler: echo()},
		{Match: "PUT /b", Rewrite: "GET /a"},
	}
	for _, o := range []struct {
		name string
		opts []RouterOption
		body string
	}{
		{"default", nil, "404 Not Found\n"},
		{"route list", []RouterOption{WithRouteList()}, "404 Not Found\nGET /a\nPUT /b\n"},
	} {
		t.Run(o.name, func(t *testing.T) {
			rt, err := NewRouter(routes, o.opts...)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ method, target string }{{"POST", "/a"}, {"GET", "/b"}, {"GET", "/"}} {
				w := httptest.NewRecorder()
				rt.ServeHTTP(w, httptest.NewRequest(c.method, "http://h"+c.target, nil))
				if w.Code != 404 || w.Header().Get("Content-Type") != "text/plain" || w.Body.String() != o.body ||
					w.Header().Get("Content-Length") != strconv.Itoa(len(o.body)) {
					t.Errorf("%s %s: %d %q %q", c.method, c.target, w.Code, w.Header(), w.Body.String())
				}
			}
		})
	}
	// The control case: the same table answers a request in absolute form
	// (http://h/a) for a route, so the 404s above are not the router's
	// failure to read such targets.
	rt, err := NewRouter(routes)
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	rt.ServeHTTP(w, httptest.NewRequest("GET", "http://h/a", nil))
	if w.Code != 200 || w.Body.String() != "GET consumed=/a path= query=" {
		t.Errorf("GET http://h/a: %d %q", w.Code, w.Body.String())
	}
}

func TestRouterInvalidRoutes(t *testing.T) {
	bad := []Route{
		{Match: "GET"},
		{Match: "GET "},
		{Match: " /a"},
		{Match: "get /a"},
		{Match: "GET,,PUT /a"},
		{Match: "GET /(unclosed"},
		{Match: "GET /a", Rewrite: "GET"},
		{Match: "GET /a", Rewrite: "GET,PUT /b"},
		{Match: "GET,PUT,POST /a", Rewrite: "GET,PUT /b"},
		{Match: "GET /a", Rewrite: "GET b"},
		{Match: "GET /(?P<x>a)", Rewrite: "GET /%(y)s"},
		{Match: "GET /(?P<x>a)", Rewrite: "GET /%(x)d"},
		{Match: "GET /(?P<x>a)", Rewrite: "GET /%(x"},
		{Match: "GET /a", Rewrite: "GET /%"},
		{Match: "GET /a", Assign: []string{"NOEQUALS"}},
		{Match: "GET /a", Assign: []string{"=x"}},
		{Match: "GET /a", Assign: []string{"1X=x"}},
		{Match: "GET /a", Assign: []string{"X=%(nogroup)s"}},
	}
	for _, r := range bad {
		_, err := NewRouter([]Route{{Match: "GET /ok"}, r})
		if err == nil {
			t.Errorf("%+v: accepted", r)
			continue
		}
		if !strings.Contains(err.Error(), "route 1") || !strings.Contains(err.Error(), r.Match) {
			t.Errorf("%+v: error %q does not name the route", r, err)
		}
	}
}

func TestRouterStatusErrorsAndPanics(t *testing.T) {
	rt, err := NewRouter([]Route{
		{Match: "GET /status", Handler: HTTP(HandlerFunc(func(context.Context, *Request) (*Response, error) {
			return nil, Status(400, "Invalid Path")
		}))},
		{Match: "GET /wrapped", Handler: HTTP(HandlerFunc(func(context.Context, *Request) (*Response, error) {
			return nil, errors.Join(errors.New("context"), ErrObjectNotFound)
		}))},
		{Match: "GET /fail", Handler: HTTP(HandlerFunc(func(context.Context, *Request) (*Response, error) {
			return nil, errors.New("disk on fire")
		}))},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		target string
		show   bool // served through ShowErrors
		code   int
		body   string
	}{
		{"/status", false, 400, "400 Invalid Path\n"},
		{"/status", true, 400, "400 Invalid Path\n"},
		{"/wrapped", false, 404, "404 Object Not Found\n"},
		{"/fail", false, 500, "500 Internal Server Error\n"},
		{"/fail", true, 500, "disk on fire"},
	}
	for _, c := range cases {
		w := httptest.NewRecorder()
		var h http.Handler = rt
		if c.show {
			h = ShowErrors(rt)
		}
		h.ServeHTTP(w, httptest.NewRequest("GET", c.target, nil))
		if w.Code != c.code || w.Body.String() != c.body || w.Header().Get("Content-Type") != "text/plain" {
			t.Errorf("%s (show %v): %d %q", c.target, c.show, w.Code, w.Body.String())
		}
	}
}

func FuzzNewRouter(f *testing.F) {
	f.Add("GET,PUT,POST /(?P<type>xml|plain)/(?P<path>.*)", "GET,PUT,POST /%(path)s", "ACCEPT=text/%(type)s", "GET", "/xml/a?b")
	f.Add(`GET /config\?directory=(?P<directory>[^&]*)`, "PUT /config", "BODY=%(directory)u", "GET", "/config?directory=%41")
	f.Add("GET /a", "", "", "GET", "/a")
	f.Add("GET /(?P<x>.*)", "GET /%%(x)s%(x)s", "X=%(x)s%%", "GET", "/%")
	f.Fuzz(func(t *testing.T, match, rewrite, assign, method, target string) {
		r := Route{Match: match, Rewrite: rewrite, Handler: echo()}
		if assign != "" {
			r.Assign = []string{assign}
		}
		rt, err := NewRouter([]Route{r})
		if err != nil {
			return
		}
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		req := &Request{Method: method, Path: target}
		req.Path, req.Query, _ = strings.Cut(target, "?")
		hr := httptest.NewRequest("GET", "/", nil)
		hr.Method = method
		w := httptest.NewRecorder()
		rt.ServeHTTP(w, hr.WithContext(NewContext(hr.Context(), req)))
		if w.Code != 200 && w.Code != 404 && w.Code != 400 {
			t.Fatalf("code %d", w.Code)
		}
	})
}
