// Command fleetnodes measures issue 36's figures of a fleet of many idle
// nodes on one log (docs/fleet.md §13, "Fifty nodes on one log"): for each
// node count of -nodes it starts a three-server NATS JetStream cluster in a
// child process and that many reso nodes on it (bench/internal/cluster),
// each with -conns subscribed WebSockets, and prints one row:
//
//   - ready: from the launch of the nodes (-start at once) to every node's
//     /readyz answering 200;
//   - write: -writes NOTIFYs, one at a time, from a connection of node 0
//     to a resource one connection of every node subscribes to, and the
//     time from the send to the last node's delivery (p50, p99);
//   - heartbeats: the messages the heartbeat and members buckets' consumers
//     delivered per second over -window of idleness (the watches of every
//     node: JetStream's count of each consumer's deliveries), and the
//     bytes that makes (the buckets' mean message size);
//   - CPU and RSS per idle node over the window (/proc), and the NATS
//     process's CPU;
//   - join: one more node, from its launch to its /readyz answering 200.
//
// The load client is this process; NATS and the reso nodes are child
// processes. Every load is bounded in count and time, on loopback.
//
//	go run ./bench/fleetnodes -reso PATH [-nodes 5,10,25,50] [-conns 3] [-writes 100] [-window 20s] [-heartbeat 10s]
package main

import (
	"errors"
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/reso-project/reso/bench/internal/cluster"
)

func main() { cluster.Main("fleetnodes", run) }

// config is the command line.
type config struct {
	reso      string
	nodes     []int
	conns     int
	writes    int
	start     int
	window    time.Duration
	heartbeat time.Duration
	timeout   time.Duration
}

func run() error {
	var c config
	var nodes string
	flag.StringVar(&c.reso, "reso", "", "the reso binary")
	flag.StringVar(&nodes, "nodes", "5,10,25,50", "node counts, one fleet each (2 to 60)")
	flag.IntVar(&c.conns, "conns", 3, "subscribed WebSockets per node (1 to 100)")
	flag.IntVar(&c.writes, "writes", 100, "NOTIFYs timed from node 0 to every node (1 to 1,000)")
	flag.IntVar(&c.start, "start", 8, "nodes launched at once (1 to 60)")
	flag.DurationVar(&c.window, "window", 20*time.Second, "idle time over which heartbeats, CPU and RSS are measured (1s to 5m)")
	flag.DurationVar(&c.heartbeat, "heartbeat", 10*time.Second, "-fleet-heartbeat of the nodes")
	flag.DurationVar(&c.timeout, "timeout", 3*time.Minute, "bound of each step (at most 10m)")
	flag.Parse()
	for _, s := range strings.Split(nodes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 2 || n > 60 {
			return fmt.Errorf("-nodes: %q is no count from 2 to 60", s)
		}
		c.nodes = append(c.nodes, n)
	}
	switch {
	case c.reso == "":
		return errors.New("-reso is required")
	case c.conns < 1 || c.conns > 100, c.writes < 1 || c.writes > 1000, c.start < 1 || c.start > 60,
		c.window < time.Second || c.window > 5*time.Minute, c.heartbeat <= 0, c.timeout <= 0 || c.timeout > 10*time.Minute:
		return errors.New("a flag is out of its range (see -h)")
	}
	fmt.Printf("idle reso nodes on a 3-server NATS JetStream cluster (R3), -fleet-heartbeat %v, %d WebSockets per node, %d CPUs\n",
		c.heartbeat, c.conns, runtime.NumCPU())
	fmt.Println(header)
	for _, n := range c.nodes {
		r, err := measure(c, n)
		if err != nil {
			return fmt.Errorf("%d nodes: %w", n, err)
		}
		fmt.Println(r)
	}
	return nil
}
