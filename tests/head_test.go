package tests

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// headAnswer is a HEAD answer read off the wire up to the server's close:
// the status line, the header, and whatever followed the header (a HEAD
// answer has no body, so nothing should).
type headAnswer struct {
	StatusLine string
	Header     http.Header
	Rest       string
}

// head sends "HEAD target" with Connection: close and reads until the
// server closes.
func (s *server) head(t *testing.T, target string, headers ...string) headAnswer {
	t.Helper()
	var b strings.Builder
	b.WriteString("HEAD " + target + " HTTP/1.1\r\nHost: " + s.Addr + "\r\nConnection: close\r\n")
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	out := exchange(t, s.Addr, b.String(), false)
	end := strings.Index(out, "\r\n\r\n")
	if end < 0 {
		t.Fatalf("no complete header: %q", out)
	}
	br := bufio.NewReader(strings.NewReader(out[:end+4]))
	resp, err := http.ReadResponse(br, &http.Request{Method: "HEAD"})
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	line, _, _ := strings.Cut(out, "\r\n")
	return headAnswer{StatusLine: line, Header: resp.Header, Rest: out[end+4:]}
}

// TestHead checks that HEAD on every GET route answers like GET without a
// body: the same status line, Content-Length, Content-Type and, for
// downloads, Last-Modified.
func TestHead(t *testing.T) {
	t.Parallel()
	const basic = "Authorization: Basic dXNlckBleGFtcGxlLm9yZzpleGFtcGxl" // user@example.org:example
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m) // of its own: the logins change the stored token
		cases := []struct {
			name, target string
			headers      []string
			lastModified string // "" when the answer has none
			setCookies   bool
		}{
			{name: "config", target: "/config"},
			{name: "config xml", target: "/xml/config"},
			{name: "config plain", target: "/plain/config"},
			{name: "files", target: "/files"},
			{name: "files sub", target: "/files/sub"},
			{name: "files invalid path", target: "/files/.."},
			{name: "files not found", target: "/files/missing"},
			{name: "users", target: "/users"},
			{name: "users 0", target: "/users/0"},
			{name: "users 0 xml", target: "/xml/users/0"},
			{name: "users bad scope", target: "/users/x"},
			{name: "download", target: "/file/hello.txt", lastModified: "Tue, 14 Nov 2023 22:13:20 GMT"},
			{name: "download missing", target: "/file/missing"},
			{name: "private", target: "/private/x", headers: []string{basic}, setCookies: true},
			{name: "private without credentials", target: "/private/x"},
			{name: "no route", target: "/nothing"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				g := s.get(t, c.target, c.headers...)
				h := s.head(t, c.target, c.headers...)
				if h.StatusLine != g.StatusLine {
					t.Errorf("status line %q, GET answers %q", h.StatusLine, g.StatusLine)
				}
				for _, name := range []string{"Content-Type", "Content-Length", "Last-Modified", "Www-Authenticate"} {
					if hv, gv := h.Header.Get(name), g.Header.Get(name); hv != gv {
						t.Errorf("%s %q, GET answers %q", name, hv, gv)
					}
				}
				if cl := h.Header.Get("Content-Length"); cl == "" {
					t.Errorf("no Content-Length")
				} else if want := len(g.Body); cl != strconv.Itoa(want) {
					t.Errorf("Content-Length %s, GET's body has %d bytes", cl, want)
				}
				if got := h.Header.Get("Last-Modified"); got != c.lastModified {
					t.Errorf("Last-Modified %q, want %q", got, c.lastModified)
				}
				if got := len(h.Header.Values("Set-Cookie")) > 0; got != c.setCookies {
					t.Errorf("Set-Cookie %q", h.Header.Values("Set-Cookie"))
				}
				if h.Rest != "" {
					t.Errorf("a body after the header: %q", h.Rest)
				}
			})
		}
		// The exact answers of two of them.
		if h := s.head(t, "/file/hello.txt"); h.StatusLine != ok200 || h.Header.Get("Content-Length") != "13" || h.Header.Get("Content-Type") != octCT {
			t.Errorf("HEAD /file/hello.txt: %q %q", h.StatusLine, h.Header)
		}
		if h := s.head(t, "/config"); h.StatusLine != ok200 || h.Header.Get("Content-Length") != "30" || h.Header.Get("Content-Type") != jsonCT {
			t.Errorf("HEAD /config: %q %q", h.StatusLine, h.Header)
		}
	})
}

// TestHeadChangesNothing checks that HEAD never changes state: the route
// that rewrites GET /config?directory=x to PUT does not apply to HEAD, which
// answers like GET /config.
func TestHeadChangesNothing(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := shared(t, m)
		h := s.head(t, "/config?directory=/tmp")
		if h.StatusLine != ok200 || h.Header.Get("Content-Type") != jsonCT || h.Header.Get("Content-Length") != "30" || h.Rest != "" {
			t.Errorf("HEAD /config?directory=/tmp: %q %q %q", h.StatusLine, h.Header, h.Rest)
		}
		check(t, s.get(t, "/config"), want{ok200, jsonCT, `{"config": {"directory": "."}}`})
		// Methods other than GET and HEAD are still not routed to GET routes.
		check(t, s.do(t, "DELETE", "/files", ""), want{"HTTP/1.1 404 Not Found", textCT, s.get(t, "/nothing").Body})
	})
}
