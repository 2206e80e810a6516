package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wwwSite lays out an app's files in dir/site and returns that path.
func wwwSite(t *testing.T, dir string) string {
	t.Helper()
	site := filepath.Join(dir, "site")
	files := map[string]string{
		"index.html":       "<!doctype html><title>app</title>",
		"app.js":           "export const a = 1;\n",
		"mod.mjs":          "export {};\n",
		"style.css":        "body { margin: 0 }\n",
		"data.json":        `{"a": 1}`,
		"logo.svg":         "<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
		"blob.xyzzy":       "0123456789",
		"UPPER.HTML":       "<p>upper</p>",
		"sub/index.html":   "<p>sub</p>",
		"sub/page.html":    "<p>page</p>",
		"nodir/readme.txt": "no index here",
		".env":             "SECRET=1",
		".git/config":      "[core]",
		"sub/.hidden":      "hidden",
	}
	for name, body := range files {
		p := filepath.Join(site, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Links: one leaves the site, one stays inside it.
	if err := os.Symlink("../hello.txt", filepath.Join(site, "up-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(site, "etc-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/page.html", filepath.Join(site, "page-link.html")); err != nil {
		t.Fatal(err)
	}
	return site
}

// TestWWW: reso -www serves an app's static files under /app/ with the
// right types, index.html for directories, conditional and Range
// requests, HEAD, and the security headers; it never lists a directory,
// never leaves the directory and never serves dot-files.
func TestWWW(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		dir := t.TempDir()
		writeFixtures(t, dir)
		wwwSite(t, dir)
		s, err := startIn(t, dir, m, "-www", "site")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			s.stop()
			if t.Failed() {
				t.Logf("server log:\n%s", s.Log())
			}
		})

		for _, c := range []struct{ target, ct, body string }{
			{"/app/", "text/html; charset=utf-8", "<!doctype html><title>app</title>"},
			{"/app/index.html", "text/html; charset=utf-8", "<!doctype html><title>app</title>"},
			{"/app/app.js", "text/javascript; charset=utf-8", "export const a = 1;\n"},
			{"/app/mod.mjs", "text/javascript; charset=utf-8", "export {};\n"},
			{"/app/style.css", "text/css; charset=utf-8", "body { margin: 0 }\n"},
			{"/app/data.json", "application/json", `{"a": 1}`},
			{"/app/logo.svg", "image/svg+xml", "<svg xmlns=\"http://www.w3.org/2000/svg\"/>"},
			{"/app/blob.xyzzy", "application/octet-stream", "0123456789"},
			{"/app/UPPER.HTML", "text/html; charset=utf-8", "<p>upper</p>"},
			{"/app/sub/", "text/html; charset=utf-8", "<p>sub</p>"},
			{"/app/sub/page.html", "text/html; charset=utf-8", "<p>page</p>"},
			{"/app/page-link.html", "text/html; charset=utf-8", "<p>page</p>"},
			{"/app/sub%2Fpage.html", "text/html; charset=utf-8", "<p>page</p>"},
		} {
			got := s.get(t, c.target)
			check(t, got, want{ok200, c.ct, c.body})
			for name, v := range map[string]string{
				"X-Content-Type-Options": "nosniff",
				"X-Frame-Options":        "SAMEORIGIN",
				"Cache-Control":          "no-cache",
				"Accept-Ranges":          "bytes",
			} {
				if got.Header.Get(name) != v {
					t.Errorf("%s: %s %q, want %q", c.target, name, got.Header.Get(name), v)
				}
			}
			if csp := got.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
				t.Errorf("%s: Content-Security-Policy %q", c.target, csp)
			}
			if got.Header.Get("Etag") == "" || got.Header.Get("Last-Modified") == "" {
				t.Errorf("%s: no ETag or Last-Modified: %v", c.target, got.Header)
			}
		}

		// Directories named without their slash, and the prefix itself.
		for target, loc := range map[string]string{"/app": "/app/", "/app/sub": "/app/sub/", "/app?x=1": "/app/"} {
			got := s.get(t, target)
			if got.StatusLine != "HTTP/1.1 301 Moved Permanently" || got.Header.Get("Location") != loc {
				t.Errorf("%s: %q Location %q, want 301 to %s", target, got.StatusLine, got.Header.Get("Location"), loc)
			}
		}

		// HEAD: the same header, no body.
		head := s.do(t, "HEAD", "/app/style.css", "")
		if head.StatusLine != ok200 || head.Body != "" || head.Header.Get("Content-Length") != "19" ||
			head.Header.Get("Content-Type") != "text/css; charset=utf-8" || head.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("HEAD: %q %v %q", head.StatusLine, head.Header, head.Body)
		}

		// Range.
		got := s.get(t, "/app/blob.xyzzy", "Range: bytes=2-5")
		check(t, got, want{"HTTP/1.1 206 Partial Content", "application/octet-stream", "2345"})
		if cr := got.Header.Get("Content-Range"); cr != "bytes 2-5/10" {
			t.Errorf("Content-Range %q", cr)
		}

		// Conditional requests: 304 by ETag and by date; a changed ETag
		// gets the file.
		first := s.get(t, "/app/app.js")
		etag, lm := first.Header.Get("Etag"), first.Header.Get("Last-Modified")
		for _, h := range []string{"If-None-Match: " + etag, "If-Modified-Since: " + lm} {
			got := s.get(t, "/app/app.js", h)
			if got.StatusLine != "HTTP/1.1 304 Not Modified" || got.Body != "" {
				t.Errorf("%s: %q %q", h, got.StatusLine, got.Body)
			}
		}
		check(t, s.get(t, "/app/app.js", `If-None-Match: "other"`), want{ok200, "text/javascript; charset=utf-8", "export const a = 1;\n"})
		got = s.get(t, "/app/blob.xyzzy", "Range: bytes=0-1", `If-Range: "other"`)
		check(t, got, want{ok200, "application/octet-stream", "0123456789"})

		// Nothing outside the directory, no dot-files, no listings.
		for _, target := range []string{
			"/app/../hello.txt", "/app/%2e%2e/hello.txt", "/app/..%2fhello.txt", "/app/sub/../../hello.txt",
			"/app/sub/%2e%2e/%2e%2e/hello.txt", "/app/up-link", "/app/etc-link/passwd", "/app//etc/passwd",
			"/app/.env", "/app/.git/config", "/app/sub/.hidden", "/app/%2eenv", "/app/nodir/", "/app/nodir",
			"/app/missing.html", "/app/sub/index.html/", "/app/index.html%00", "/app/sub\\page.html",
		} {
			got := s.get(t, target)
			if got.StatusLine != "HTTP/1.1 404 Not Found" && got.StatusLine != "HTTP/1.1 400 Bad Request" {
				t.Errorf("%s: %q %q, want 404", target, got.StatusLine, got.Body)
			}
			if strings.Contains(got.Body, "hello, world") || strings.Contains(got.Body, "root:") || strings.Contains(got.Body, "SECRET") {
				t.Errorf("%s: leaked %q", target, got.Body)
			}
		}
		// Only GET and HEAD.
		if got := s.do(t, "PUT", "/app/index.html", "x"); got.StatusLine == ok200 {
			t.Errorf("PUT: %q", got.StatusLine)
		}
	})
}

// TestWWWOff: without -www, /app/ is not served.
func TestWWWOff(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := shared(t, m)
		if got := s.get(t, "/app/"); got.StatusLine != "HTTP/1.1 404 Not Found" {
			t.Errorf("/app/ without -www: %q", got.StatusLine)
		}
	})
}

// TestWWWStateDir: nothing in reso's state directory is served, even when
// the app's directory holds it: not the database, not the secret, not any
// other file there, not through a link; and an app directory inside the
// state directory stops the start.
func TestWWWStateDir(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		dir := t.TempDir()
		writeFixtures(t, dir)
		site := wwwSite(t, dir)
		// The state directory is site/reso: the database and secret go there.
		state := filepath.Join(site, "reso")
		if err := os.MkdirAll(state, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(state, "notes.txt"), []byte("state"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("reso", filepath.Join(site, "state-link")); err != nil {
			t.Fatal(err)
		}
		s, err := startWith(t, dir, m, launch{env: []string{"XDG_STATE_HOME=" + site}, stateDB: true}, "-www", "site")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			s.stop()
			if t.Failed() {
				t.Logf("server log:\n%s", s.Log())
			}
		})
		for _, name := range []string{"reso.db", "secret"} {
			if _, err := os.Stat(filepath.Join(state, name)); err != nil {
				t.Fatalf("the state is not where the test wants it: %v", err)
			}
		}
		for _, target := range []string{
			"/app/reso/reso.db", "/app/reso/secret", "/app/reso/notes.txt", "/app/reso/",
			"/app/state-link/notes.txt", "/app/state-link/reso.db",
		} {
			if got := s.get(t, target); got.StatusLine != "HTTP/1.1 404 Not Found" {
				t.Errorf("%s: %q %q", target, got.StatusLine, got.Body)
			}
		}
		// The app's own files still work.
		check(t, s.get(t, "/app/sub/page.html"), want{ok200, "text/html; charset=utf-8", "<p>page</p>"})
		// The files plugin keeps to the same rule.
		if got := s.get(t, "/file/site/reso/notes.txt"); got.StatusLine != "HTTP/1.1 404 Not Found" {
			t.Errorf("/file/site/reso/notes.txt: %q", got.StatusLine)
		}

		// -www inside the state directory is refused at start.
		_, err = startWith(t, dir, m, launch{env: []string{"XDG_STATE_HOME=" + site}, stateDB: true}, "-www", "site/reso")
		if err == nil || !strings.Contains(err.Error(), "state directory") {
			t.Errorf("-www in the state directory: %v", err)
		}
	})
}

// TestWWWPrefixClash: a -www-prefix that another plugin's routes take
// stops the start with an error naming the route; a free one works.
func TestWWWPrefixClash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFixtures(t, dir)
	wwwSite(t, dir)
	for _, c := range []struct{ prefix, route string }{
		{"/files/", "GET /files(?:/|$|\\?)"},
		{"/channel/", "/channel"},
		{"/console/", "GET /console/"},
		{"/xml/", "/(?P<type>"},
		{"/", "GET /(?:$|\\?)"},
	} {
		for _, m := range pluginModes() {
			// In the isolated mode, the www plugin in its process meets
			// the routes of the others compiled in.
			_, err := startIn(t, dir, m.isolating("www"), "-www", "site", "-www-prefix", c.prefix)
			if err == nil {
				t.Errorf("%s %s: started", m.name, c.prefix)
				continue
			}
			if !strings.Contains(err.Error(), "-www-prefix: www: prefix "+c.prefix+" clashes with the route `") || !strings.Contains(err.Error(), c.route) {
				t.Errorf("%s %s: %v", m.name, c.prefix, err)
			}
		}
	}
	for _, bad := range []string{"app/", "/app", "/a/../b/", "/a?/"} {
		_, err := startIn(t, dir, allModes[0], "-www", "site", "-www-prefix", bad)
		if err == nil || !strings.Contains(err.Error(), "-www-prefix "+bad+": want a path") {
			t.Errorf("-www-prefix %s: %v", bad, err)
		}
	}
	s, err := startIn(t, dir, allModes[0], "-www", "site", "-www-prefix", "/my/app/")
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	check(t, s.get(t, "/my/app/sub/page.html"), want{ok200, "text/html; charset=utf-8", "<p>page</p>"})
}
