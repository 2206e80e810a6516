// Command fleetmem measures issue 36's figure (docs/fleet.md §13): what a
// transient resource of a connection costs every node of a fleet. It
// starts a three-server NATS JetStream cluster in a child process, three
// reso nodes on it and one reso alone on SQLite (bench/internal/cluster),
// and measures in one run, each node's RSS read from /proc before and
// -settle (3 s) after the last reply:
//
//   - single node: -conns WebSockets, each subscribed to one shared room
//     and owning one transient presence entry of it: RSS growth per
//     connection;
//   - fleet: as many on node 1 alone: node 1's growth per connection (the
//     local cost) and node 0's and node 2's per transient they apply from
//     the log (the remote cost: the entry, its owner's record, the
//     indexes), once a subscriber on node 0 saw every entry created.
//
// Beside each RSS it prints the live heap's growth (the node collects,
// then its go_memstats_heap_alloc_bytes is read): what the entries hold,
// without the collector's headroom.
//
// It prints both, and what one connection costs each node of a fleet of
// k nodes whose connections are spread evenly (its local cost and k-1
// remote transients) against the single node's, for k = 3 and 7.
//
// The load client is this process; NATS and the reso nodes are child
// processes. Every load is bounded in count and time, on loopback.
//
// With -heap-profile FILE it saves node 0's heap profile (its -pprof)
// once the fleet's connections are held, for
// `go tool pprof -sample_index=inuse_space`.
//
// -history N runs every node with -channel-history N: the notifications
// kept for replay (two per entry created, at most 50,000 by default) are
// a cost of each node bounded apart, which a small N leaves out of the
// figures.
//
//	go run ./bench/fleetmem -reso PATH [-conns 5000] [-history N] [-settle 3s] [-timeout 3m] [-heap-profile FILE]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/reso-project/reso/bench/internal/cluster"
)

func main() { cluster.Main("fleetmem", run) }

func run() error {
	reso := flag.String("reso", "", "the reso binary")
	conns := flag.Int("conns", 5000, "connections, all on the single node, then all on node 1 of the fleet (1 to 15,000: the load client holds them all, under a descriptor limit of 20,000 here)")
	history := flag.Int("history", 0, "-channel-history of every node (0: reso's default, 50,000); a small one leaves out the notifications kept for replay, a cost bounded apart")
	profile := flag.String("heap-profile", "", "save node 0's heap profile to this file once the fleet's connections are held")
	settle := flag.Duration("settle", 3*time.Second, "how long the nodes settle after the last entry before their RSS is read (Go's scavenger gives freed memory back over tens of seconds)")
	timeout := flag.Duration("timeout", 3*time.Minute, "bound of each run's connecting and of the entries reaching node 0 (at most 10m)")
	flag.Parse()
	switch {
	case *reso == "":
		return errors.New("-reso is required")
	case *conns < 1 || *conns > 15_000, *timeout <= 0 || *timeout > 10*time.Minute, *history < 0, *settle < 0 || *settle > 5*time.Minute:
		return errors.New("a flag is out of its range (see -h)")
	}
	var args []string
	hist := "reso's default history of notifications"
	if *history > 0 {
		args = []string{"-channel-history", strconv.Itoa(*history)}
		hist = fmt.Sprintf("-channel-history %d", *history)
	}
	dir, err := os.MkdirTemp("", "reso-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fleet, err := cluster.StartFleet(*reso, dir, 3, 10*time.Second, args...)
	if err != nil {
		return err
	}
	defer fleet.Stop()
	alone, err := cluster.StartNode(*reso, dir, "alone", append([]string{"-db", filepath.Join(dir, "alone.db")}, args...)...)
	if err != nil {
		return err
	}
	defer alone.Stop()
	fmt.Printf("3 reso nodes on a 3-server NATS JetStream cluster (R3) and 1 reso on SQLite, %s; %d CPUs; %d connections, each subscribed to a room and owning a transient entry\n",
		hist, runtime.NumCPU(), *conns)

	one, err := presence([]*cluster.Node{alone}, 0, 0, *conns, *timeout, *settle, nil)
	if err != nil {
		return fmt.Errorf("single node: %w", err)
	}
	single := one.perConn(0)
	fmt.Printf("single node: RSS %+.1f MiB, %.2f KiB per connection (live heap %.0f bytes)\n", float64(one.growth[0])/1024, single, one.livePerConn(0))

	nodes := fleet.Nodes
	fl, err := presence(nodes, 1, 0, *conns, *timeout, *settle, func() error {
		if *profile == "" {
			return nil
		}
		return saveHeap(nodes[0], *profile)
	})
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	local, remote := fl.perConn(1), (fl.perConn(0)+fl.perConn(2))/2
	fmt.Printf("fleet, connections on node 1: node 1 RSS %+.1f MiB, %.2f KiB per connection (local; live heap %.0f bytes); node 0 %+.1f MiB, %.2f KiB and node 2 %+.1f MiB, %.2f KiB per transient of another node (remote; live heap %.0f and %.0f bytes)\n",
		float64(fl.growth[1])/1024, local, fl.livePerConn(1), float64(fl.growth[0])/1024, fl.perConn(0), float64(fl.growth[2])/1024, fl.perConn(2), fl.livePerConn(0), fl.livePerConn(2))
	fmt.Printf("remote transient / single node's connection: %.2f\n", remote/single)
	for _, k := range []int{3, 7} {
		per := local + float64(k-1)*remote
		fmt.Printf("a fleet of %d nodes, connections spread evenly: %.2f KiB per connection on each node (local + %d remote), %.2f times the single node's\n",
			k, per, k-1, per/single)
	}
	return nil
}
