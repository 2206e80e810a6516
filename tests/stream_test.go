package tests

import (
	"strings"
	"testing"
)

// TestHelloEvents streams the example plugin's greetings over real HTTP,
// compiled-in host and -isolate all alike (the plugin is always a child
// process here): Server-Sent Events when the client asks for them, with the
// value in the representation of the URL prefix, else JSON lines. The
// bodies are checked byte for byte.
func TestHelloEvents(t *testing.T) {
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
