package main

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/reso-project/reso/bench/internal/proc"
)

// probe reads the figures of the server process: its resident memory and
// CPU time from /proc (with a pid) and its goroutines and heap from
// net/http/pprof (with a debug address).
type probe struct {
	pid   int    // 0: no /proc figures
	debug string // http://HOST:PORT of -admin-addr (with -pprof); "": no pprof figures
	http  *http.Client
}

func newProbe(pid int, debugAddr string) *probe {
	if debugAddr != "" && !strings.HasPrefix(debugAddr, "http://") {
		debugAddr = "http://" + debugAddr
	}
	// No keep-alive: each request is served by a fresh connection, so the
	// count of goroutines does not depend on an idle one being around.
	return &probe{pid: pid, debug: debugAddr, http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
}

// rssKB is the server's resident set (VmRSS) in KiB, summed over the
// process and its descendants (plugin processes with reso -isolate).
func (p *probe) rssKB() (int64, error) {
	if p.pid == 0 {
		return 0, errors.New("no -pid")
	}
	return proc.RSSKB(p.pid)
}

// cpu is the server's user plus system CPU time so far; 0 without a pid.
func (p *probe) cpu() time.Duration { return proc.CPU(p.pid) }

// cpuSplit is the server's user and system CPU time so far, summed over
// the process and its descendants (plugin processes with reso -isolate);
// 0 without a pid.
func (p *probe) cpuSplit() (user, sys time.Duration) { return proc.TreeCPUSplit(p.pid) }

// minorFaults is the server's minor page faults so far, summed over the
// process and its descendants; 0 without a pid.
func (p *probe) minorFaults() int64 { return proc.MinorFaults(p.pid) }

// selfCPU is the load client's own user plus system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// selfRSSKB is the load client's own resident set in KiB.
func selfRSSKB() int64 {
	n, _ := proc.StatusKB(os.Getpid(), "VmRSS:")
	return n
}

// goroutines is the server's goroutine count, go_goroutines of the
// metrics of its admin listener.
func (p *probe) goroutines() (int64, error) {
	if p.debug == "" {
		return 0, errors.New("no -debug")
	}
	return proc.Goroutines(p.http, p.debug)
}

// heapInuseKB is the server's HeapInuse in KiB from the runtime.MemStats
// lines at the end of /debug/pprof/heap?debug=1; with gc, after a
// collection (gc=1), so that garbage not yet collected does not count.
func (p *probe) heapInuseKB(gc bool) (int64, error) {
	if p.debug == "" {
		return 0, errors.New("no -debug")
	}
	url := p.debug + "/debug/pprof/heap?debug=1"
	if gc {
		url += "&gc=1"
	}
	resp, err := p.http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "# HeapInuse = "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			return n / 1024, err
		}
	}
	return 0, errors.New("heap profile: no HeapInuse line")
}

// fds is the count of open file descriptors of the server and its
// descendants (plugin processes with reso -isolate), from /proc/PID/fd.
func (p *probe) fds() (int64, error) {
	if p.pid == 0 {
		return 0, errors.New("no -pid")
	}
	return proc.FDs(p.pid)
}
