package tests

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestLogFormatJSON: with -log-format json every line the server writes is
// a JSON object, the listening line and the access log (-access-log)
// included; an access line carries the route pattern, the client's address
// and the duration.
func TestLogFormatJSON(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m, "-log-format", "json", "-access-log")
		s.get(t, "/files/sub?x=1")
		s.get(t, "/nothing")
		want := map[string]string{ // path: route
			"/files/sub": `GET /files(?:/|$|\?)`,
			"/nothing":   "",
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if strings.Contains(s.Log(), `"path":"/nothing"`) && strings.Contains(s.Log(), `"path":"/files/sub"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no access lines in\n%s", s.Log())
			}
			time.Sleep(10 * time.Millisecond)
		}
		listening, seen := false, 0
		for _, line := range strings.Split(strings.TrimSpace(s.Log()), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Errorf("not a JSON object: %q (%v)", line, err)
				continue
			}
			for _, k := range []string{"time", "level", "msg"} {
				if _, ok := rec[k]; !ok {
					t.Errorf("no %q in %q", k, line)
				}
			}
			switch rec["msg"] {
			case "reso listening":
				listening = rec["addr"] == s.Addr && rec["tls"] == false
			case "request":
				path, _ := rec["path"].(string)
				route, ok := want[path]
				if !ok {
					continue
				}
				seen++
				if rec["route"] != route {
					t.Errorf("%s: route %v, want %q", path, rec["route"], route)
				}
				if r, _ := rec["remote"].(string); !strings.HasPrefix(r, "127.0.0.1:") {
					t.Errorf("%s: remote %v", path, rec["remote"])
				}
				if d, ok := rec["duration"].(float64); !ok || d <= 0 {
					t.Errorf("%s: duration %v, want nanoseconds > 0", path, rec["duration"])
				}
				if rec["method"] != "GET" || rec["status"] == nil {
					t.Errorf("%s: %q", path, line)
				}
			}
		}
		if !listening {
			t.Errorf("no JSON listening line with addr %s and tls false in\n%s", s.Addr, s.Log())
		}
		if seen != 2 {
			t.Errorf("%d access lines, want 2:\n%s", seen, s.Log())
		}
	})
}
