package console

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

// server routes the plugin's routes with the core router behind an
// httptest server.
func server(t *testing.T) *httptest.Server {
	t.Helper()
	rs, err := Plugin{}.Routes(context.Background(), plugins.Services{})
	if err != nil {
		t.Fatal(err)
	}
	var routes []core.Route
	for _, r := range rs {
		routes = append(routes, core.Route{Match: r.Match, Handler: core.HTTP(r.Handler)})
	}
	router, err := core.NewRouter(routes)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, method, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestFiles(t *testing.T) {
	srv := server(t)
	for _, tc := range []struct {
		path, ctype, contains string
	}{
		{"/console/", "text/html; charset=utf-8", `<script src="console.js" defer></script>`},
		{"/console/index.html", "text/html; charset=utf-8", `<link rel="stylesheet" href="console.css">`},
		{"/console/console.css", "text/css; charset=utf-8", "#log"},
		{"/console/console.js", "text/javascript; charset=utf-8", `"/channel"`},
	} {
		for _, method := range []string{"GET", "HEAD"} {
			resp, body := get(t, method, srv.URL+tc.path)
			if resp.StatusCode != 200 {
				t.Errorf("%s %s: %s", method, tc.path, resp.Status)
				continue
			}
			h := resp.Header
			if got := h.Get("Content-Type"); got != tc.ctype {
				t.Errorf("%s %s: Content-Type %q, want %q", method, tc.path, got, tc.ctype)
			}
			if got := h.Get("Content-Security-Policy"); got != CSP {
				t.Errorf("%s %s: Content-Security-Policy %q, want %q", method, tc.path, got, CSP)
			}
			if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("%s %s: X-Content-Type-Options %q", method, tc.path, got)
			}
			if method == "HEAD" {
				if body != "" {
					t.Errorf("HEAD %s: a body", tc.path)
				}
				continue
			}
			if !strings.Contains(body, tc.contains) {
				t.Errorf("GET %s: no %q in the body", tc.path, tc.contains)
			}
		}
	}
}

// TestNotFound: only the embedded files, by their exact names, are served.
func TestNotFound(t *testing.T) {
	srv := server(t)
	for _, p := range []string{
		"/console/nothing.js",
		"/console/console.go",
		"/console/static/index.html",
		"/console/../console/console.js",
		"/console/%2e%2e/console.go",
		"/console/..%2fconsole.go",
		"/console/%2fetc%2fpasswd",
		"/console//index.html",
		"/console/./index.html",
		"/console/index.html/",
		"/console/index.html%00",
		"/console/INDEX.HTML",
		"/console/.",
	} {
		resp, _ := get(t, "GET", srv.URL+p)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %s, want 404 Not Found", p, resp.Status)
		}
	}
	// The handler itself, whatever path a router gives it.
	for _, p := range []string{"..", "../console.go", "/index.html", "static/console.js", "console.js/..", "\\console.js"} {
		_, err := Handler{}.Handle(context.Background(), &core.Request{Method: "GET", Path: p})
		if se, ok := core.AsStatus(err); !ok || se.Code() != http.StatusNotFound {
			t.Errorf("Handle(%q): %v, want 404 Not Found", p, err)
		}
	}
}

// TestNoInline: the page has no inline script or style, which the CSP
// would block anyway.
func TestNoInline(t *testing.T) {
	html := string(files["index.html"].body)
	for _, bad := range []string{"<script>", "<style", " style=", " onclick=", " onload=", " onsubmit=", "javascript:"} {
		if strings.Contains(html, bad) {
			t.Errorf("index.html has %q", bad)
		}
	}
	js := string(files["console.js"].body)
	if strings.Contains(js, "innerHTML") || strings.Contains(js, "eval(") {
		t.Error("console.js writes HTML or evaluates text")
	}
}
