package main

import (
	"fmt"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/reso-project/reso/bench/internal/cluster"
)

// header names the columns of a row.
const header = "nodes  ready     write p50  write p99  hb msgs/s  hb KiB/s  cpu/node  rss/node MiB  nats cpu  join"

// row is the figures of one node count.
type row struct {
	nodes          int
	ready          time.Duration
	p50, p99       time.Duration
	msgs, bytes    float64 // heartbeat deliveries per second, and their bytes
	cpu, rss, nats float64 // per node: CPU share and MiB; the NATS process's CPU share
	join           time.Duration
}

func (r row) String() string {
	return fmt.Sprintf("%5d  %-8v  %-9v  %-9v  %9.0f  %8.1f  %7.2f%%  %12.1f  %7.1f%%  %v",
		r.nodes, r.ready.Round(100*time.Millisecond), r.p50.Round(100*time.Microsecond), r.p99.Round(100*time.Microsecond),
		r.msgs, r.bytes/1024, 100*r.cpu, r.rss, 100*r.nats, r.join.Round(100*time.Millisecond))
}

// measure starts n nodes on a new NATS cluster and measures their row.
func measure(c config, n int) (row, error) {
	r := row{nodes: n}
	dir, err := os.MkdirTemp("", "reso-fleetnodes-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	f, err := cluster.StartFleet(c.reso, dir, 0, c.heartbeat)
	if err != nil {
		return r, err
	}
	defer stopAll(f)
	args := []string{"-nats", f.NATSURLs(), "-fleet", "bench", "-fleet-heartbeat", c.heartbeat.String()}

	began := time.Now()
	nodes := make([]*cluster.Node, n)
	err = forEach(n, c.start, func(i int) error {
		node, err := cluster.StartNode(c.reso, dir, fmt.Sprintf("node%d", i), args...)
		nodes[i] = node
		return err
	})
	for _, node := range nodes {
		if node != nil {
			f.Nodes = append(f.Nodes, node)
		}
	}
	if err != nil {
		return r, err
	}
	if err := allReady(nodes, began.Add(c.timeout)); err != nil {
		return r, err
	}
	r.ready = time.Since(began)

	w, err := openWrites(nodes, c.conns, began.Add(c.timeout))
	if err != nil {
		return r, err
	}
	defer w.close()
	if r.p50, r.p99, err = w.run(c.writes, time.Now().Add(c.timeout)); err != nil {
		return r, err
	}

	idle, err := idleFigures(f, nodes, c.window)
	if err != nil {
		return r, err
	}
	r.msgs, r.bytes, r.cpu, r.rss, r.nats = idle.msgs, idle.bytes, idle.cpu, idle.rss, idle.nats

	began = time.Now()
	late, err := cluster.StartNode(c.reso, dir, "late", args...)
	if err != nil {
		return r, err
	}
	f.Nodes = append(f.Nodes, late)
	if err := allReady([]*cluster.Node{late}, began.Add(c.timeout)); err != nil {
		return r, err
	}
	r.join = time.Since(began)
	return r, nil
}

// stopAll stops the nodes, several at once, then NATS.
func stopAll(f *cluster.Fleet) {
	nodes := f.Nodes
	_ = forEach(len(nodes), 16, func(i int) error { nodes[i].Stop(); return nil })
	f.Nodes = nil
	f.Stop()
}

// allReady waits until every node's /readyz answers 200.
func allReady(nodes []*cluster.Node, deadline time.Time) error {
	cl := &http.Client{Timeout: 5 * time.Second}
	for _, n := range nodes {
		for {
			resp, err := cl.Get("http://" + n.Admin + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not ready in time (%v)", n.Name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// forEach calls f(0..n-1) with at most conc calls at once and returns the
// first error.
func forEach(n, conc int, f func(i int) error) error {
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	next := make(chan int)
	for range min(conc, n) {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// percentile returns the p-th percentile of ds, which it sorts.
func percentile(ds []time.Duration, p float64) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[min(len(ds)-1, int(p*float64(len(ds))))]
}
