package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/reso-project/reso/bench/internal/cluster"
	"github.com/reso-project/reso/bench/internal/proc"
	"github.com/reso-project/reso/channel/fleet/natstest"
)

// phase is what one measure runs on: the fleet (nodes on nats) or the
// single node (nats nil), and the connections to spread over its nodes.
type phase struct {
	name  string
	nodes []*cluster.Node
	nats  *natstest.Procs
	conns int
}

// phaseResult is what a phase measured.
type phaseResult struct {
	name           string
	conns          int // connections asked for
	procs          int // load clients
	setup          time.Duration
	subscribed     int64
	failures       int64
	unset          int64
	errors         []string
	perNode        []int64 // connections on each node (reso_channel_connections)
	rss            []int64 // KiB, per node, with the connections held
	rssBase        []int64 // KiB, per node, before they were opened
	natsRSS        []int64 // KiB, per NATS server, with the connections held
	natsBase       []int64 // KiB, per NATS server, before
	idle           cpuSplit
	idleLen        time.Duration
	idleNATS       varz
	latency        []time.Duration // per NOTIFY: publish to the last delivery
	received       int64
	expected       int64
	duplicates     int64
	failedNotifies int           // NOTIFYs whose reply did not come
	window         time.Duration // the NOTIFYs', from the first publish to the last collect
	cpu            cpuSplit      // over window
	natsWin        varz          // over window
	dropped        int64
	dropWhy        []string  // why the first dropped connections ended
	liveNodes      []float64 // reso_fleet_live_nodes of each node at the end (fleet)
	logs           logCounts
}

// cpuSplit is CPU time by kind of process.
// idleWindows bounds the windows of -idle the idle CPU is measured over.
const idleWindows = 6

type cpuSplit struct{ nodes, nats, clients time.Duration }

func (c cpuSplit) total() time.Duration { return c.nodes + c.nats + c.clients }

func (c cpuSplit) sub(d cpuSplit) cpuSplit {
	return cpuSplit{c.nodes - d.nodes, c.nats - d.nats, c.clients - d.clients}
}

// scale is c with each kind times f.
func (c cpuSplit) scale(f float64) cpuSplit {
	m := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	return cpuSplit{m(c.nodes), m(c.nats), m(c.clients)}
}

// cpuOf reads the CPU time of the phase's processes.
func cpuOf(nodes []*cluster.Node, nats []int, clients []*clientProc) cpuSplit {
	var c cpuSplit
	for _, n := range nodes {
		c.nodes += proc.CPU(n.Pid())
	}
	for _, pid := range nats {
		c.nats += proc.CPU(pid)
	}
	for _, p := range clients {
		c.clients += proc.CPU(p.Pid())
	}
	return c
}

// rssOf reads the RSS (KiB) of each process.
func rssOf(pids []int) ([]int64, error) {
	out := make([]int64, len(pids))
	for i, pid := range pids {
		v, err := proc.RSSKB(pid)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func nodePids(nodes []*cluster.Node) []int {
	var pids []int
	for _, n := range nodes {
		pids = append(pids, n.Pid())
	}
	return pids
}

// phaseRun counts the phases, for their resources' names.
var phaseRun int

// measure runs the phase: it opens the connections (load clients of at
// most c.perProc each), measures RSS, the idle CPU and NATS traffic, then
// sends c.notifies NOTIFYs to the room one after another, each once the
// last was delivered everywhere (or its timeout passed), and measures
// them; then it closes the connections.
func measure(ph phase, c config) (res phaseResult, err error) {
	phaseRun++
	res = phaseResult{name: ph.name, conns: ph.conns}
	prefix := "/scale" + strconv.Itoa(phaseRun)
	room := prefix + "/room"
	natsP := natsPids(ph.nats)
	if res.rssBase, err = rssOf(nodePids(ph.nodes)); err != nil {
		return res, err
	}
	if res.natsBase, err = rssOf(natsP); err != nil {
		return res, err
	}

	// The connections.
	var targets []target
	for i, n := range ph.nodes {
		k := ph.conns*(i+1)/len(ph.nodes) - ph.conns*i/len(ph.nodes)
		targets = append(targets, target{Addr: n.Addr, N: k})
	}
	shares := split(targets, c.perProc)
	res.procs = len(shares)
	var sources []string
	for i := range c.sources {
		sources = append(sources, "127.0.0."+strconv.Itoa(2+i))
	}
	start := time.Now()
	deadline := start.Add(c.timeout)
	cfg := clientConfig{
		Sources:   sources,
		Room:      room,
		Presence:  prefix + "/members/",
		Rate:      float64(c.rate) / float64(len(shares)),
		Ramp:      c.ramp.Seconds(),
		InFlight:  max(c.inflight/len(shares), 1),
		Notifies:  c.notifies,
		Deadline:  deadline,
		Retries:   c.retries,
		ReadLimit: 1 << 20,
	}
	clients, err := startClients(cfg, shares)
	defer func() {
		if clients != nil {
			stopClients(clients)
		}
	}()
	if err != nil {
		return res, err
	}
	stopProgress := progress(ph.name, clients, ph.conns)
	for _, p := range clients {
		r, err := p.await("ready", deadline.Add(time.Minute))
		if err != nil {
			stopProgress()
			return res, err
		}
		res.subscribed += r.Subscribed
		res.failures += r.Failures
		res.unset += r.Unset
		res.errors = append(res.errors, r.Errors...)
	}
	stopProgress()
	res.setup = time.Since(start)
	if res.subscribed == 0 {
		return res, fmt.Errorf("no connection was set up: %s", strings.Join(res.errors, "; "))
	}

	// The memory, once the nodes settled.
	time.Sleep(3 * time.Second)
	if res.rss, err = rssOf(nodePids(ph.nodes)); err != nil {
		return res, err
	}
	if res.natsRSS, err = rssOf(natsP); err != nil {
		return res, err
	}
	for _, n := range ph.nodes {
		v, err := metric(n, "reso_channel_connections")
		if err != nil {
			return res, err
		}
		res.perNode = append(res.perNode, int64(v))
	}

	// The idle CPU and NATS traffic, to take off the NOTIFYs': the
	// quietest of up to idleWindows windows of -idle, so that what the
	// set-up left running (a snapshot of the tree, the collector) is
	// not counted as idle; it stops at a window no busier than the one
	// before.
	for i := range idleWindows {
		cpu0 := cpuOf(ph.nodes, natsP, clients)
		v0, err := readVarz(ph.nats)
		if err != nil {
			return res, err
		}
		t0 := time.Now()
		time.Sleep(c.idle)
		idle := cpuOf(ph.nodes, natsP, clients).sub(cpu0)
		idleLen := time.Since(t0)
		v1, err := readVarz(ph.nats)
		if err != nil {
			return res, err
		}
		rate := func(d time.Duration, over time.Duration) float64 { return float64(d) / float64(over) }
		if i > 0 && rate(idle.total(), idleLen) >= rate(res.idle.total(), res.idleLen) {
			break
		}
		res.idle, res.idleLen, res.idleNATS = idle, idleLen, v1.sub(v0)
	}

	// The NOTIFYs, from a connection of their own to the first node (to
	// the next one, should a node close it: a NOTIFY whose reply did not
	// come is counted failed, and its deliveries not awaited).
	pub, err := dialPublisher(ph.nodes[0].Addr)
	if err != nil {
		return res, err
	}
	defer func() { pub.close() }()
	dups := make([]int64, len(clients))
	cpu0 := cpuOf(ph.nodes, natsP, clients)
	v0, err := readVarz(ph.nats)
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	for g := range c.notifies {
		for _, p := range clients {
			if err := p.send("expect " + strconv.Itoa(g)); err != nil {
				return res, fmt.Errorf("load client: %w", err)
			}
		}
		until := time.Now().Add(c.notifyTimeout)
		sent := time.Now().UnixNano()
		if err := pub.notify(room, g, until); err != nil {
			res.failedNotifies++
			fmt.Fprintf(os.Stderr, "%s: NOTIFY %d: %v\n", ph.name, g, err)
			pub.close()
			if pub, err = redialPublisher(ph.nodes, g+1); err != nil {
				return res, err
			}
			continue
		}
		for _, p := range clients {
			if err := p.send(fmt.Sprintf("collect %d %d", g, until.UnixNano())); err != nil {
				return res, fmt.Errorf("load client: %w", err)
			}
		}
		var last, received, expected int64
		for i, p := range clients {
			r, err := p.await("collect", until.Add(30*time.Second))
			if err != nil {
				return res, err
			}
			res.received += r.Received
			res.expected += r.Expected
			received, expected = received+r.Received, expected+r.Expected
			last = max(last, r.Last)
			dups[i] = r.Duplicates
		}
		lat := time.Duration(last - sent)
		if last == 0 {
			lat = -1 // nothing delivered
		}
		res.latency = append(res.latency, lat)
		fmt.Fprintf(os.Stderr, "%s: NOTIFY %d: %d of %d delivered, the last %v after the publish\n",
			ph.name, g, received, expected, lat.Round(time.Millisecond))
	}
	res.duplicates = sum(dups)
	res.window = time.Since(t0)
	res.cpu = cpuOf(ph.nodes, natsP, clients).sub(cpu0)
	v1, err := readVarz(ph.nats)
	if err != nil {
		return res, err
	}
	res.natsWin = v1.sub(v0)

	// The connections closed; what the run left: drops, the fleet's view
	// of itself once the nodes deleted the presence entries.
	ps := clients
	clients = nil
	if res.dropped, res.dropWhy, err = stopClients(ps); err != nil {
		return res, err
	}
	time.Sleep(c.heartbeat)
	for _, n := range ph.nodes {
		if ph.nats == nil {
			break
		}
		v, err := metric(n, "reso_fleet_live_nodes")
		if err != nil {
			return res, err
		}
		res.liveNodes = append(res.liveNodes, v)
	}
	res.logs, err = readLogs(ph.nodes)
	if err != nil {
		return res, err
	}
	return res, nil
}

// progress prints, every 10 s on stderr, how far the setup is, until the
// returned func is called.
func progress(name string, clients []*clientProc, total int) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(ended)
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				var sub, fail, drop int64
				for _, p := range clients {
					r := p.Progress()
					sub, fail, drop = sub+r.Subscribed, fail+r.Failures, drop+r.Dropped
				}
				fmt.Fprintf(os.Stderr, "%s: %v: %d of %d subscribed, %d failures, %d dropped\n",
					name, time.Since(start).Round(time.Second), sub, total, fail, drop)
			}
		}
	}()
	return func() { close(done); <-ended }
}

// redialPublisher opens the publisher's connection again, to the nodes
// by turns from node k, until one takes it.
func redialPublisher(nodes []*cluster.Node, k int) (*publisher, error) {
	var errs []error
	for i := range nodes {
		p, err := dialPublisher(nodes[(k+i)%len(nodes)].Addr)
		if err == nil {
			return p, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}
