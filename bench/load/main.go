// Command load measures the throughput of HTTP targets on loopback and
// prints each one's ratio to the first (the baseline), over all rounds and
// as the median of the rounds' ratios. The targets are measured in
// alternating rounds within one run, so that the machine's load affects
// them alike. Every run is bounded in time and in requests.
//
//	load [-c 4] [-d 3s] [-rounds 3] [-max 2000000] NAME=URL[|Header: value][@PID[,PID...]]...
//
// With @PID the server's CPU time per request is measured too: the sum of
// the processes named (a host and its plugin processes, say).
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type target struct {
	name   string
	url    string
	header http.Header
	pids   []int // the server's processes, whose CPU time is summed
	reqs   int64
	dur    time.Duration
	cpu    time.Duration // the server's CPU time over the rounds, with pid
	// Per round: the rate and the server's CPU time per request (0
	// without pid), for the medians of the ratios.
	rates, cpus []float64
}

func main() {
	conc := flag.Int("c", 4, "concurrent connections")
	dur := flag.Duration("d", 3*time.Second, "duration of one round of one target (at most 30s)")
	rounds := flag.Int("rounds", 3, "rounds per target (at most 20)")
	max := flag.Int64("max", 2_000_000, "most requests in one round")
	flag.Parse()
	if *dur > 30*time.Second || *rounds > 20 || *rounds < 1 || flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: load [-c N] [-d D<=30s] [-rounds R<=20] NAME=URL[|Header: value]...")
		os.Exit(2)
	}
	var targets []*target
	for _, a := range flag.Args() {
		name, rest, ok := strings.Cut(a, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "load: %q: want NAME=URL\n", a)
			os.Exit(2)
		}
		var pids []int
		if i := strings.LastIndexByte(rest, '@'); i >= 0 {
			for p := range strings.SplitSeq(rest[i+1:], ",") {
				n, err := strconv.Atoi(p)
				if err != nil || n <= 0 {
					fmt.Fprintf(os.Stderr, "load: %q: want @PID[,PID...] at the end\n", a)
					os.Exit(2)
				}
				pids = append(pids, n)
			}
			rest = rest[:i]
		}
		parts := strings.Split(rest, "|")
		t := &target{name: name, url: parts[0], header: http.Header{}, pids: pids}
		for _, h := range parts[1:] {
			k, v, _ := strings.Cut(h, ":")
			t.header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
		targets = append(targets, t)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conc, MaxConnsPerHost: *conc}, Timeout: 10 * time.Second}
	for _, t := range targets { // warm up and check
		if err := once(client, t); err != nil {
			fmt.Fprintf(os.Stderr, "load: %s: %v\n", t.name, err)
			os.Exit(1)
		}
	}
	for r := 0; r < *rounds; r++ {
		for _, t := range targets {
			before, err := cpuTime(t.pids)
			if err != nil {
				fmt.Fprintf(os.Stderr, "load: %s: %v\n", t.name, err)
				os.Exit(1)
			}
			n, d, err := round(t, *conc, *dur, *max)
			after, _ := cpuTime(t.pids)
			t.cpu += after - before
			if err != nil {
				fmt.Fprintf(os.Stderr, "load: %s: %v\n", t.name, err)
				os.Exit(1)
			}
			t.reqs += n
			t.dur += d
			t.rates = append(t.rates, float64(n)/d.Seconds())
			if n > 0 {
				t.cpus = append(t.cpus, float64((after-before).Microseconds())/float64(n))
			}
		}
	}
	base := rate(targets[0])
	for _, t := range targets {
		fmt.Printf("%-12s %10.0f req/s  %8.1f µs/req  ratio %.3f", t.name, rate(t), 1e6/rate(t)*float64(*conc), rate(t)/base)
		if len(t.pids) > 0 && len(targets[0].pids) > 0 {
			fmt.Printf("  server CPU %6.2f µs/req  ratio %.3f", cpuPerReq(t), cpuPerReq(targets[0])/cpuPerReq(t))
		}
		fmt.Println()
	}
	if len(targets) > 1 && *rounds > 1 {
		// The ratios round by round, each against the baseline's round
		// just before it: their median does not follow a round that the
		// machine's other load spoiled.
		for _, t := range targets[1:] {
			fmt.Printf("median of %d rounds: %s ratio %.3f", *rounds, t.name, medianRatio(t.rates, targets[0].rates))
			if len(t.pids) > 0 && len(targets[0].pids) > 0 && len(t.cpus) == len(targets[0].cpus) {
				fmt.Printf("  server CPU ratio %.3f", medianRatio(targets[0].cpus, t.cpus))
			}
			fmt.Println()
		}
	}
}

// medianRatio is the median of a[i]/b[i].
func medianRatio(a, b []float64) float64 {
	var r []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			r = append(r, a[i]/b[i])
		}
	}
	if len(r) == 0 {
		return 0
	}
	slices.Sort(r)
	if len(r)%2 == 1 {
		return r[len(r)/2]
	}
	return (r[len(r)/2-1] + r[len(r)/2]) / 2
}

func rate(t *target) float64 { return float64(t.reqs) / t.dur.Seconds() }

// cpuPerReq is the server's CPU time per request, in microseconds.
func cpuPerReq(t *target) float64 { return float64(t.cpu.Microseconds()) / float64(t.reqs) }

// cpuTime is the user plus system CPU time processes pids have used so
// far; 0 without any.
func cpuTime(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		t, err := procCPU(pid)
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return sum, nil
}

// procCPU is the user plus system CPU time process pid has used so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it are plain.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("unreadable /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("unreadable /proc stat times")
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(utime+stime) * tick, nil
}

// once makes one request with net/http's client, to check the target.
func once(c *http.Client, t *target) error {
	req, err := http.NewRequest("GET", t.url, nil)
	if err != nil {
		return err
	}
	req.Header = t.header.Clone()
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// conn is a light keep-alive HTTP/1.1 client on one connection: it writes
// a prepared request and reads the answer's head and Content-Length body, so
// that the load measures the server rather than the client.
type conn struct {
	c   net.Conn
	br  *bufio.Reader
	req []byte
}

func dial(t *target) (*conn, error) {
	u, err := url.Parse(t.url)
	if err != nil {
		return nil, err
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\n", u.RequestURI(), u.Host)
	for k, vs := range t.header {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	return &conn{c: c, br: bufio.NewReaderSize(c, 64<<10), req: []byte(b.String())}, nil
}

func (c *conn) do() error {
	if _, err := c.c.Write(c.req); err != nil {
		return err
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 200 ")) {
		return fmt.Errorf("status line %q", line)
	}
	length := -1
	for {
		h, err := c.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(h) <= 2 {
			break
		}
		if len(h) > 15 && bytes.EqualFold(h[:15], []byte("Content-Length:")) {
			length, err = strconv.Atoi(string(bytes.TrimSpace(h[15:])))
			if err != nil {
				return fmt.Errorf("content-length %q", h)
			}
		}
	}
	if length < 0 {
		return errors.New("answer without Content-Length")
	}
	_, err = c.br.Discard(length)
	return err
}

func round(t *target, conc int, dur time.Duration, max int64) (int64, time.Duration, error) {
	conns := make([]*conn, conc)
	for i := range conns {
		c, err := dial(t)
		if err != nil {
			return 0, 0, err
		}
		defer c.c.Close()
		conns[i] = c
	}
	deadline := time.Now().Add(dur)
	var n atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.c.SetDeadline(deadline.Add(5 * time.Second))
			for i := 0; ; i++ {
				if i%64 == 0 && time.Now().After(deadline) || n.Load() >= max {
					return
				}
				if err := c.do(); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return n.Load(), time.Since(start), firstErr
}
