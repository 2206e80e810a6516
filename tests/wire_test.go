package tests

import (
	"bufio"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"
)

// exchange sends request on a new TCP connection, half-closes the
// connection's write side when halfClose is set, and returns every byte the
// server sends until it closes the connection.
func exchange(t *testing.T, addr, request string, halfClose bool) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	if halfClose {
		if err := c.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading until the server closes: %v (got %q)", err, b)
	}
	return string(b)
}

var dateRe = regexp.MustCompile(`(?m)^Date: [^\r]*\r$`)

// noDate replaces the value of Date headers with "-".
func noDate(s string) string { return dateRe.ReplaceAllString(s, "Date: -\r") }

// TestHTTP10ReasonPhrase checks that an HTTP/1.0 answer carries the exact
// reason phrase, and that the phrase of one answer never reaches a later
// one: net/http's own 400 for an unparsable request pipelined behind it
// keeps its standard phrase.
func TestHTTP10ReasonPhrase(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := shared(t, m)
		invalid := "HTTP/1.0 400 Invalid Path\r\n" +
			"Content-Length: 17\r\n" +
			"Content-Type: text/plain\r\n" +
			"Date: -\r\n" +
			"\r\n" +
			"400 Invalid Path\n"
		invalidKeepAlive := "HTTP/1.0 400 Invalid Path\r\n" +
			"Content-Length: 17\r\n" +
			"Content-Type: text/plain\r\n" +
			"Date: -\r\n" +
			"Connection: keep-alive\r\n" +
			"\r\n" +
			"400 Invalid Path\n"
		badRequest := "HTTP/1.1 400 Bad Request\r\n" +
			"Content-Type: text/plain; charset=utf-8\r\n" +
			"Connection: close\r\n" +
			"\r\n" +
			"400 Bad Request"
		cases := []struct {
			name, request, want string
		}{
			{"http/1.0", "GET /files/.. HTTP/1.0\r\n\r\n", invalid},
			{"http/1.1", "GET /files/.. HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
				"HTTP/1.1 400 Invalid Path\r\nContent-Length: 17\r\nContent-Type: text/plain\r\nDate: -\r\nConnection: close\r\n\r\n400 Invalid Path\n"},
			{"http/1.0 then net/http's own 400",
				"GET /files/.. HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /%zz HTTP/1.1\r\nHost: x\r\n\r\n",
				invalidKeepAlive + badRequest},
			{"http/1.1 then net/http's own 400",
				"GET /files/.. HTTP/1.1\r\nHost: x\r\n\r\nGET /%zz HTTP/1.1\r\nHost: x\r\n\r\n",
				"HTTP/1.1 400 Invalid Path\r\nContent-Length: 17\r\nContent-Type: text/plain\r\nDate: -\r\n\r\n400 Invalid Path\n" + badRequest},
			{"http/1.0 then a plain answer",
				"GET /files/.. HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
				invalidKeepAlive + "HTTP/1.1 404 Not Found\r\nContent-Length: "},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				got := noDate(exchange(t, s.Addr, c.request, false))
				if !strings.HasPrefix(got, c.want) {
					t.Errorf("got\n%q\nwant (a prefix)\n%q", got, c.want)
				}
			})
		}
	})
}

// TestHalfClose checks that a client that shuts down its write side after
// its request gets its full, normal answer, and that the server then ends
// the connection.
func TestHalfClose(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m) // of its own: the login changes the stored token
		cases := []struct {
			name, request string
			want          want
			cookies       []string // names of cookies that must be set
		}{
			{"config", "GET /config HTTP/1.1\r\nHost: x\r\n\r\n",
				want{ok200, jsonCT, `{"config": {"directory": "."}}`}, nil},
			{"listing", "GET /files/sub HTTP/1.1\r\nHost: x\r\n\r\n",
				want{ok200, jsonCT, listingSub}, nil},
			{"download", "GET /file/hello.txt HTTP/1.1\r\nHost: x\r\n\r\n",
				want{ok200, octCT, fixtureHello}, nil},
			{"error phrase", "GET /files/.. HTTP/1.1\r\nHost: x\r\n\r\n",
				errorWant("HTTP/1.1 400 Invalid Path"), nil},
			{"basic login", "GET /private/x HTTP/1.1\r\nHost: x\r\nAuthorization: Basic dXNlckBleGFtcGxlLm9yZzpleGFtcGxl\r\n\r\n",
				want{ok200, jsonCT, `{"path": "x"}`}, []string{"token", "user_id"}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				out := exchange(t, s.Addr, c.request, true)
				br := bufio.NewReader(strings.NewReader(out))
				got := readResponse(t, br, false)
				check(t, got, c.want)
				for _, name := range c.cookies {
					found := false
					for _, sc := range got.Header.Values("Set-Cookie") {
						found = found || strings.HasPrefix(sc, name+"=")
					}
					if !found {
						t.Errorf("no cookie %s set: %q", name, got.Header.Values("Set-Cookie"))
					}
				}
				if rest, _ := io.ReadAll(br); len(rest) > 0 {
					t.Errorf("more after the answer: %q", rest)
				}
			})
		}
	})
}

// TestHalfClosePipelined checks that two requests sent before a half-close
// are both answered in full.
func TestHalfClosePipelined(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := shared(t, m)
		out := exchange(t, s.Addr, "GET /config HTTP/1.1\r\nHost: x\r\n\r\nGET /files/.. HTTP/1.1\r\nHost: x\r\n\r\n", true)
		br := bufio.NewReader(strings.NewReader(out))
		check(t, readResponse(t, br, false), want{ok200, jsonCT, `{"config": {"directory": "."}}`})
		check(t, readResponse(t, br, false), errorWant("HTTP/1.1 400 Invalid Path"))
	})
}
