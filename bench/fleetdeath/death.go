package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reso-project/reso/bench/internal/cluster"
	resoclient "github.com/reso-project/reso/client"
)

// result is what the run measured.
type result struct {
	clients    report
	procs      []string      // the client processes, "kind:clients"
	cpu        []string      // per process, "name CPU" used from the kill to cpuWall, and in all
	cpuWall    time.Duration // the kill to every client subscribed again and every DELETE seen
	lastResub  time.Duration // the kill to the last client's first resync
	p50Resub   time.Duration
	killed     time.Time
	kinds      map[string]report // per kind of client ("go", "js"), with the traces
	lastDelete time.Duration     // the kill to the last DELETE seen, over the watchers
	deleted    []int             // per watcher (survivor), resources deleted
	onceEach   []bool            // per watcher, each created once and deleted once
	acked      int
	before     latencies // the writer's PUTs before the kill
	storm      latencies // the writer's PUTs started during the storm
	stormLen   time.Duration
	writeErrs  int
	incomplete string // what was not reached before the timeout; "" when all was
}

// latencies sums up the writer's PUTs of a window.
type latencies struct {
	n        int
	p50, p99 time.Duration
	max      time.Duration
}

func summarize(ds []time.Duration) latencies {
	if len(ds) == 0 {
		return latencies{}
	}
	slices.Sort(ds)
	return latencies{n: len(ds), p50: ds[len(ds)/2], p99: ds[min(len(ds)-1, len(ds)*99/100)], max: ds[len(ds)-1]}
}

func (l latencies) String() string {
	return fmt.Sprintf("%d PUTs, p50 %v, p99 %v, max %v", l.n, l.p50.Round(10*time.Microsecond), l.p99.Round(10*time.Microsecond), l.max.Round(10*time.Microsecond))
}

func (r result) print(w io.Writer, c config) {
	fmt.Fprintf(w, "node death under load: kill -9 of node0 holding %d clients (processes %v), each given the %d nodes' URLs, subscribed to one of %d rooms and owning one transient resource; %d NOTIFY/s to the rooms from node1, %d PUT/s on node2:\n",
		r.clients.Clients, r.procs, c.nodes, c.rooms, c.rate, c.writeRate)
	if r.incomplete != "" {
		fmt.Fprintf(w, "  INCOMPLETE: %s; the clients not subscribed again: %v\n", r.incomplete, r.clients.States)
	}
	fmt.Fprintf(w, "  kill to subscribed again elsewhere (by the clients themselves, with since): %d of %d, p50 %v, last %v (target: 15 s); recovered: true %d of %d; on another node %d\n",
		r.clients.Resynced, r.clients.Clients, r.p50Resub.Round(time.Millisecond), r.lastResub.Round(time.Millisecond), r.clients.Recovered, r.clients.Clients, r.clients.Elsewhere)
	for _, k := range []string{"go", "js"} {
		if kr, ok := r.kinds[k]; ok {
			printTrace(w, map[string]string{"go": "Go", "js": "reso.js"}[k], kr, r.killed)
		}
	}
	if len(r.cpu) > 0 {
		fmt.Fprintf(w, "  CPU used from the kill to the end of the wait (%v, on %d CPUs): %s\n", r.cpuWall.Round(100*time.Millisecond), runtime.NumCPU(), strings.Join(r.cpu, ", "))
	}
	fmt.Fprintf(w, "  kill to the last DELETE of node0's %d transient resources, seen on every survivor: %v (target: -fleet-heartbeat %v + 5 s); deleted per survivor %v, each exactly once: %v\n",
		r.clients.Clients, r.lastDelete.Round(time.Millisecond), c.heartbeat, r.deleted, r.onceEach)
	fmt.Fprintf(w, "  notifications: %d NOTIFYs acknowledged, %d deliveries owed, %d missed, %d doubled, %d out of seq order (target: 0)\n",
		r.acked, r.clients.Expected, r.clients.Missed, r.clients.Doubled, r.clients.Disorder)
	ratio := 0.0
	if r.before.p99 > 0 {
		ratio = float64(r.storm.p99) / float64(r.before.p99)
	}
	fmt.Fprintf(w, "  node2's PUTs: before the kill %v; during the storm (%v) %v; p99 storm/before %.1fx; failed %d\n",
		r.before, r.stormLen.Round(time.Millisecond), r.storm, ratio, r.writeErrs)
}

// watch counts, on one survivor, the creations and deletions of the
// presence resources.
type watch struct {
	c          *resoclient.Client
	mu         sync.Mutex
	created    map[string]int
	deleted    map[string]int
	lastDelete time.Time
}

func newWatch(ctx context.Context, url, prefix string) (*watch, error) {
	c, err := resoclient.Dial(ctx, url, &resoclient.Options{Buffer: 100_000})
	if err != nil {
		return nil, err
	}
	w := &watch{c: c, created: map[string]int{}, deleted: map[string]int{}}
	_, err = c.SubscribeFunc(ctx, prefix+"/presence", func(ev resoclient.Event) {
		n := ev.Notification
		if n == nil || n.Notify != "UPDATE" {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if n.Update != "" {
			w.created[n.Update]++
		}
		if n.Delete != "" {
			w.deleted[n.Delete]++
			w.lastDelete = time.Now()
		}
	})
	if err != nil {
		c.Close()
		return nil, err
	}
	return w, nil
}

func (w *watch) counts() (created, deleted int, last time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.created), len(w.deleted), w.lastDelete
}

// once says whether each resource seen was created once and deleted once.
func (w *watch) once() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, n := range w.created {
		if n != 1 || w.deleted[id] != 1 {
			return false
		}
	}
	return len(w.deleted) == len(w.created)
}

// death runs the figure: see the package comment.
func death(f *cluster.Fleet, c config, jsArgv []string) (result, error) {
	var res result
	ctx := context.Background()
	deadline := time.Now().Add(c.timeout)
	prefix := "/death"
	var urls []string
	for _, n := range f.Nodes {
		urls = append(urls, "ws://"+n.Addr+"/channel")
	}

	var watches []*watch
	for _, u := range urls[1:] {
		w, err := newWatch(ctx, u, prefix)
		if err != nil {
			return res, err
		}
		defer w.c.Close()
		watches = append(watches, w)
	}

	// The clients' processes: Go clients (this program again) and reso.js.
	self, err := os.Executable()
	if err != nil {
		return res, err
	}
	var procs []*clientProc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	start := func(kind string, first, n int) error {
		for n > 0 {
			m := min(n, c.perProcess)
			if kind == "js" {
				m = min(n, c.jsPerProc)
			}
			cfg := childConfig{URLs: urls, N: m, First: first, Prefix: prefix, Rooms: c.rooms, WS: c.ws}
			argv, env := jsArgv, []string(nil)
			if kind == "go" {
				argv, env = []string{self}, []string{goChildEnv + "=1"}
			}
			p, err := startProc(kind, fmt.Sprintf("%s clients %d-%d", kind, first, first+m-1), argv, env, cfg)
			if err != nil {
				return err
			}
			procs = append(procs, p)
			res.procs = append(res.procs, fmt.Sprintf("%s:%d", kind, m))
			first, n = first+m, n-m
		}
		return nil
	}
	half := c.clients / 2
	if err := start("go", 0, half); err != nil {
		return res, err
	}
	if err := start("js", half, c.clients-half); err != nil {
		return res, err
	}
	for _, p := range procs {
		for {
			step := time.Now().Add(5 * time.Second)
			if step.After(deadline) {
				step = deadline
			}
			err := p.ready(step)
			if err == nil {
				break
			}
			if !errors.Is(err, errSilent) || time.Now().After(deadline) {
				return res, err
			}
			if err := alive(f); err != nil {
				return res, err
			}
		}
	}
	if err := waitFor(deadline, "every survivor's watcher to see every transient resource created", func() bool {
		if alive(f) != nil {
			return true
		}
		for _, w := range watches {
			if n, _, _ := w.counts(); n < c.clients {
				return false
			}
		}
		return true
	}); err != nil {
		return res, err
	}
	if err := alive(f); err != nil {
		return res, err
	}

	// The publisher on node 1 and the writer on node 2.
	pub, err := resoclient.Dial(ctx, urls[1], nil)
	if err != nil {
		return res, err
	}
	defer pub.Close()
	var ackMu sync.Mutex
	acked := map[string][]int{}
	stop := make(chan struct{})
	var loops sync.WaitGroup
	loops.Go(func() {
		tick := time.NewTicker(time.Second / time.Duration(c.rate))
		defer tick.Stop()
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			room := fmt.Sprintf("%s/room%d", prefix, k%c.rooms)
			_, err := pub.Notify(ctx, room, map[string]int{"k": k})
			var e *resoclient.Error
			if err == nil || errors.As(err, &e) && e.Reason == "no subscriber" {
				ackMu.Lock()
				acked[room] = append(acked[room], k)
				ackMu.Unlock()
			}
		}
	})
	writer, err := resoclient.Dial(ctx, urls[2], nil)
	if err != nil {
		return res, err
	}
	defer writer.Close()
	type put struct {
		at  time.Time
		dur time.Duration
	}
	var putMu sync.Mutex
	var puts []put
	loops.Go(func() {
		tick := time.NewTicker(time.Second / time.Duration(c.writeRate))
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			t0 := time.Now()
			err := writer.Put(ctx, prefix+"/writes", map[string]int{"i": i}, true)
			putMu.Lock()
			if err != nil {
				res.writeErrs++
			} else {
				puts = append(puts, put{t0, time.Since(t0)})
			}
			putMu.Unlock()
		}
	})
	stopped := false
	stopLoops := func() {
		if !stopped {
			stopped = true
			close(stop)
			loops.Wait()
		}
	}
	defer stopLoops()
	time.Sleep(c.before)
	if err := alive(f); err != nil {
		return res, err
	}

	// The kill.
	// The CPU of every process from the kill to the end of the wait: the
	// client processes', the survivors', NATS's and this one's.
	type cpuOf struct {
		name string
		pid  int
		at0  time.Duration
	}
	var cpus []cpuOf
	for _, p := range procs {
		cpus = append(cpus, cpuOf{name: p.kind, pid: p.cmd.Process.Pid})
	}
	for _, n := range f.Nodes[1:] {
		cpus = append(cpus, cpuOf{name: n.Name, pid: n.Pid()})
	}
	cpus = append(cpus, cpuOf{name: "NATS", pid: f.NATSPid()}, cpuOf{name: "this program", pid: os.Getpid()})
	for k := range cpus {
		cpus[k].at0, _ = procCPU(cpus[k].pid)
	}
	killed := time.Now()
	if err := f.Nodes[0].Kill(); err != nil {
		return res, err
	}
	deadline = time.Now().Add(c.timeout)
	kinds := map[string]*report{}
	reports := func(a map[string][]int, detail bool) (report, error) {
		var all report
		clear(kinds)
		for _, p := range procs {
			r, err := p.report(a, detail, time.Now().Add(2*time.Minute))
			if err != nil {
				return all, err
			}
			all.add(r)
			if kinds[p.kind] == nil {
				kinds[p.kind] = &report{}
			}
			kinds[p.kind].add(r)
		}
		return all, nil
	}
	var perr error
	progress := time.Now()
	if err := waitFor(deadline, "every client subscribed again and every transient resource deleted on every survivor", func() bool {
		r, err := reports(nil, false)
		if err != nil {
			perr = err
			return true
		}
		var deleted []int
		for _, w := range watches {
			_, n, _ := w.counts()
			deleted = append(deleted, n)
		}
		if time.Since(progress) >= 5*time.Second || time.Now().After(deadline) {
			progress = time.Now()
			fmt.Fprintf(os.Stderr, "%v after the kill: subscribed again: Go %d (the others: %v), reso.js %d (the others: %v); deleted per survivor %v\n",
				time.Since(killed).Round(time.Second), kinds["go"].Resynced, kinds["go"].States, kinds["js"].Resynced, kinds["js"].States, deleted)
		}
		return r.Resynced == c.clients && slices.Min(deleted) >= c.clients
	}); err != nil {
		// What did come is measured all the same, and the run fails after
		// printing it.
		res.incomplete = err.Error()
	}
	if perr != nil {
		return res, perr
	}
	res.cpuWall = time.Since(killed)
	var total time.Duration
	for _, c := range cpus {
		if d, ok := procCPU(c.pid); ok {
			res.cpu = append(res.cpu, fmt.Sprintf("%s %.1f s", c.name, (d-c.at0).Seconds()))
			total += d - c.at0
		}
	}
	if len(res.cpu) > 0 {
		res.cpu = append(res.cpu, fmt.Sprintf("in all %.1f s", total.Seconds()))
	}
	var lastDelete time.Time
	for _, w := range watches {
		_, n, last := w.counts()
		res.deleted = append(res.deleted, n)
		if last.After(lastDelete) {
			lastDelete = last
		}
	}
	res.lastDelete = lastDelete.Sub(killed)
	time.Sleep(2 * time.Second) // NOTIFYs and PUTs after the storm, to the clients in their new places
	stopLoops()
	for _, w := range watches {
		res.onceEach = append(res.onceEach, w.once())
	}

	// Every acknowledged NOTIFY at every client of its room: wait for
	// them (at most 1 minute), then count.
	ackMu.Lock()
	for _, ks := range acked {
		res.acked += len(ks)
	}
	var all report
	_ = waitFor(time.Now().Add(time.Minute), "every acknowledged notification", func() bool {
		all, perr = reports(acked, true)
		return perr != nil || all.Missed == 0
	})
	ackMu.Unlock()
	if perr != nil {
		return res, perr
	}
	res.clients = all
	res.p50Resub, res.lastResub = resubSpread(all.First, killed)
	res.killed = killed
	res.kinds = map[string]report{}
	for k, r := range kinds {
		res.kinds[k] = *r
	}
	res.stormLen = max(res.lastResub, res.lastDelete)
	var before, storm []time.Duration
	putMu.Lock()
	for _, p := range puts {
		switch {
		case p.at.Before(killed):
			before = append(before, p.dur)
		case p.at.Before(killed.Add(res.stormLen)):
			storm = append(storm, p.dur)
		}
	}
	putMu.Unlock()
	res.before, res.storm = summarize(before), summarize(storm)
	return res, nil
}

// alive fails when a node has ended before the kill.
func alive(f *cluster.Fleet) error {
	for _, n := range f.Nodes {
		if st := n.Exited(); st != "" {
			return fmt.Errorf("%s ended before the kill, %s (see %s.log)", n.Name, st, n.Name)
		}
	}
	return nil
}

// resubSpread is the p50 and the last of the first resyncs first (ms
// since the epoch; 0: none), from killed.
func resubSpread(first []int64, killed time.Time) (p50, last time.Duration) {
	var ds []time.Duration
	for _, ms := range first {
		if ms > 0 {
			ds = append(ds, time.UnixMilli(ms).Sub(killed))
		}
	}
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ds[len(ds)-1]
}

// waitFor polls cond every 500 ms until it holds, or fails at the
// deadline saying what was awaited.
func waitFor(deadline time.Time, what string, cond func() bool) error {
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up waiting for %s", what)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return nil
}
