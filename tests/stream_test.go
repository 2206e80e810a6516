package tests

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHelloEvents streams the example plugin's greetings over real HTTP,
// compiled-in host and -isolate all alike (the plugin is always a child
// process here): Server-Sent Events when the client asks for them, with the
// value in the representation of the URL prefix, else JSON lines. The
// bodies are checked byte for byte.
func TestHelloEvents(t *testing.T) {
	t.Parallel()
	hello := helloPlugin(t)
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m, "-plugin", "hello="+hello)
		cases := []struct {
			name, target, accept, ctype, body string
		}{
			{"ndjson", "/hello-events/Ada", "", "application/x-ndjson",
				`{"hello": {"name": "Ada", "n": 1}}` + "\n" +
					`{"hello": {"name": "Ada", "n": 2}}` + "\n" +
					`{"hello": {"name": "Ada", "n": 3}}` + "\n"},
			{"sse", "/hello-events/Ad%C3%A9", "Accept: text/event-stream", "text/event-stream",
				"id: 1\nevent: greeting\ndata: {\"hello\": {\"name\": \"Ad\\u00e9\", \"n\": 1}}\n\n" +
					"id: 2\nevent: greeting\ndata: {\"hello\": {\"name\": \"Ad\\u00e9\", \"n\": 2}}\n\n" +
					"id: 3\nevent: greeting\ndata: {\"hello\": {\"name\": \"Ad\\u00e9\", \"n\": 3}}\n\n"},
			{"sse xml", "/xml/hello-events", "Accept: text/event-stream", "text/event-stream",
				"id: 1\nevent: greeting\ndata: <hello><name>world</name><n>1</n></hello>\n\n" +
					"id: 2\nevent: greeting\ndata: <hello><name>world</name><n>2</n></hello>\n\n" +
					"id: 3\nevent: greeting\ndata: <hello><name>world</name><n>3</n></hello>\n\n"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				var headers []string
				if c.accept != "" {
					headers = append(headers, c.accept)
				}
				got := s.get(t, c.target, headers...)
				if got.StatusLine != "HTTP/1.1 200 OK" || got.Header.Get("Content-Type") != c.ctype || got.Header.Get("Cache-Control") != "no-cache" {
					t.Errorf("%s %v", got.StatusLine, got.Header)
				}
				if got.Body != c.body {
					t.Errorf("body:\n%q\nwant\n%q", got.Body, c.body)
				}
			})
		}
		head := s.do(t, "HEAD", "/hello-events", "", "Accept: text/event-stream")
		if head.StatusLine != "HTTP/1.1 200 OK" || head.Header.Get("Content-Type") != "text/event-stream" || head.Body != "" {
			t.Errorf("HEAD: %s %v %q", head.StatusLine, head.Header, head.Body)
		}
		if strings.Contains(s.Log(), "level=ERROR") {
			t.Errorf("errors in the log:\n%s", s.Log())
		}
	})
}

// TestShutdownEndsStreams: SIGTERM ends a stream that would go on for hours
// well within the grace period: the client reads the events sent so far and
// a clean end of the body, no request is cut, and the server exits 0.
func TestShutdownEndsStreams(t *testing.T) {
	t.Parallel()
	hello := helloPlugin(t)
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m, "-plugin", "hello="+hello, "-shutdown-timeout", "1m")
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		io.WriteString(c, "GET /hello-events/Ada?count=1000000 HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || line != `{"hello": {"name": "Ada", "n": 1}}`+"\n" {
			t.Fatalf("first event %q %v", line, err)
		}
		s.cmd.Process.Signal(syscall.SIGTERM)
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Errorf("the stream did not end cleanly: %v", err)
		}
		if code := exitStatus(t, s); code != 0 {
			t.Errorf("exit status %d", code)
		}
		if strings.Contains(s.Log(), "request cut at shutdown") || strings.Contains(s.Log(), "level=ERROR") {
			t.Errorf("log:\n%s", s.Log())
		}
	})
}

func TestHelloEventsBadCount(t *testing.T) {
	t.Parallel()
	hello := helloPlugin(t)
	s := start(t, mode{name: "compiled"}, "-plugin", "hello="+hello)
	if got := s.get(t, "/hello-events?count=x"); got.StatusLine != "HTTP/1.1 400 Invalid Count" {
		t.Errorf("%s", got.StatusLine)
	}
}
