package tests

import (
	"strings"
	"testing"
)

// consoleCSP is the Content-Security-Policy of every file of the console.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// TestConsoleFiles: the console's page and its assets are served under
// /console/ with their types and a strict Content-Security-Policy, compiled
// in and isolated; nothing else is.
func TestConsoleFiles(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := shared(t, m)
		for _, f := range []struct{ path, ctype, contains string }{
			{"/console/", "text/html; charset=utf-8", `<script src="console.js" defer></script>`},
			{"/console/index.html", "text/html; charset=utf-8", `<ol id="log" aria-live="polite"`},
			{"/console/console.css", "text/css; charset=utf-8", "#log"},
			{"/console/console.js", "text/javascript; charset=utf-8", `"/channel"`},
		} {
			for _, method := range []string{"GET", "HEAD"} {
				got := s.do(t, method, f.path, "")
				if got.StatusLine != "HTTP/1.1 200 OK" {
					t.Errorf("%s %s: %q", method, f.path, got.StatusLine)
					continue
				}
				for name, want := range map[string]string{
					"Content-Type":            f.ctype,
					"Content-Security-Policy": consoleCSP,
					"X-Content-Type-Options":  "nosniff",
				} {
					if v := got.Header.Get(name); v != want {
						t.Errorf("%s %s: %s %q, want %q", method, f.path, name, v, want)
					}
				}
				if method == "GET" && !strings.Contains(got.Body, f.contains) {
					t.Errorf("GET %s: no %q in the body", f.path, f.contains)
				}
			}
		}
		for _, p := range []string{"/console/nothing.js", "/console/../console/console.js", "/console/%2e%2e/plugin.go", "/console/static/index.html"} {
			if got := s.get(t, p); got.StatusLine != "HTTP/1.1 404 Not Found" {
				t.Errorf("GET %s: %q, want 404 Not Found", p, got.StatusLine)
			}
		}
		// Without the trailing slash the router knows no route.
		check(t, s.get(t, "/console"), want{"HTTP/1.1 404 Not Found", textCT, routeForms})
	})
}

// TestRootRedirect checks that the server's root sends a person to the
// console.
func TestRootRedirect(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := shared(t, m)
		for _, target := range []string{"/", "/?x=1"} {
			r := s.get(t, target)
			if r.StatusLine != "HTTP/1.1 302 Found" || r.Header.Get("Location") != "/console/" {
				t.Errorf("GET %s: %s, Location %q", target, r.StatusLine, r.Header.Get("Location"))
			}
		}
	})
}
