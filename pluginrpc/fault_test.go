package pluginrpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/internal/poll"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
)

// otherPlugin is an in-process plugin whose route must keep answering
// while the plugin process next to it is down.
var otherPlugin = plugins.PluginFunc(func(context.Context, plugins.Services) ([]plugins.Route, error) {
	return []plugins.Route{{Match: "GET /other", Handler: core.HandlerFunc(func(context.Context, *core.Request) (*core.Response, error) {
		return &core.Response{Body: []byte("other")}, nil
	})}}, nil
})

// get returns the status line and body of GET url.
func get(t *testing.T, s *testServer, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(s.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRestart kills the plugin process (kill -9, and a plugin that exits
// by itself in a request): its routes answer 503 Plugin Unavailable, the
// other routes keep answering, and a new process serves the routes again.
func TestRestart(t *testing.T) {
	for _, how := range []string{"kill -9", "exit"} {
		t.Run(how, func(t *testing.T) {
			c := load(t, Config{Name: "test", Cmd: childCmd("serve")})
			s := newTestServer(t, pluginhost.Entry{Name: "other", Plugin: otherPlugin}, pluginhost.Entry{Name: "test", Plugin: c})
			code, body := get(t, s, "/pid")
			if code != 200 || body != strconv.Itoa(c.PID()) {
				t.Fatalf("GET /pid = %d %q, want 200 %d", code, body, c.PID())
			}
			oldPID := c.PID()

			// The other route is polled throughout.
			var otherFailures, otherOK atomic.Int64
			stop := make(chan struct{})
			polled := make(chan struct{})
			go func() {
				defer close(polled)
				for {
					select {
					case <-stop:
						return
					default:
					}
					resp, err := http.Get(s.srv.URL + "/other")
					if err != nil || resp.StatusCode != 200 {
						otherFailures.Add(1)
					} else {
						otherOK.Add(1)
					}
					if resp != nil {
						resp.Body.Close()
					}
					time.Sleep(2 * time.Millisecond)
				}
			}()

			down := time.Now()
			switch how {
			case "kill -9":
				if err := syscall.Kill(oldPID, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			case "exit":
				// The request in flight when the process goes fails alike.
				if code, body := get(t, s, "/exit"); code != 503 || body != "503 Plugin Unavailable\n" {
					t.Errorf("GET /exit = %d %q, want 503 Plugin Unavailable", code, body)
				}
			}
			// Its routes answer 503 Plugin Unavailable, with the exact line.
			poll.Until(t, 5*time.Second, "503 Plugin Unavailable", func() bool {
				answer := s.raw(t, req("GET", "/echo"))
				return strings.HasPrefix(answer, "HTTP/1.1 503 Plugin Unavailable\r\n") && strings.HasSuffix(answer, "\r\n\r\n503 Plugin Unavailable\n")
			})
			// A new process serves them again.
			poll.Until(t, 15*time.Second, "the restarted plugin", func() bool {
				code, _ := get(t, s, "/echo")
				return code == 200
			})
			t.Logf("%s: routes answered again %v after the process went", how, time.Since(down).Round(time.Millisecond))
			close(stop)
			<-polled
			if n := otherFailures.Load(); n > 0 {
				t.Errorf("the other route failed %d times while the plugin restarted", n)
			}
			if otherOK.Load() == 0 {
				t.Error("the other route was never polled")
			}
			if c.PID() == oldPID || c.PID() == 0 {
				t.Errorf("PID %d after restart, was %d", c.PID(), oldPID)
			}
			if code, body := get(t, s, "/setting/greeting"); code != 200 || body != "hi there" {
				t.Errorf("host services after restart: %d %q", code, body)
			}
			if code, body := get(t, s, "/download"); code != 200 || body != string(downloadData) {
				t.Errorf("download after restart: %d, %d bytes", code, len(body))
			}
		})
	}
}

// TestBadHandshake checks that a plugin that breaks the handshake fails to
// load with an error that names it and says what went wrong.
func TestBadHandshake(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want []string
	}{
		{"stdout", []string{`plugin "bad"`, "stdout", "hello from a plugin that prints to stdout"}},
		{"version", []string{`plugin "bad"`, "protocol version", "99", "version " + strconv.Itoa(ProtocolVersion)}},
		// A plugin built against protocol version 1 (string fields) is
		// refused rather than mis-decoding version 3's bytes, and one of
		// version 2 (a call per session) rather than failing its first
		// session.
		{"version1", []string{`plugin "bad"`, "protocol version 1;", "version 3"}},
		{"version2", []string{`plugin "bad"`, "protocol version 2;", "version 3"}},
		{"exit", []string{`plugin "bad"`, "exited before the handshake"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			c, err := Load(t.Context(), Config{Name: "bad", Cmd: childCmd(tc.mode), Logger: testLogger(t)})
			if err == nil {
				c.Close()
				t.Fatal("Load succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			t.Logf("error: %v", err)
		})
	}
}

// TestClose checks that Close ends the plugin process and that the routes
// then answer 503.
func TestClose(t *testing.T) {
	c := load(t, Config{Name: "test", Cmd: childCmd("serve")})
	s := newTestServer(t, pluginhost.Entry{Name: "test", Plugin: c})
	pid := c.PID()
	if pid == 0 {
		t.Fatal("no PID")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("plugin process %d still there after Close: %v", pid, err)
	}
	if code, body := get(t, s, "/echo"); code != 503 || body != "503 Plugin Unavailable\n" {
		t.Errorf("after Close: %d %q", code, body)
	}
}

// TestServeNotStarted checks that a plugin program run by hand says so.
func TestServeNotStarted(t *testing.T) {
	if os.Getenv(handshake.MagicCookieKey) != "" {
		t.Skip("started by a plugin host")
	}
	if err := Serve(testPlugin{}); !errors.Is(err, ErrNotStartedByHost) {
		t.Fatalf("Serve = %v, want ErrNotStartedByHost", err)
	}
}

// TestContentTable checks that open downloads are closed by the host, or
// after the idle time unless they are being read.
func TestContentTable(t *testing.T) {
	tab := newContentTable(50 * time.Millisecond)
	closed := make(chan int, 3)
	newReader := func(n int) io.ReaderAt { return &closeRecorder{Reader: bytes.NewReader(nil), n: n, ch: closed} }
	h1 := tab.open(newReader(1))
	h2 := tab.open(newReader(2))
	h3 := tab.open(newReader(3))
	tab.close(h1)
	if got := <-closed; got != 1 {
		t.Fatalf("closed %d, want 1", got)
	}
	_, release := tab.acquire(h3) // being read: not expired
	if got := <-closed; got != 2 {
		t.Fatalf("closed %d, want 2 (idle)", got)
	}
	time.Sleep(100 * time.Millisecond)
	tab.mu.Lock()
	open := len(tab.m)
	tab.mu.Unlock()
	if open != 1 {
		t.Fatalf("%d open, want 1 (the one being read)", open)
	}
	release()
	if got := <-closed; got != 3 {
		t.Fatalf("closed %d, want 3 (idle after reading)", got)
	}
	if ra, _ := tab.acquire(h2); ra != nil {
		t.Error("expired content still readable")
	}
}

type closeRecorder struct {
	*bytes.Reader
	n  int
	ch chan int
}

func (c *closeRecorder) Close() error { c.ch <- c.n; return nil }
