package pluginrpc

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
)

// The benchmarks compare the test plugin's GET /users/0 (a bound list, as
// in the example application) in process ("direct") and in a plugin
// process, over its Requests stream ("stream"), in one run, 16
// goroutines per CPU:
//
//	go test -run '^$' -bench . -benchtime 3s ./pluginrpc
//
// BenchmarkHandle measures the handler alone (the cost of the boundary);
// BenchmarkHTTP the whole server, with net/http's keep-alive client. Both
// report the CPU time per request of this process (host-cpu-µs/op) and of
// the plugin process (plugin-cpu-µs/op): on a shared machine the CPU cost
// says more than ns/op. bench/isolate.sh measures the real server.

func benchPlugins(b *testing.B) []struct {
	name string
	p    plugins.Plugin
} {
	load := func() plugins.Plugin {
		cmd := func() *exec.Cmd {
			c := childCmd("serve")()
			c.Env = append(c.Env, "GOMAXPROCS=1") // as cmd/reso runs bundled plugins
			return c
		}
		c, err := Load(b.Context(), Config{Name: "bench", Cmd: cmd})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return c
	}
	return []struct {
		name string
		p    plugins.Plugin
	}{
		{"direct", testPlugin{}},
		{"stream", load()},
	}
}

func BenchmarkHandle(b *testing.B) {
	for _, bp := range benchPlugins(b) {
		rs, err := bp.p.Routes(b.Context(), plugins.Services{Settings: pluginhost.NewSettings(nil)})
		if err != nil {
			b.Fatal(err)
		}
		var h core.Handler
		for _, r := range rs {
			if r.Match == `GET /users(?:/|$|\?)` {
				h = r.Handler
			}
		}
		b.Run(bp.name, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b, bp.p)()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req := &core.Request{Method: "GET", Path: "/0", Consumed: "/users", ContentLength: -2,
						Header: http.Header{"User-Agent": {"bench"}}, Body: http.NoBody}
					resp, err := h.Handle(b.Context(), req)
					if err != nil || len(resp.Body) == 0 {
						b.Fatalf("%v %v", resp, err)
					}
				}
			})
		})
	}
}

func BenchmarkHTTP(b *testing.B) {
	for _, bp := range benchPlugins(b) {
		s := newTestServer(b, pluginhost.Entry{Name: bp.name, Plugin: bp.p}).srv.URL
		b.Run(bp.name, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			defer reportCPU(b, bp.p)()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Get(s + "/users/0")
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Fatal(resp.Status)
					}
				}
			})
		})
	}
}

// BenchmarkSession: a message of 100 bytes to the echo session and its
// echo back, 16 sessions per CPU at once, in process and in a plugin
// process, where the sessions share the few Sessions calls of protocol
// version 3 (credit windows, one sender goroutine per call).
func BenchmarkSession(b *testing.B) {
	msg := core.Message{Data: []byte(strings.Repeat("m", 100))}
	for _, bp := range benchPlugins(b) {
		s := newTestServer(b, pluginhost.Entry{Name: bp.name, Plugin: bp.p})
		b.Run(bp.name, func(b *testing.B) {
			sessions := make([]core.Session, 16*runtime.GOMAXPROCS(0))
			for i := range sessions {
				sessions[i], _ = openSession(b, s, "/session/echo")
			}
			defer func() {
				for _, c := range sessions {
					c.Close(core.CloseNormal, "")
				}
			}()
			var next atomic.Int64
			b.ReportAllocs()
			defer reportCPU(b, bp.p)()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				c := sessions[next.Add(1)-1]
				for pb.Next() {
					if err := c.Send(b.Context(), msg); err != nil {
						b.Error(err)
						return
					}
					if m, err := c.Recv(b.Context()); err != nil || len(m.Data) != len(msg.Data) {
						b.Errorf("echo of %d bytes, %v", len(m.Data), err)
						return
					}
				}
			})
		})
	}
}

// reportCPU reports the CPU time per operation of this process and of the
// plugin process, if any: the machine may be shared, so the CPU cost says
// more than the wall time. Call the returned function when done.
func reportCPU(b *testing.B, p plugins.Plugin) func() {
	pid := 0
	if c, ok := p.(*Client); ok {
		pid = c.PID()
	}
	self0, child0 := cpuTime(0), cpuTime(pid)
	return func() {
		n := float64(b.N)

		b.ReportMetric(float64((cpuTime(0)-self0).Microseconds())/n, "host-cpu-µs/op")
		if pid != 0 {
			b.ReportMetric(float64((cpuTime(pid)-child0).Microseconds())/n, "plugin-cpu-µs/op")
		}
	}
}

// cpuTime returns the user+system CPU time of process pid (0: this one).
func cpuTime(pid int) time.Duration {
	if pid == 0 {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which ends with ")"): utime is the
	// 14th field of the line, stime the 15th, in clock ticks (100 Hz).
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
