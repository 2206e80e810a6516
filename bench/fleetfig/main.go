// Command fleetfig measures issue 29's figures of a node's death and of
// idle connections (docs/fleet.md §13) on this machine: it starts a
// three-server NATS JetStream cluster in a child process, three reso nodes
// on it and one reso alone on SQLite (bench/internal/cluster), and prints,
// measured in one run:
//
//   - idle connections: -idle WebSockets, each subscribed to its own
//     resource and then held, spread evenly over the three nodes, against
//     as many on the single node: the growth of the nodes' RSS summed, per
//     connection;
//   - node death: -clients clients on node 0, each subscribed to one of
//     -rooms rooms and owning one transient resource, while node 1
//     NOTIFYs the rooms -rate times a second; node 0 is killed with
//     SIGKILL, and its clients reconnect to nodes 1 and 2 and SUBSCRIBE
//     again with since (the seq of the last notification each had) and the
//     epoch. It prints the time from the kill to the last DELETE of the
//     transient resources seen on node 1, the time for the clients to be
//     subscribed again, how many replies said recovered, and the
//     notifications missed and duplicated (the target is 0 of either).
//
// The load client is this process; NATS and the reso nodes are child
// processes.
// Every load is bounded in count and time, on loopback.
//
//	go run ./bench/fleetfig -reso PATH [-idle 3000] [-clients 1000] [-rooms 10] [-rate 50] [-heartbeat 10s]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/reso-project/reso/bench/internal/cluster"
)

func main() { cluster.Main("fleetfig", run) }

// config is the command line.
type config struct {
	reso      string
	idle      int
	clients   int
	rooms     int
	rate      int
	before    time.Duration
	heartbeat time.Duration
	timeout   time.Duration
}

func run() error {
	var c config
	flag.StringVar(&c.reso, "reso", "", "the reso binary")
	flag.IntVar(&c.idle, "idle", 3000, "idle connections, spread over the three nodes and then all on the single node (0 to 20,000; 0: not measured)")
	flag.IntVar(&c.clients, "clients", 1000, "clients of the node killed (0 to 5,000; 0: not measured)")
	flag.IntVar(&c.rooms, "rooms", 10, "rooms the clients of the node killed subscribe to (1 to 1,000)")
	flag.IntVar(&c.rate, "rate", 50, "NOTIFY per second to the rooms, from node 1 (1 to 1,000)")
	flag.DurationVar(&c.before, "before", 3*time.Second, "NOTIFYs before the kill (at most 1m)")
	flag.DurationVar(&c.heartbeat, "heartbeat", 10*time.Second, "-fleet-heartbeat of the nodes")
	flag.DurationVar(&c.timeout, "timeout", 3*time.Minute, "bound of each figure: opening an idle run's connections; the whole of the death figure (at most 10m)")
	flag.Parse()
	switch {
	case c.reso == "":
		return errors.New("-reso is required")
	case c.idle < 0 || c.idle > 20_000, c.clients < 0 || c.clients > 5000, c.rooms < 1 || c.rooms > 1000,
		c.rate < 1 || c.rate > 1000, c.before < 0 || c.before > time.Minute, c.timeout <= 0 || c.timeout > 10*time.Minute:
		return errors.New("a flag is out of its range (see -h)")
	}
	pair, err := cluster.StartPair(c.reso, c.heartbeat)
	if err != nil {
		return err
	}
	defer pair.Stop()
	f, alone := pair.Fleet, pair.Alone
	fmt.Printf("3 reso nodes on a 3-server NATS JetStream cluster (R3), -fleet-heartbeat %v, and 1 reso on SQLite; %d CPUs\n", c.heartbeat, runtime.NumCPU())

	if c.idle > 0 {
		three, err := idle(f.Nodes, c.idle, c.timeout)
		if err != nil {
			return fmt.Errorf("idle, fleet: %w", err)
		}
		one, err := idle([]*cluster.Node{alone}, c.idle, c.timeout)
		if err != nil {
			return fmt.Errorf("idle, single node: %w", err)
		}
		fmt.Printf("idle: %d subscribed WebSockets: fleet (%d per node) %s; single node %s; ratio %.2f\n",
			c.idle, c.idle/3, three, one, three.perConn()/one.perConn())
	}
	if c.clients > 0 {
		r, err := death(f.Nodes, c)
		if err != nil {
			return fmt.Errorf("node death: %w", err)
		}
		r.print(os.Stdout, c)
	}
	return nil
}
