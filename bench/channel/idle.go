package main

import (
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// idleConfig is the idle figure: n connections, each subscribed to its own
// resource, then held open.
type idleConfig struct {
	n        int           // connections
	dialConc int           // connections being opened at once
	prefix   string        // resource of connection i: prefix + i
	settle   time.Duration // wait after the last reply before measuring
	timeout  time.Duration // for opening all connections
	readBuf  int           // read buffer per connection
}

// idleResult holds the figures measured before and after connecting.
type idleResult struct {
	conns                 int
	baseRSS, rss          int64 // KiB
	baseGor, gor          int64
	baseHeap, heap        int64 // KiB; 0 without -debug
	heapGC                int64 // KiB, after a collection
	clientRSS             int64 // KiB
	connectTime           time.Duration
	dropped               int64 // connections that ended while held
	rssErr, gorErr, hpErr error
}

// runIdle opens the connections, measures, and closes them again.
func runIdle(d *dialer, p *probe, cfg idleConfig) (idleResult, error) {
	var res idleResult
	res.baseRSS, res.rssErr = p.rssKB()
	res.baseGor, res.gorErr = p.goroutines()
	res.baseHeap, res.hpErr = p.heapInuseKB(true)

	conns := make([]*websocket.Conn, cfg.n)
	var dropped atomic.Int64
	var wg sync.WaitGroup // readers
	defer func() {
		for _, c := range conns {
			if c != nil {
				closeClean(c)
			}
		}
		wg.Wait()
	}()
	start := time.Now()
	deadline := start.Add(cfg.timeout)
	err := forEach(cfg.n, cfg.dialConc, func(i int) error {
		if time.Now().After(deadline) {
			return fmt.Errorf("connecting took longer than %v", cfg.timeout)
		}
		c, err := d.dial()
		if err != nil {
			return err
		}
		conns[i] = c
		_, err = mustSucceed(c, message{Method: "SUBSCRIBE", Resource: cfg.prefix + strconv.Itoa(i), MsgID: 1}, deadline)
		if err != nil {
			return err
		}
		// Keep reading, so that the server's pings are answered; an idle
		// connection receives nothing else.
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, r, err := c.NextReader()
			for err == nil {
				io.Copy(io.Discard, r)
				_, r, err = c.NextReader()
			}
			if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				dropped.Add(1)
			}
		}()
		return nil
	})
	res.connectTime = time.Since(start)
	if err != nil {
		return res, err
	}
	res.conns = cfg.n
	time.Sleep(cfg.settle)
	var e error
	res.rss, e = p.rssKB()
	res.rssErr = firstErr(res.rssErr, e)
	res.gor, e = p.goroutines()
	res.gorErr = firstErr(res.gorErr, e)
	res.heap, e = p.heapInuseKB(false)
	res.hpErr = firstErr(res.hpErr, e)
	res.heapGC, e = p.heapInuseKB(true)
	res.hpErr = firstErr(res.hpErr, e)
	res.clientRSS = selfRSSKB()
	res.dropped = dropped.Load()
	return res, nil
}

// print writes the idle figures.
func (r idleResult) print(w io.Writer, cfg idleConfig) {
	fmt.Fprintf(w, "idle: %d connections, each subscribed to its own resource, opened in %.1fs; %d dropped while held\n",
		r.conns, r.connectTime.Seconds(), r.dropped)
	if r.rssErr == nil {
		delta := r.rss - r.baseRSS
		fmt.Fprintf(w, "  server RSS     %8.1f MiB (baseline %.1f MiB, +%.1f MiB): %.1f KiB per connection   (target: 16 KiB each)\n",
			float64(r.rss)/1024, float64(r.baseRSS)/1024, float64(delta)/1024, float64(delta)/float64(max(r.conns, 1)))
	} else {
		fmt.Fprintf(w, "  server RSS     unknown: %v\n", r.rssErr)
	}
	if r.hpErr == nil {
		fmt.Fprintf(w, "  server heap    %8.1f MiB in use (baseline %.1f MiB): %.1f KiB per connection; after a collection %.1f MiB: %.1f KiB per connection   (target: 8 KiB)\n",
			float64(r.heap)/1024, float64(r.baseHeap)/1024, float64(r.heap-r.baseHeap)/float64(max(r.conns, 1)),
			float64(r.heapGC)/1024, float64(r.heapGC-r.baseHeap)/float64(max(r.conns, 1)))
	}
	if r.gorErr == nil {
		fmt.Fprintf(w, "  goroutines     %8d (baseline %d): %.2f per connection\n",
			r.gor, r.baseGor, float64(r.gor-r.baseGor)/float64(max(r.conns, 1)))
	} else {
		fmt.Fprintf(w, "  goroutines     unknown: %v\n", r.gorErr)
	}
	fmt.Fprintf(w, "  load client RSS %7.1f MiB\n", float64(r.clientRSS)/1024)
	// One line of key=value for scripts (bench/channel-vs-bare.sh); -1:
	// not measured.
	per := func(v, base int64, err error) float64 {
		if err != nil {
			return -1
		}
		return float64(v-base) / float64(max(r.conns, 1))
	}
	fmt.Fprintf(w, "  figures        rss_kib_per_conn=%.2f heap_kib_per_conn=%.2f goroutines_per_conn=%.3f dropped=%d\n",
		per(r.rss, r.baseRSS, r.rssErr), per(r.heapGC, r.baseHeap, r.hpErr), per(r.gor, r.baseGor, r.gorErr), r.dropped)
}

// forEach calls f(0..n-1) with at most conc calls at once and returns the
// first error; after an error no new calls start.
func forEach(n, conc int, f func(i int) error) error {
	var next atomic.Int64
	var failed atomic.Bool
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range min(conc, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					failed.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
