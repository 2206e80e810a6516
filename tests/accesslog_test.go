package tests

import (
	"strings"
	"testing"
	"time"
)

// TestAccessLog checks the fields of the access log (-access-log): the
// client's address, the query string and the route that answered, as its
// pattern.
func TestAccessLog(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m, "-access-log")
		cases := []struct {
			target string
			want   []string
		}{
			{"/files/sub?x=1&y=2", []string{`method=GET path=/files/sub status=200 `, ` query="x=1&y=2" remote=127.0.0.1:`, ` route="GET /files(?:/|$|\\?)"`}},
			{"/xml/config", []string{`path=/xml/config status=200 `, ` query="" remote=127.0.0.1:`, ` route="GET,PUT,POST /config(?:$|\\?)"`}},
			{"/files/..", []string{`path=/files/.. status=400 bytes=17 `, ` route="GET /files(?:/|$|\\?)"`}},
			{"/nothing?q=1", []string{`path=/nothing status=404 `, ` query="q=1" `, ` route=""`}},
		}
		for _, c := range cases {
			s.get(t, c.target)
			line := waitLogLine(t, s, "msg=request method=GET path="+strings.SplitN(c.target, "?", 2)[0]+" ")
			for _, w := range c.want {
				if !strings.Contains(line, w) {
					t.Errorf("%s: log line %q lacks %q", c.target, line, w)
				}
			}
		}
	})
}

// waitLogLine waits for the server's log line that contains part and
// returns it.
func waitLogLine(t *testing.T, s *server, part string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, line := range strings.Split(s.Log(), "\n") {
			if strings.Contains(line, part) {
				return line
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q in\n%s", part, s.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
