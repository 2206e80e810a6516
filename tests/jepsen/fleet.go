package jepsen

import (
	"cmp"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// FleetConfig says what StartFleet starts.
type FleetConfig struct {
	// Nodes is how many reso nodes serve (0: 3).
	Nodes int
	// Heartbeat is every node's -fleet-heartbeat (0: 4 s: short, so that
	// a dead node's transient resources go soon, but not so short that a
	// live node starved of CPU is taken for dead).
	Heartbeat time.Duration
	// Args are more flags of every node.
	Args []string
	// Seed seeds the choice of the faults' targets (0: a random seed,
	// logged).
	Seed uint64
}

// Fleet is an Env of real processes: three nats-server processes as a
// JetStream cluster (R3, each syncing every write to disk), and reso
// nodes of one fleet on it. Every connection between two of them passes
// through a proxy of the harness, so that faults can cut any of them:
// the routes between the servers (natstest.ProcsConfig.ProxiedRoutes),
// and each node's connection to each server. Clients reach node i
// through its gate, a proxy on a loopback port of its own that passes
// each new connection to the node's current address.
type Fleet struct {
	name  string
	nats  *natstest.Procs
	watch *logWatch
	nodes []*resoProc
	gates []*natstest.Proxy
	links [][]*natstest.Proxy // links[i][j]: node i's way to server j

	mu          sync.Mutex
	rng         *rand.Rand
	busyNodes   map[int]Kind // nodes under a fault in force
	busyServers map[int]Kind // servers under a fault in force
	faults      []*envFault
}

// natsServers is how many nats-server processes a Fleet runs.
const natsServers = 3

// Bounds of the harness's waits.
const (
	healWithin   = 60 * time.Second // a fault's heal, Env.Heal's every wait
	leaderWithin = 30 * time.Second // until the stream has a leader
)

// StartFleet starts a fleet as cfg says, waits until every node is ready
// (/readyz 200) and the log stream's replicas are current, and ends every
// process when tb ends (and when the test binary dies: the children get
// SIGKILL then). When tb ends, a data race that a node reported (under
// -race) fails it, and when tb failed, the end of each node's log is
// logged.
func StartFleet(tb testing.TB, cfg FleetConfig) *Fleet {
	tb.Helper()
	if cfg.Nodes <= 0 {
		cfg.Nodes = 3
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 4 * time.Second
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	bin := BuildReso(tb)
	f := &Fleet{
		name:        "jepsen-" + strconv.FormatUint(rand.Uint64()%(1<<40), 36),
		rng:         rand.New(rand.NewPCG(cfg.Seed, cfg.Seed>>1|1)),
		busyNodes:   map[int]Kind{},
		busyServers: map[int]Kind{},
	}
	tb.Logf("fleet %s: %d nodes, seed %d", f.name, cfg.Nodes, cfg.Seed)
	f.nats = natstest.StartProcsWith(tb, natsServers, natstest.ProcsConfig{
		Sync: natstest.SyncAlways, Monitor: true, ProxiedRoutes: true,
	})
	dir := tb.TempDir()
	for i := range cfg.Nodes {
		var row []*natstest.Proxy
		var urls []string
		for j := range natsServers {
			l, err := natstest.NewProxy(f.nats.Addr(j))
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { l.Close() })
			row = append(row, l)
			urls = append(urls, "nats://"+l.Addr())
		}
		f.links = append(f.links, row)
		gate, err := natstest.NewProxy("")
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { gate.Close() })
		f.gates = append(f.gates, gate)
		args := append([]string{"-nats", strings.Join(urls, ","), "-fleet", f.name,
			"-fleet-heartbeat", cfg.Heartbeat.String()}, cfg.Args...)
		n, err := newResoProc("node "+strconv.Itoa(i), bin, dir, args)
		if err != nil {
			tb.Fatal(err)
		}
		n.onListen = gate.SetTarget
		f.nodes = append(f.nodes, n)
	}
	// Registered after the proxies': runs before their cleanups.
	tb.Cleanup(func() { endNodes(tb, f.nodes) })
	var err error
	if f.watch, err = newLogWatch(f.nats, natsServers, logStreamName(f.name)); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(f.watch.close)
	// The first node creates the log stream; the others join it.
	for i := range f.nodes {
		if err := f.startNode(i); err != nil {
			tb.Fatal(err)
		}
	}
	if err := f.watch.awaitCurrent(f.allServers(), f.allServers(), healWithin); err != nil {
		tb.Fatal(err)
	}
	return f
}

// endNodes kills every node; it fails tb for each data race a node
// reported, and logs the end of each node's log when tb failed.
func endNodes(tb testing.TB, nodes []*resoProc) {
	for _, n := range nodes {
		if err := n.kill(); err != nil {
			tb.Error(err)
		}
	}
	for _, n := range nodes {
		for _, log := range n.races() {
			tb.Errorf("jepsen: %s reported a data race: see %s", n.name, log)
		}
		if tb.Failed() {
			tb.Logf("%s, the end of its log:\n%s", n.name, n.logTail())
		}
	}
}

// startNode starts node i (again) and waits until it is ready (its gate
// passes connections to it once it listens).
func (f *Fleet) startNode(i int) error {
	n := f.nodes[i]
	if err := n.start(); err != nil {
		return err
	}
	return n.awaitReady(procReady)
}

// killNode kills node i; its gate refuses connections until it is
// started again.
func (f *Fleet) killNode(i int) error {
	f.gates[i].SetTarget("")
	return f.nodes[i].kill()
}

// Name returns the fleet's name (-fleet).
func (f *Fleet) Name() string { return f.name }

// NATS returns the nats-server processes.
func (f *Fleet) NATS() *natstest.Procs { return f.nats }

// Nodes returns how many reso nodes serve.
func (f *Fleet) Nodes() int { return len(f.nodes) }

// URL returns node i's base URL: its gate's.
func (f *Fleet) URL(i int) string { return "http://" + f.gates[i].Addr() }

// Leader returns the server that leads the log stream now (waiting a
// bounded time for one), as the servers under no fault see it.
func (f *Fleet) Leader() (int, error) {
	return f.watch.leader(f.healthyServers(), leaderWithin)
}

// allServers returns the index of every server.
func (f *Fleet) allServers() []int {
	out := make([]int, natsServers)
	for i := range out {
		out[i] = i
	}
	return out
}

// healthyServers returns the servers under no fault of this Env (all
// of them when every server is under one).
func (f *Fleet) healthyServers() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int
	for i := range natsServers {
		if _, busy := f.busyServers[i]; !busy {
			out = append(out, i)
		}
	}
	if len(out) == 0 {
		return f.allServers()
	}
	return out
}

// Heal ends every fault in force (those of this Env's Faults first, by
// their Heal, the faults of servers before those of nodes; then whatever
// is left: cut links and routes, paused and dead processes) and waits
// until the log stream's replicas are current and every node answers
// /readyz with 200.
func (f *Fleet) Heal() error {
	f.mu.Lock()
	faults := append([]*envFault(nil), f.faults...)
	f.mu.Unlock()
	// The servers' first: a node starts (joins the fleet) and gets ready
	// only through servers that serve.
	slices.SortStableFunc(faults, func(a, b *envFault) int {
		rank := func(x *envFault) int {
			if nodeKinds[x.kind] {
				return 1
			}
			return 0
		}
		return cmp.Compare(rank(a), rank(b))
	})
	var errs []error
	for _, x := range faults {
		if err := x.Heal(); err != nil {
			errs = append(errs, err)
		}
	}
	for i := range natsServers {
		f.nats.Heal(i)
		if f.nats.Pid(i) == 0 {
			if err := f.nats.Restart(i); err != nil {
				errs = append(errs, err)
			}
		} else {
			_ = f.nats.Resume(i)
		}
	}
	for i, n := range f.nodes {
		for _, l := range f.links[i] {
			l.Heal()
		}
		if n.running() {
			_ = n.signal(syscall.SIGCONT)
		} else if err := n.start(); err != nil {
			errs = append(errs, err)
		}
	}
	f.mu.Lock()
	clear(f.busyNodes)
	clear(f.busyServers)
	f.mu.Unlock()
	for _, x := range faults {
		x.forget()
	}
	if err := f.watch.awaitCurrent(f.allServers(), f.allServers(), healWithin); err != nil {
		errs = append(errs, err)
	}
	for _, n := range f.nodes {
		if err := n.awaitReady(healWithin); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Faults returns a fault of each kind asked that a fleet can suffer (all
// of them when none is asked); a kind it cannot suffer (KillSingle) is
// left out. A fault's Inject picks a target under no other fault in
// force (an error when there is none). Its Heal waits until
// the target serves again: a server until the log stream's replicas are
// current; a node until it answers /readyz 200, except while a server is
// under a fault (the node may then be unable to join the fleet or be
// ready, as a client of a server cut off is in a partition): then only
// until its process runs. A node cut off or paused for longer than the
// heartbeat may answer 200 when its Heal returns and then learn that the
// others took it for dead, and rejoin with a new id.
func (f *Fleet) Faults(kinds ...Kind) []Fault {
	if len(kinds) == 0 {
		kinds = fleetKinds
	}
	var out []Fault
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range kinds {
		if fleetInjects[k] == nil {
			continue
		}
		inject := fleetInjects[k]
		x := &envFault{kind: k, hit: func() (string, func() error, error) { return inject(f, k) }}
		f.faults = append(f.faults, x)
		out = append(out, x)
	}
	return out
}

// pick returns a random element of from, -1 when it is empty.
func (f *Fleet) pick(from []int) int {
	if len(from) == 0 {
		return -1
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return from[f.rng.IntN(len(from))]
}

// chance reports true with probability 1/n.
func (f *Fleet) chance(n int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.IntN(n) == 0
}

// claimNode marks node i as under a fault of kind k; false when it was
// already under one.
func (f *Fleet) claimNode(i int, k Kind) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, busy := f.busyNodes[i]; busy {
		return false
	}
	f.busyNodes[i] = k
	return true
}

// claimServer marks server i as under a fault of kind k; false when it
// was already under one.
func (f *Fleet) claimServer(i int, k Kind) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, busy := f.busyServers[i]; busy {
		return false
	}
	f.busyServers[i] = k
	return true
}

// serverFaulted reports whether a server is under a fault.
func (f *Fleet) serverFaulted() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.busyServers) > 0
}

// releaseNode marks node i as under no fault.
func (f *Fleet) releaseNode(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.busyNodes, i)
}

// releaseServer marks server i as under no fault.
func (f *Fleet) releaseServer(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.busyServers, i)
}

// freeNodes returns the nodes under no fault.
func (f *Fleet) freeNodes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int
	for i := range f.nodes {
		if _, busy := f.busyNodes[i]; !busy {
			out = append(out, i)
		}
	}
	return out
}

// freeServers returns the servers under no fault, but those in but.
func (f *Fleet) freeServers(but ...int) []int {
	var out []int
	for _, i := range f.healthyServers() {
		f.mu.Lock()
		_, busy := f.busyServers[i]
		f.mu.Unlock()
		if !busy && !contains(but, i) {
			out = append(out, i)
		}
	}
	return out
}

// contains reports whether xs holds x.
func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// nodeName and serverName name a target for Fault.Target.
func nodeName(i int) string   { return "node " + strconv.Itoa(i) }
func serverName(i int) string { return "nats-" + strconv.Itoa(i) }

// errNoTarget is the error of an Inject that finds nothing to hit: every
// candidate is under a fault already.
var errNoTarget = errors.New("jepsen: no target free of faults")

var _ Env = (*Fleet)(nil)
