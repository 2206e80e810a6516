package tests

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reso-project/reso/internal/race"
)

// isolatedMode runs every bundled plugin in a child process: one of
// allModes, and the mode of the tests that are about child processes.
var isolatedMode = mode{name: "isolated", args: []string{"-isolate", "all"}}

var (
	helloOnce sync.Once
	helloPath string
	helloErr  error
)

// helloPlugin builds examples/hello-plugin once, next to the reso binary.
func helloPlugin(t *testing.T) string {
	t.Helper()
	helloOnce.Do(func() {
		helloPath = filepath.Join(filepath.Dir(binary), "hello-plugin")
		out, err := exec.Command("go", append(append([]string{"build"}, race.BuildFlags()...), "-o", helloPath, "../examples/hello-plugin")...).CombinedOutput()
		if err != nil {
			helloErr = fmt.Errorf("building examples/hello-plugin: %v\n%s", err, out)
		}
	})
	if helloErr != nil {
		t.Fatal(helloErr)
	}
	return helloPath
}

// TestHelloPlugin loads the example third-party plugin and calls it: its
// route comes after those of all bundled plugins.
func TestHelloPlugin(t *testing.T) {
	t.Parallel()
	hello := helloPlugin(t)
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m, "-plugin", "hello="+hello)
		check(t, s.get(t, "/hello"), want{ok200, jsonCT, `{"hello": "world"}`})
		check(t, s.get(t, "/hello/Ada"), want{ok200, jsonCT, `{"hello": "Ada"}`})
		check(t, s.get(t, "/xml/hello/Ada"), want{ok200, xmlCT, `<hello>Ada</hello>`})
		check(t, s.get(t, "/hello?x=1"), want{ok200, jsonCT, `{"hello": "world"}`})
		check(t, s.get(t, "/hello/a/b"), want{"HTTP/1.1 404 Not Found", textCT, s.get(t, "/nothing").Body})
		got := s.get(t, "/nothing")
		lines := strings.Split(strings.TrimSpace(got.Body), "\n")
		if last := lines[len(lines)-1]; last != `GET /hello(?:/(?P<name>[^/?]*))?(?:$|\?)` {
			t.Errorf("last route %q, want the plugin's (after the bundled ones):\n%s", last, got.Body)
		}
		if !strings.Contains(s.Log(), `hello-plugin ready`) {
			t.Errorf("the plugin's stderr is not in the log:\n%s", s.Log())
		}
	})
}

// TestPluginOrder: two -plugin flags put their routes in flag order, after
// the bundled ones; the first match answers.
func TestPluginOrder(t *testing.T) {
	t.Parallel()
	hello := helloPlugin(t)
	s := start(t, modes()[0], "-plugin", "one="+hello, "-plugin", "two="+hello)
	got := s.get(t, "/nothing").Body
	if n := strings.Count(got, "GET /hello("); n != 2 {
		t.Errorf("%d hello routes, want 2:\n%s", n, got)
	}
	if i, j := strings.Index(got, "GET /private/"), strings.Index(got, "GET /hello("); i < 0 || j < i {
		t.Errorf("plugin routes before bundled ones:\n%s", got)
	}
}

// writeScript writes an executable shell script.
func writeScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "plugin.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPluginFailsToLoad: a plugin that cannot start stops the server with
// a message naming it, unless -plugin-optional.
func TestPluginFailsToLoad(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, path string
		want       string
	}{
		{"missing", filepath.Join(t.TempDir(), "no-such-plugin"), `plugin "bad"`},
		{"stdout before handshake", writeScript(t, "echo 'I print to stdout'; exec sleep 5"), `plugin "bad" failed the handshake: it wrote "I print to stdout" to stdout`},
		{"exits", writeScript(t, "echo oops >&2; exit 3"), `plugin "bad" exited before the handshake`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := startIn(t, t.TempDir(), modes()[0], "-plugin", "bad="+c.path)
			if err == nil {
				s.stop()
				t.Fatal("the server started")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("want %q in:\n%v", c.want, err)
			}
			s = start(t, modes()[0], "-plugin", "bad="+c.path, "-plugin-optional")
			check(t, s.get(t, "/config"), want{ok200, jsonCT, `{"config": {"directory": "."}}`})
			if !strings.Contains(s.Log(), "plugin left out (-plugin-optional)") || !strings.Contains(s.Log(), "plugin=bad") {
				t.Errorf("log:\n%s", s.Log())
			}
		})
	}
}

// TestIsolateFlag checks -isolate's names.
func TestIsolateFlag(t *testing.T) {
	t.Parallel()
	out, err := command(binary, "-addr", "127.0.0.1:0", "-db", ":memory:", "-isolate", "users,nope").CombinedOutput()
	raceFree(t, string(out))
	if err == nil {
		t.Fatal("reso started with an unknown -isolate name")
	}
	for _, w := range []string{`unknown plugin "nope"`, "represent, config, files, users, private, channel, call, console, or all"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("want %q in:\n%s", w, out)
		}
	}
	s := start(t, mode{name: "some", args: []string{"-isolate", "files, users"}})
	kids := children(t, s.cmd.Process.Pid)
	if len(kids) != 2 {
		t.Errorf("%d plugin processes, want 2: %v", len(kids), kids)
	}
	check(t, s.get(t, "/file/hello.txt"), want{ok200, octCT, fixtureHello})
	check(t, s.get(t, "/users/1"), want{ok200, jsonCT, `{"result": {"username": "bob"}}`})
}

// TestPluginProcess checks "reso plugin" by hand: it is not for people.
func TestPluginProcess(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plugin", "users"}, "this program is a reso plugin"},
		{[]string{"plugin", "nope"}, `unknown plugin "nope"`},
		{[]string{"plugin"}, "want a plugin name"},
	} {
		out, err := command(binary, c.args...).CombinedOutput()
		raceFree(t, string(out))
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("reso %v: %v, want %q in:\n%s", c.args, err, c.want, out)
		}
	}
}

// procInfo returns the parent pid and state of pid, ok false when it is
// gone.
func procInfo(pid int) (ppid int, state string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0], true
}

// children returns the live child processes of pid.
func children(t *testing.T, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, state, ok := procInfo(p); ok && ppid == pid && state != "Z" {
			out = append(out, p)
		}
	}
	return out
}

// gone reports whether every pid has exited (a zombie has).
func gone(pids []int) bool {
	for _, p := range pids {
		if _, state, ok := procInfo(p); ok && state != "Z" {
			return false
		}
	}
	return true
}

// waitGone waits, up to d, for every pid to exit.
func waitGone(t *testing.T, pids []int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !gone(pids) {
		if time.Now().After(deadline) {
			var left []string
			for _, p := range pids {
				if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); err == nil {
					left = append(left, fmt.Sprintf("%d %q", p, bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
				}
			}
			t.Fatalf("processes left behind after %v: %v", d, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNoOrphans: stopping the server, with SIGTERM or SIGKILL, leaves no
// plugin process behind.
func TestNoOrphans(t *testing.T) {
	t.Parallel()
	hello := helloPlugin(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			s, err := startIn(t, t.TempDir(), isolatedMode, "-plugin", "hello="+hello)
			if err != nil {
				t.Fatal(err)
			}
			defer s.kill()
			kids := children(t, s.cmd.Process.Pid)
			if len(kids) != 9 { // eight bundled plugins and hello
				t.Fatalf("%d plugin processes, want 9: %v", len(kids), kids)
			}
			s.cmd.Process.Signal(sig)
			<-s.done
			waitGone(t, kids, 10*time.Second)
		})
	}
}

// TestPluginCrash kills a plugin process: only its routes answer
// 503 Plugin Unavailable while it restarts; every other route keeps
// answering. Then it serves again, with the same state (the directory lives
// in the server).
func TestPluginCrash(t *testing.T) {
	t.Parallel()
	s := start(t, isolatedMode)
	var filesPID int
	for _, p := range children(t, s.cmd.Process.Pid) {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); bytes.Contains(b, []byte("plugin\x00files")) {
			filesPID = p
		}
	}
	if filesPID == 0 {
		t.Fatal("no files plugin process")
	}
	check(t, s.do(t, "PUT", "/config", "sub", "Content-Type: text/plain"), want{ok200, textCT, ""})

	var others, otherFailures atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the other plugins' routes, throughout
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, path := range []string{"/config", "/users/0"} {
				resp, err := client.Get(s.URL + path)
				if err != nil || resp.StatusCode != 200 {
					otherFailures.Add(1)
				} else {
					others.Add(1)
				}
				if resp != nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}
	}()

	killed := time.Now()
	if err := syscall.Kill(filesPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	saw503 := false
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the files routes did not come back (saw 503: %v)", saw503)
		}
		got := s.get(t, "/file/data.bin")
		if got.StatusLine == "HTTP/1.1 503 Plugin Unavailable" {
			saw503 = true
			check(t, got, errorWant("HTTP/1.1 503 Plugin Unavailable"))
			continue
		}
		check(t, got, want{ok200, octCT, fixtureData})
		break
	}
	t.Logf("the files routes answered again %v after kill -9", time.Since(killed).Round(time.Millisecond))
	close(stop)
	<-done
	if !saw503 {
		t.Error("never saw 503 Plugin Unavailable")
	}
	if n := otherFailures.Load(); n > 0 {
		t.Errorf("other routes failed %d times (of %d)", n, n+others.Load())
	}
	if others.Load() == 0 {
		t.Error("other routes never answered")
	}
	if !strings.Contains(s.Log(), "plugin process restarted") {
		t.Errorf("log:\n%s", s.Log())
	}
}

// TestLargeDownload downloads a file of some MiB whole and in ranges, the
// same in both modes (isolated: streamed from the files plugin process in
// chunks).
func TestLargeDownload(t *testing.T) {
	t.Parallel()
	data := make([]byte, 5<<20+12345)
	for i := range data {
		data[i] = byte(i*31 + i>>13)
	}
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m)
		if err := os.WriteFile(filepath.Join(s.Dir, "big.bin"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		got := s.get(t, "/file/big.bin")
		if got.StatusLine != ok200 || got.Body != string(data) {
			t.Fatalf("%s, %d bytes, want %d", got.StatusLine, len(got.Body), len(data))
		}
		for _, r := range [][2]int{{0, 0}, {1 << 20, 3<<20 + 7}, {len(data) - 100, len(data) - 1}} {
			got := s.get(t, "/file/big.bin", fmt.Sprintf("Range: bytes=%d-%d", r[0], r[1]))
			if got.StatusLine != "HTTP/1.1 206 Partial Content" || got.Body != string(data[r[0]:r[1]+1]) {
				t.Errorf("range %v: %s, %d bytes", r, got.StatusLine, len(got.Body))
			}
		}
		// A client that goes away mid-download leaves the server serving.
		resp, err := client.Get(s.URL + "/file/big.bin")
		if err != nil {
			t.Fatal(err)
		}
		io.CopyN(io.Discard, resp.Body, 100<<10)
		resp.Body.Close()
		check(t, s.get(t, "/file/hello.txt"), want{ok200, octCT, fixtureHello})
		if r, err := http.Get(s.URL + "/file/big.bin"); err == nil {
			n, _ := io.Copy(io.Discard, r.Body)
			r.Body.Close()
			if n != int64(len(data)) {
				t.Errorf("download after an abandoned one: %d bytes", n)
			}
		}
	})
}
