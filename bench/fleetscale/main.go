// Command fleetscale measures connections at scale (issue 36,
// docs/fleet.md §13) on this machine: a JetStream cluster of three
// nats-server processes (natstest.NewProcs), -nodes reso nodes on it, and
// -conns WebSockets spread evenly over the nodes, each subscribed to one
// shared resource (the room) and owning one transient resource (its
// presence entry). It prints:
//
//   - the time to connect, subscribe and PUT the presence entries of all,
//     the failed attempts and the connections given up;
//   - the RSS per connection of each node, and each NATS server's RSS;
//   - the idle CPU of every process and the idle NATS traffic;
//   - for -notifies NOTIFYs to the room, one after another from a
//     connection of their own to node 0, the time from the publish to the
//     last delivery (p50, p99, max), the deliveries missing and
//     duplicated;
//   - the CPU per delivery summed over every process (nodes, NATS
//     servers, load clients), the idle CPU of as long taken off;
//   - the NATS messages and bytes per notification (/varz of each server,
//     in and out, idle traffic taken off);
//   - the connections dropped during the run, each node's count of live
//     nodes at the end, and the lines of the nodes' logs that say a node
//     was taken for dead ("proposing its death") or rejoined;
//
// and then, in the same run (the fleet stopped), the same of one reso
// alone on SQLite with -single connections, and the ratios of the fleet's
// RSS per connection and CPU per delivery to the single node's.
//
// The load clients are processes of this program (started again with
// clientEnv), each of at most -per-process connections, dialing from the
// loopback addresses 127.0.0.2 onwards (-sources of them) so that the
// ephemeral ports of one source address do not bound the load. They
// connect at -rate per second in all, reached after a linear ramp of
// -ramp. Every stage is bounded in time.
//
//	go run ./bench/fleetscale -reso PATH [-nodes 3] [-conns 3000] [-single 1000] [-heartbeat 4s] [-notifies 20]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/reso-project/reso/bench/internal/cluster"
	"github.com/reso-project/reso/channel/fleet/natstest"
)

func main() {
	var err error
	if os.Getenv(clientEnv) != "" {
		err = runClient()
	} else {
		err = run()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleetscale:", err)
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	reso          string
	nodes         int
	conns         int
	single        int
	perProc       int
	sources       int
	rate          int
	ramp          time.Duration
	inflight      int
	retries       int
	heartbeat     time.Duration
	notifies      int
	notifyTimeout time.Duration
	idle          time.Duration
	timeout       time.Duration
}

// maxPerProcess is the most connections of one process (a node or a load
// client): each process may hold 20,000 descriptors.
const maxPerProcess = 19_000

func parseFlags() (config, error) {
	var c config
	flag.StringVar(&c.reso, "reso", "", "the reso binary")
	flag.IntVar(&c.nodes, "nodes", 3, "reso nodes of the fleet (1 to 16)")
	flag.IntVar(&c.conns, "conns", 3000, "WebSockets spread evenly over the fleet's nodes (at most 19,000 per node)")
	flag.IntVar(&c.single, "single", 1000, "WebSockets on the single node measured after the fleet (0: none; at most 19,000)")
	flag.IntVar(&c.perProc, "per-process", 18_000, "most connections of one load client process (100 to 19,000)")
	flag.IntVar(&c.sources, "sources", 19, "loopback source addresses of the load, from 127.0.0.2 (1 to 250)")
	flag.IntVar(&c.rate, "rate", 1000, "new connections per second, over every load client (10 to 20,000)")
	flag.DurationVar(&c.ramp, "ramp", 10*time.Second, "time for the rate of new connections to grow linearly from a tenth of -rate to -rate (at most 5m)")
	flag.IntVar(&c.inflight, "inflight", 256, "connections being set up at once, over every load client (1 to 5,000)")
	flag.IntVar(&c.retries, "retries", 2, "further attempts of a connection whose setup failed (0 to 10)")
	flag.DurationVar(&c.heartbeat, "heartbeat", 4*time.Second, "-fleet-heartbeat of the nodes")
	flag.IntVar(&c.notifies, "notifies", 20, "NOTIFYs to the room, one after another (1 to 1,000)")
	flag.DurationVar(&c.notifyTimeout, "notify-timeout", time.Minute, "bound of one NOTIFY's deliveries (at most 10m)")
	flag.DurationVar(&c.idle, "idle", 5*time.Second, "window of the idle CPU and NATS traffic, taken off the NOTIFYs' (1s to 1m)")
	flag.DurationVar(&c.timeout, "timeout", 15*time.Minute, "bound of the setup of a measure's connections (at most 1h)")
	flag.Parse()
	switch {
	case c.reso == "":
		return c, errors.New("-reso is required")
	case flag.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments %q", flag.Args())
	case c.nodes < 1 || c.nodes > 16:
		return c, errors.New("-nodes must be 1 to 16")
	case c.conns < 1 || (c.conns+c.nodes-1)/c.nodes > maxPerProcess:
		return c, fmt.Errorf("-conns must be 1 to %d per node (%d nodes: at most %d)", maxPerProcess, c.nodes, maxPerProcess*c.nodes)
	case c.single < 0 || c.single > maxPerProcess:
		return c, fmt.Errorf("-single must be 0 to %d", maxPerProcess)
	case c.perProc < 100 || c.perProc > maxPerProcess:
		return c, fmt.Errorf("-per-process must be 100 to %d", maxPerProcess)
	case c.sources < 1 || c.sources > 250:
		return c, errors.New("-sources must be 1 to 250")
	case c.rate < 10 || c.rate > 20_000:
		return c, errors.New("-rate must be 10 to 20,000")
	case c.ramp < 0 || c.ramp > 5*time.Minute:
		return c, errors.New("-ramp must be 0 to 5m")
	case c.inflight < 1 || c.inflight > 5000:
		return c, errors.New("-inflight must be 1 to 5,000")
	case c.retries < 0 || c.retries > 10:
		return c, errors.New("-retries must be 0 to 10")
	case c.heartbeat <= 0:
		return c, errors.New("-heartbeat must be positive")
	case c.notifies < 1 || c.notifies > 1000:
		return c, errors.New("-notifies must be 1 to 1,000")
	case c.notifyTimeout <= 0 || c.notifyTimeout > 10*time.Minute:
		return c, errors.New("-notify-timeout must be positive, at most 10m")
	case c.idle < time.Second || c.idle > time.Minute:
		return c, errors.New("-idle must be 1s to 1m")
	case c.timeout <= 0 || c.timeout > time.Hour:
		return c, errors.New("-timeout must be positive, at most 1h")
	}
	return c, nil
}

// cleanups are what ends the processes the bench started, run at its end
// or on SIGINT or SIGTERM, the last registered first.
var (
	cleanMu  sync.Mutex
	cleanups []func()
)

func atEnd(f func()) {
	cleanMu.Lock()
	defer cleanMu.Unlock()
	cleanups = append(cleanups, f)
}

func cleanUp() {
	cleanMu.Lock()
	fs := cleanups
	cleanups = nil
	cleanMu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

func run() error {
	c, err := parseFlags()
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintln(os.Stderr, "fleetscale:", s, "- stopping")
		cleanUp()
		os.Exit(1)
	}()
	defer cleanUp()
	dir, err := os.MkdirTemp("", "reso-fleetscale-")
	if err != nil {
		return err
	}
	atEnd(func() { os.RemoveAll(dir) })

	fleet, err := runFleet(c, dir)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	if c.single == 0 {
		return nil
	}
	single, err := runSingle(c, dir)
	if err != nil {
		return fmt.Errorf("single node: %w", err)
	}
	printRatios(os.Stdout, fleet, single)
	return nil
}

// runFleet starts the NATS cluster and the nodes, measures, prints and
// stops them.
func runFleet(c config, dir string) (phaseResult, error) {
	perNode := (c.conns + c.nodes - 1) / c.nodes
	natsDir := filepath.Join(dir, "nats")
	if err := os.MkdirAll(natsDir, 0o755); err != nil {
		return phaseResult{}, err
	}
	nc, err := natstest.NewProcs(natsServers, natsDir, natstest.ProcsConfig{Sync: natstest.SyncAlways, Monitor: true})
	if err != nil {
		return phaseResult{}, err
	}
	stopNATS := sync.OnceFunc(nc.StopAll)
	atEnd(stopNATS)
	var nodes []*cluster.Node
	stopNodes := sync.OnceFunc(func() { stopAll(nodes) })
	atEnd(stopNodes)
	for i := range c.nodes {
		n, err := cluster.StartNode(c.reso, dir, "node"+strconv.Itoa(i),
			"-nats", nc.URLs(), "-fleet", "scale", "-fleet-heartbeat", c.heartbeat.String(),
			"-channel-max-connections", strconv.Itoa(max(perNode+64, 1000)))
		if err != nil {
			return phaseResult{}, err
		}
		nodes = append(nodes, n)
	}
	if err := awaitReady(nodes, time.Now().Add(2*time.Minute)); err != nil {
		return phaseResult{}, err
	}
	fmt.Printf("%d reso nodes on a JetStream cluster of %d nats-server processes (R3, sync_interval: always), -fleet-heartbeat %v; %d CPUs\n",
		c.nodes, natsServers, c.heartbeat, runtime.NumCPU())
	res, err := measure(phase{name: "fleet", nodes: nodes, nats: nc, conns: c.conns}, c)
	if err != nil {
		printTails(nodes, 20)
		return res, err
	}
	res.print(os.Stdout, c.notifies)
	stopNodes()
	stopNATS()
	return res, nil
}

// runSingle starts one reso alone on SQLite, measures, prints and stops
// it.
func runSingle(c config, dir string) (phaseResult, error) {
	n, err := cluster.StartNode(c.reso, dir, "alone", "-db", filepath.Join(dir, "alone.db"),
		"-channel-max-connections", strconv.Itoa(max(c.single+64, 1000)))
	if err != nil {
		return phaseResult{}, err
	}
	stop := sync.OnceFunc(n.Stop)
	atEnd(stop)
	if err := awaitReady([]*cluster.Node{n}, time.Now().Add(time.Minute)); err != nil {
		return phaseResult{}, err
	}
	fmt.Println("1 reso alone on SQLite")
	res, err := measure(phase{name: "single node", nodes: []*cluster.Node{n}, conns: c.single}, c)
	if err != nil {
		printTails([]*cluster.Node{n}, 20)
		return res, err
	}
	res.print(os.Stdout, c.notifies)
	stop()
	return res, nil
}

// stopAll stops the nodes at once.
func stopAll(nodes []*cluster.Node) {
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(n.Stop)
	}
	wg.Wait()
}
