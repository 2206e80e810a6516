// Command fleetdeath measures issue 36's figure of a node's death under
// load (docs/fleet.md §13) on this machine: it starts a three-server NATS
// JetStream cluster in a child process, -nodes reso nodes on it
// (bench/internal/cluster), and -clients clients of node 0 in processes of
// their own, half of them the Go client (this program again, each process
// at most -per-process clients) and half reso.js on Node
// (bench/fleetdeath/clients.mjs), each client given the list of every
// node's URL (node 0 first, so that it starts there; the others rotated
// by its number, so that the clients spread over the survivors),
// subscribed to one of -rooms rooms and owning one transient presence
// resource. Node 1 NOTIFYs the rooms -rate times a second and node 2 PUTs
// a persistent resource -write-rate times a second; then node 0 is killed
// with SIGKILL. It prints:
//
//   - the time from the kill to the last client subscribed again (with
//     since, by the client itself) and how many resyncs said recovered;
//     per kind of client (Go, reso.js), the p50, p99 and max of that time,
//     split into the kill to the open of the connection that subscribed
//     again and that open to the resync, of the connection attempts each
//     client made and of the waits between them, and what ended the
//     attempts that failed (a refusal's status and reason, with its
//     Retry-After, where the WebSocket tells it; a timeout; a reset);
//   - the CPU each process used from the kill to the end of the wait
//     (the client processes, the survivors, NATS, this one): a client
//     process that used about all the wait on its own is the bottleneck;
//   - the time from the kill to the last DELETE of node 0's transient
//     resources seen by watchers on every survivor, and whether each was
//     deleted exactly once on each;
//   - the NOTIFYs acknowledged, the deliveries owed, missed and doubled
//     (the target is 0 of either);
//   - the survivor's PUT latency, p50 and p99, before the kill (the
//     baseline of the same run) and during the storm (from the kill to the
//     later of the last resubscription and the last DELETE).
//
// NATS, the reso nodes and the clients are child processes of this one,
// which holds only the publisher, the writer and the watchers. Every load
// is bounded in count and time, on loopback.
//
//	go run ./bench/fleetdeath -reso PATH [-clients 2000] [-nodes 4] [-per-process 5000] [-js-per-process N] [-rooms 100] [-rate 50] [-write-rate 50] [-heartbeat 10s] [-ws node|ws]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/reso-project/reso/bench/internal/cluster"
)

func main() {
	if os.Getenv(goChildEnv) != "" {
		if err := goChild(); err != nil {
			fmt.Fprintln(os.Stderr, "fleetdeath (Go clients):", err)
			os.Exit(1)
		}
		return
	}
	cluster.Main("fleetdeath", run)
}

// config is the command line.
type config struct {
	reso       string
	node       string
	js         string
	ws         string
	clients    int
	nodes      int
	perProcess int
	jsPerProc  int
	rooms      int
	rate       int
	writeRate  int
	before     time.Duration
	heartbeat  time.Duration
	timeout    time.Duration
}

func run() error {
	var c config
	flag.StringVar(&c.reso, "reso", "", "the reso binary")
	flag.StringVar(&c.node, "node", "node", "the Node binary (20 or later) that runs the reso.js clients")
	flag.StringVar(&c.js, "js", "bench/fleetdeath/clients.mjs", "the reso.js clients' program")
	flag.StringVar(&c.ws, "ws", "node", `the reso.js clients' WebSocket: "node" (Node's own) or "ws" (the ws package of client/js/node_modules)`)
	flag.IntVar(&c.clients, "clients", 2000, "clients of node 0, half Go and half reso.js (2 to 20,000)")
	flag.IntVar(&c.nodes, "nodes", 4, "reso nodes (3 to 6)")
	flag.IntVar(&c.perProcess, "per-process", 5000, "clients in one client process at most (1 to 15,000)")
	flag.IntVar(&c.jsPerProc, "js-per-process", 0, "reso.js clients in one Node process at most (0: -per-process; Node runs them on one thread)")
	flag.IntVar(&c.rooms, "rooms", 100, "rooms the clients subscribe to (1 to 1,000)")
	flag.IntVar(&c.rate, "rate", 50, "NOTIFY per second to the rooms, from node 1 (1 to 1,000)")
	flag.IntVar(&c.writeRate, "write-rate", 50, "PUT per second on node 2 (1 to 1,000)")
	flag.DurationVar(&c.before, "before", 5*time.Second, "NOTIFYs and PUTs before the kill (1s to 1m)")
	flag.DurationVar(&c.heartbeat, "heartbeat", 10*time.Second, "-fleet-heartbeat of the nodes")
	flag.DurationVar(&c.timeout, "timeout", 5*time.Minute, "bound of each step: opening the clients; the kill to the end (at most 15m)")
	flag.Parse()
	switch {
	case c.reso == "":
		return errors.New("-reso is required")
	case c.ws != "node" && c.ws != "ws":
		return errors.New(`-ws is "node" or "ws"`)
	case c.clients < 2 || c.clients > 20_000, c.nodes < 3 || c.nodes > 6, c.perProcess < 1 || c.perProcess > 15_000, c.jsPerProc < 0 || c.jsPerProc > 15_000,
		c.rooms < 1 || c.rooms > 1000, c.rate < 1 || c.rate > 1000, c.writeRate < 1 || c.writeRate > 1000,
		c.before < time.Second || c.before > time.Minute, c.timeout <= 0 || c.timeout > 15*time.Minute:
		return errors.New("a flag is out of its range (see -h)")
	}
	if c.jsPerProc == 0 {
		c.jsPerProc = c.perProcess
	}
	nodeArgs, err := nodeFlags(c.node)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "reso-death-")
	if err != nil {
		return err
	}
	f, err := cluster.StartFleet(c.reso, dir, c.nodes, c.heartbeat)
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	fmt.Printf("%d reso nodes on a 3-server NATS JetStream cluster (R3), -fleet-heartbeat %v; %d CPUs\n", c.nodes, c.heartbeat, runtime.NumCPU())
	res, err := death(f, c, append(nodeArgs, c.js))
	f.Stop()
	if err != nil {
		return fmt.Errorf("%w (the nodes' logs are kept in %s)", err, dir)
	}
	res.print(os.Stdout, c)
	if res.incomplete != "" {
		return fmt.Errorf("%s (the nodes' logs are kept in %s)", res.incomplete, dir)
	}
	os.RemoveAll(dir)
	return nil
}

// nodeFlags returns the Node command line before the program: with
// --experimental-websocket when Node has no WebSocket of its own by
// default (Node 20 and 21).
func nodeFlags(node string) ([]string, error) {
	out, err := exec.Command(node, "-p", "process.versions.node.split('.')[0] + ' ' + typeof WebSocket").Output()
	if err != nil {
		return nil, fmt.Errorf("-node %s: %w", node, err)
	}
	major, ws, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if n, err := strconv.Atoi(major); err != nil || n < 20 {
		return nil, fmt.Errorf("-node %s is Node %s: the reso.js clients need Node 20 or later", node, major)
	}
	if ws != "function" {
		return []string{node, "--experimental-websocket"}, nil
	}
	return []string{node}, nil
}
