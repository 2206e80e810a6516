package www

import (
	"net/http"
	"strings"
	"testing"

	"github.com/reso-project/reso/core"
)

func TestContentType(t *testing.T) {
	for name, want := range map[string]string{
		"a.html": "text/html; charset=utf-8", "A.JS": "text/javascript; charset=utf-8",
		"b.d.ts": "text/plain; charset=utf-8", "c.wasm": "application/wasm", "noext": "application/octet-stream",
	} {
		if got := ContentType(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	for p, ok := range map[string]bool{
		"/": true, "/app/": true, "/a/b/": true,
		"": false, "app/": false, "/app": false, "//": false, "/a//b/": false, "/a/../b/": false, "/a?/": false, "/a%20/": false, "/a\n/": false,
	} {
		if err := CheckPrefix(p); (err == nil) != ok {
			t.Errorf("%q: %v", p, err)
		}
	}
}

func TestServable(t *testing.T) {
	for p, ok := range map[string]bool{
		"": true, "a.html": true, "sub/": true, "sub/a.js": true,
		".env": false, "sub/.git/x": false, "..": false, "a//b": false, "a\\b": false, "a\x00": false,
	} {
		if servable(p) != ok {
			t.Errorf("%q: %v", p, !ok)
		}
	}
}

func TestClash(t *testing.T) {
	h := http.NotFoundHandler()
	table := []core.Route{
		{Match: `GET /files(?:/|$|\?)`, Handler: h},
		{Match: `GET,PUT /(?P<type>xml|plain)/(?P<path>.*)`, Rewrite: "GET,PUT /%(path)s"},
		{Match: `PUT /app/upload`, Handler: h},
		{Match: `GET /api/v1/`, Handler: h},
	}
	for prefix, want := range map[string]string{
		"/app/":      "",
		"/api/v1/x/": "GET /api/v1/",
		"/files/":    "GET /files",
		"/xml/":      "/(?P<type>",
		"/api/":      "GET /api/v1/",
		"/":          "GET /files",
	} {
		tb := append(table[:len(table):len(table)], core.Route{Match: Match(prefix), Handler: h})
		err := Clash(tb, prefix)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", prefix, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want a clash with %s", prefix, err, want)
		}
	}
}
