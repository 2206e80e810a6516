package core

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// htmlListing is a directory listing as the files plugin answers it:
// files with a download url (RawURL), size and mtime, directories with the
// url of their listing.
func htmlListing() Node {
	return Node{"files", List{
		Node{"file", Record{{"name", "a.txt"}, {"url", RawURL("/file/a.txt")}, {"size", int64(6)}, {"mtime", int64(1700000000)}}},
		Node{"dir", Record{{"name", "sub"}, {"url", "/files/sub"}}},
		Node{"file", Record{{"name", `we <b>"ird'?.txt`}, {"url", RawURL("/file/we%20%3Cb%3E%22ird%27%3F.txt")}, {"size", int64(1)}, {"mtime", int64(1700000001)}}},
	}}
}

// TestRenderHTMLGolden compares HTML pages with the files in
// testdata/render; RENDER_UPDATE_GOLDEN=1 rewrites them.
func TestRenderHTMLGolden(t *testing.T) {
	for _, tc := range []struct {
		file string
		got  []byte
	}{
		{"record.html", AppendHTML(nil, HTMLPage{Title: "/config", LinkPrefix: "/html"}, renderConfig)},
		{"nested.html", AppendHTML(nil, HTMLPage{Title: "/some/file"}, renderACL)},
		{"list.html", AppendHTML(nil, HTMLPage{Title: "/users", LinkPrefix: "/html"},
			Node{"result", List{Record{{"url", "/users/0"}}, Record{{"url", "/users/1"}}}})},
		{"mixed.html", AppendHTML(nil, HTMLPage{Title: "/mixed", LinkPrefix: "/html"}, List{
			"text", int64(3), 1.5, true, nil, List{}, Record{},
			Record{{"url", "//evil.example/"}, {"url", "javascript:alert(1)"}, {"url", "/ok?a=1&b=<2>"}},
			[]string{"x", "y"},
		})},
		{"scalar.html", AppendHTML(nil, HTMLPage{}, "<script>alert('x')</script>")},
		{"listing.html", AppendHTML(nil, HTMLPage{Title: "/files", LinkPrefix: "/html"}, htmlListing())},
		{"error.html", AppendHTMLError(nil, "404 Not Found", []string{"GET /files(?:/|$|\\?)", "GET /a&b<c>"})},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", "render", tc.file)
			if os.Getenv("RENDER_UPDATE_GOLDEN") == "1" {
				if err := os.WriteFile(path, tc.got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(tc.got, want) {
				t.Errorf("rendering differs from %s:\n%s", path, tc.got)
			}
			checkHTML(t, tc.got, nil)
		})
	}
}

func TestNegotiateHTML(t *testing.T) {
	for typ, want := range map[string]string{
		"text/html":            TypeHTML,
		"TEXT/HTML":            TypeHTML,
		"text/html, text/xml":  TypeXML,
		"text/html text/plain": TypePlain,
		"text/html, */*":       TypeJSON,
	} {
		if got := Negotiate(typ); got != want {
			t.Errorf("Negotiate(%q) = %q, want %q", typ, got, want)
		}
	}
	ct, body := Render("text/html", Node{"a", "b"})
	if ct != ContentTypeHTML || !bytes.Contains(body, []byte("<dt>a</dt><dd>b</dd>")) {
		t.Errorf("Render(text/html) = %q, %s", ct, body)
	}
}

// TestHTMLAnswers checks the headers of an HTML answer, an HTML error and
// the router's HTML 404.
func TestHTMLAnswers(t *testing.T) {
	rt, err := NewRouter([]Route{
		{Match: "GET /html/(?P<path>.*)", Rewrite: "GET /%(path)s", Assign: []string{"ACCEPT=text/html", "LINK_PREFIX=/html"}},
		{Match: "GET /v", Handler: HTTP(HandlerFunc(func(_ context.Context, req *Request) (*Response, error) {
			return Value(req, Record{{"url", "/v"}}), nil
		}))},
		{Match: "GET /e", Handler: HTTP(HandlerFunc(func(context.Context, *Request) (*Response, error) {
			return nil, Status(400, "Bad <Thing>")
		}))},
	}, WithRouteList())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target string
		code   int
		want   string
	}{
		{"/html/v", 200, `<title>/v</title>`},
		{"/html/v", 200, `<a href="/html/v">/v</a>`},
		{"/html/e", 400, `<h1>400 Bad &lt;Thing&gt;</h1>`},
		{"/html/nothing", 404, `<li>GET /html/(?P&lt;path&gt;.*)</li>`},
	} {
		w := httptest.NewRecorder()
		rt.ServeHTTP(w, httptest.NewRequest(http.MethodGet, tc.target, nil))
		h := w.Result().Header
		if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("GET %s: %d\n%s\nwant %d with %s", tc.target, w.Code, w.Body, tc.code, tc.want)
		}
		if h.Get("Content-Type") != ContentTypeHTML || h.Get("Content-Security-Policy") != HTMLPolicy ||
			h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: headers %v", tc.target, h)
		}
		checkHTML(t, w.Body.Bytes(), nil)
	}
}

// htmlElements are the elements the renderer writes.
var htmlElements = map[string]bool{
	"html": true, "head": true, "meta": true, "title": true, "body": true, "main": true, "h1": true,
	"p": true, "ul": true, "dl": true, "dt": true, "dd": true, "ol": true, "li": true, "a": true, "time": true,
	"table": true, "thead": true, "tbody": true, "tr": true, "th": true, "td": true,
}

// checkHTML parses page as HTML and checks that it has only the renderer's
// elements and attributes, and, when texts is not nil, that every text
// node (but the white space between elements) is one of texts.
func checkHTML(t *testing.T, page []byte, texts map[string]bool) {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, page)
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.ElementNode:
			if !htmlElements[n.Data] {
				t.Errorf("element %q in\n%q", n.Data, page)
			}
			for _, a := range n.Attr {
				switch a.Key {
				case "lang", "charset", "name", "content", "start", "href", "scope", "datetime":
				default:
					t.Errorf("attribute %q on %q in\n%q", a.Key, n.Data, page)
				}
				if a.Key == "href" && (!strings.HasPrefix(a.Val, "/") || strings.HasPrefix(a.Val, "//")) {
					t.Errorf("href %q in\n%q", a.Val, page)
				}
			}
		case html.TextNode:
			if texts != nil && strings.Trim(n.Data, "\n") != "" && !texts[n.Data] {
				t.Errorf("text %q is no input text in\n%q", n.Data, page)
			}
		case html.CommentNode:
			t.Errorf("comment %q in\n%q", n.Data, page)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
}

// htmlClean is s as the renderer keeps it: characters HTML does not allow
// replaced by U+FFFD.
func htmlClean(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\ufffd"),
			r < 0x20 && r != '\t' && r != '\n' && r != '\r', r == 0xfffe, r == 0xffff:
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// FuzzRenderHTML renders values built from fuzz input (names and texts
// with markup characters, in records, nodes, lists and table-shaped lists)
// and checks that the page parses as HTML with only the renderer's
// elements, and that every text node is one of the input texts or the
// renderer's own: nothing from the value becomes markup.
func FuzzRenderHTML(f *testing.F) {
	f.Add("name", "<b>bold</b>", "/url?a=1&b=2", "</dd><script>x</script>", "'\"&<>")
	f.Add("url", "/x", "javascript:alert(1)", "\r\n", "\x00\xff")
	f.Add("", "", "", "", "")
	f.Add("mtime", "<!--", "-->", "<![CDATA[", "]]>")
	f.Fuzz(func(t *testing.T, a, b, c, d, e string) {
		v := List{
			Record{{a, b}, {"url", c}, {d, e}},
			Node{a, List{b, c, Node{d, e}}},
			Node{"url", b},
			List{Node{a, Record{{"name", b}, {"url", c}}}, Node{d, Record{{"name", e}, {"url", RawURL(b)}}}},
			List{Record{{a, b}, {c, d}}, Record{{e, a}}},
			[]string{a, b, c, d, e},
			map[string]string{a: b, c: d},
		}
		texts := map[string]bool{
			"kind": true, "url": true, "name": true, "reso": true,
			htmlClean(e) + "\n": true, // the title's and page's text end with a newline
		}
		for _, s := range []string{a, b, c, d, e} {
			texts[htmlClean(s)] = true
		}
		page := AppendHTML(nil, HTMLPage{Title: e, LinkPrefix: "/html"}, v)
		checkHTML(t, page, texts)
		if !utf8.Valid(page) {
			t.Errorf("invalid UTF-8 in %q", page)
		}
	})
}

// TestOwnPolicy checks that an HTML answer that brings its own
// Content-Security-Policy keeps it, and one without gets HTMLPolicy.
func TestOwnPolicy(t *testing.T) {
	for _, own := range []string{"", "default-src 'none'; script-src 'self'"} {
		w := httptest.NewRecorder()
		resp := &Response{ContentType: ContentTypeHTML, Body: []byte("<!DOCTYPE html>")}
		if own != "" {
			resp.Header = http.Header{"Content-Security-Policy": {own}}
		}
		WriteResponse(w, httptest.NewRequest("GET", "/", nil), resp)
		want := own
		if want == "" {
			want = HTMLPolicy
		}
		if got := w.Header().Get("Content-Security-Policy"); got != want || w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("own %q: policy %q, nosniff %q", own, got, w.Header().Get("X-Content-Type-Options"))
		}
	}
}
