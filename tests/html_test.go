package tests

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// htmlPolicy is the Content-Security-Policy of every HTML answer
// (docs/wire.md#html).
const htmlPolicy = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// TestHTML reads resources through the /html/ prefix: pages with the HTML
// headers, values as definition lists, lists and tables with links, and
// errors as pages with their status line.
func TestHTML(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := shared(t, m)
		for _, tc := range []struct {
			target, status string
			want           []string
		}{
			{"/html/config", "HTTP/1.1 200 OK", []string{
				"<!DOCTYPE html>\n<html lang=\"en\">",
				"<title>/config</title>",
				"<main>\n<h1>/config</h1>\n<dl><dt>config</dt><dd><dl><dt>directory</dt><dd>",
			}},
			{"/html/users", "HTTP/1.1 200 OK", []string{
				`<ol start="0"><li><dl><dt>url</dt><dd><a href="/html/users/0">/users/0</a></dd></dl></li>`,
				`<a href="/html/users/1">/users/1</a>`,
			}},
			{"/html/users/0", "HTTP/1.1 200 OK", []string{"<dt>username</dt><dd>alice</dd>"}},
			{"/html/files", "HTTP/1.1 200 OK", []string{
				`<table><thead><tr><th scope="col">kind</th><th scope="col">name</th><th scope="col">size</th><th scope="col">mtime</th></tr></thead>`,
				`<tr><td>file</td><td><a href="/file/hello.txt">hello.txt</a></td><td>13</td>` +
					`<td><time datetime="2023-11-14T22:13:20Z">2023-11-14 22:13:20 UTC</time></td></tr>`,
				`<tr><td>dir</td><td><a href="/html/files/sub">sub</a></td><td></td><td></td></tr>`,
			}},
			{"/html/files/sub", "HTTP/1.1 200 OK", []string{
				`<a href="/file/sub/data.bin">data.bin</a>`,
				`<a href="/html/files/sub/deeper">deeper</a>`,
			}},
			{"/html/nothing", "HTTP/1.1 404 Not Found", []string{
				"<title>404 Not Found</title>",
				"<h1>404 Not Found</h1>",
				"<li>GET,PUT,POST /(?P&lt;type&gt;xml|plain|html)/(?P&lt;path&gt;.*)</li>",
			}},
			{"/html/files/sub/..", "HTTP/1.1 400 Invalid Path", []string{"<h1>400 Invalid Path</h1>"}},
		} {
			t.Run(tc.target, func(t *testing.T) {
				r := s.get(t, tc.target)
				if r.StatusLine != tc.status {
					t.Errorf("status line %q, want %q\n%s", r.StatusLine, tc.status, r.Body)
				}
				for name, want := range map[string]string{
					"Content-Type":            "text/html; charset=utf-8",
					"Content-Security-Policy": htmlPolicy,
					"X-Content-Type-Options":  "nosniff",
				} {
					if got := r.Header.Get(name); got != want {
						t.Errorf("%s: %q, want %q", name, got, want)
					}
				}
				for _, w := range tc.want {
					if !strings.Contains(r.Body, w) {
						t.Errorf("body lacks %q:\n%s", w, r.Body)
					}
				}
				if !strings.HasSuffix(r.Body, "</main>\n</body>\n</html>\n") {
					t.Errorf("body does not end the page:\n%s", r.Body)
				}
			})
		}
		// The plain 404 is unchanged by the HTML one.
		if r := s.get(t, "/nothing"); r.Body != routeForms || r.Header.Get("Content-Type") != "text/plain" {
			t.Errorf("GET /nothing: %q %q", r.Header.Get("Content-Type"), r.Body)
		}
	})
}

// TestHTMLBrowser opens /html/files in headless Chromium, follows the
// link of a directory, checks the link of a file download and comes back.
// Screenshots of the pages are saved as PNG files under
// $RESO_SCREENSHOT_DIR, else a temporary directory, and logged.
func TestHTMLBrowser(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // skips early without a browser
	dir := os.Getenv("RESO_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	eachMode(t, func(t *testing.T, m mode) {
		s := shared(t, m)
		browser := newBrowser(t)
		tctx, cancel := chromedp.NewContext(browser)
		defer cancel()
		if err := chromedp.Do(tctx); err != nil { // creates the tab: no timeout
			t.Fatal(err)
		}
		do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
			t.Helper()
			step, cancel := context.WithTimeout(tctx, wait)
			defer cancel()
			if err := chromedp.Do(step, steps...); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		get := func(what string, a chromedp.Action[string]) string {
			t.Helper()
			step, cancel := context.WithTimeout(tctx, wait)
			defer cancel()
			v, err := chromedp.Run(step, a)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			return v
		}
		attr := func(sel, name string) string {
			t.Helper()
			step, cancel := context.WithTimeout(tctx, wait)
			defer cancel()
			v, err := chromedp.Run(step, chromedp.AttributeValue(chromedp.CSS(sel), name))
			if err != nil {
				t.Fatalf("%s of %s: %v", name, sel, err)
			}
			return v.Value
		}
		shot := func(name string) {
			t.Helper()
			step, cancel := context.WithTimeout(tctx, wait)
			defer cancel()
			png, err := chromedp.Run(step, chromedp.FullScreenshot(100)) // 100: PNG, else JPEG
			if err != nil {
				t.Fatalf("screenshot %s: %v", name, err)
			}
			if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
				t.Fatalf("screenshot %s is no PNG", name)
			}
			p := filepath.Join(dir, m.name+"-"+name+".png")
			if err := os.WriteFile(p, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot: %s", p)
		}
		page := func() (title, h1, loc string) {
			t.Helper()
			return get("title", chromedp.Title()), get("h1", chromedp.Text(chromedp.CSS("h1"))), get("location", chromedp.Location())
		}

		do("open /html/files", chromedp.Navigate(s.URL+"/html/files"), chromedp.WaitVisible(chromedp.CSS("main table")))
		title, h1, _ := page()
		table := get("table", chromedp.Text(chromedp.CSS("main table")))
		if title != "/files" || h1 != "/files" || !strings.Contains(table, "hello.txt") || !strings.Contains(table, "sub") {
			t.Errorf("/html/files: title %q, h1 %q, table %q", title, h1, table)
		}
		shot("files")

		do("follow the directory link",
			chromedp.Click(chromedp.CSS(`a[href="/html/files/sub"]`)),
			chromedp.WaitVisible(chromedp.CSS(`a[href="/file/sub/data.bin"]`)))
		title, h1, loc := page()
		if loc != s.URL+"/html/files/sub" || title != "/files/sub" || h1 != "/files/sub" {
			t.Errorf("after the directory link: location %q, title %q, h1 %q", loc, title, h1)
		}
		shot("files-sub")

		// The file link is a download (application/octet-stream), which a
		// headless browser saves rather than shows: check its target, and
		// that the target serves the file's bytes.
		if href := attr(`a[href^="/file/"]`, "href"); href != "/file/sub/data.bin" {
			t.Errorf("file link %q, want /file/sub/data.bin", href)
		} else if r := s.get(t, href); r.StatusLine != "HTTP/1.1 200 OK" || r.Body != fixtureData {
			t.Errorf("GET %s: %q, %d bytes", href, r.StatusLine, len(r.Body))
		}

		do("follow the subdirectory link",
			chromedp.Click(chromedp.CSS(`a[href="/html/files/sub/deeper"]`)),
			chromedp.WaitVisible(chromedp.CSS(`h1`)),
			chromedp.WaitNotPresent(chromedp.CSS(`a[href="/html/files/sub/deeper"]`)))
		_, h1, loc = page()
		if loc != s.URL+"/html/files/sub/deeper" || h1 != "/files/sub/deeper" {
			t.Errorf("after the subdirectory link: location %q, h1 %q", loc, h1)
		}
		shot("files-sub-deeper")

		do("an error page", chromedp.Navigate(s.URL+"/html/nothing"), chromedp.WaitVisible(chromedp.CSS(`main ul`)))
		if _, h1, _ := page(); h1 != "404 Not Found" {
			t.Errorf("/html/nothing: h1 %q", h1)
		}
		shot("not-found")
	})
}
