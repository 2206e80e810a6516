// Command fleet measures the figures of the fleet (issues 21 and 28,
// docs/fleet.md §13) on this machine: it starts a three-server NATS
// JetStream cluster in a child process of its own, three reso nodes on it
// and one reso alone on SQLite, and prints, measured in one run:
//
//   - persistent and transient PUTs per second with -conns connections
//     spread over the three nodes, each with -inflight writes in flight
//     and each one at a time, beside the single node, with the CPU time
//     per write summed over the processes that served them (the three
//     nodes and the NATS servers; the single node alone);
//   - persistent PUTs per second on one connection, one at a time and
//     with -depth writes in flight (pipelined), beside the single node;
//   - GETs per second of -conns connections to one node, each GET sent
//     once the reply to the one before is in, with p50/p99 (every GET of
//     a fleet node waits for the read barrier), beside the single node;
//   - one NOTIFY in flight (each sent once the reply to the one before is
//     in) to -subs subscribers spread over the three nodes: NOTIFYs per
//     second, p50/p99 from NOTIFY to delivery, missing deliveries;
//   - fan-out at a fixed rate: -fan-subs subscribers, -rate NOTIFY/s;
//   - node death: the time from kill -9 of a node to the last DELETE of its
//     transient resources seen on another node;
//   - the log's ceiling without reso: entries per second one R3 stream
//     takes in messages of 1, 16, 64 and 256 entries (issue 36).
//
// The NATS servers run with sync_interval: always (docs/fleet.md §14);
// -nats-sync default runs them with nats-server's default (fsync every 2
// minutes) instead, and -nats-sync both starts a second fleet on a second
// cluster with the default beside the first, so that the write loads
// measure both in the same run, in turn (always, default, default, always,
// each for half of -d, so that a drift of the machine's load weighs on both
// alike), and print the ratio (issue 35). Likewise -db-sync full or both
// for the single node's -db-sync (SQLite's synchronous=NORMAL or FULL).
//
// Every load is bounded in count and time, on loopback.
//
//	go run ./bench/fleet -reso PATH [-d 3s] [-conns 32] [-inflight 16] [-depth 64] [-subs 100] [-fan-subs 1000] [-rate 1000] [-transients 1000] [-heartbeat 10s] [-nats-sync always|default|both] [-db-sync normal|full|both] [-only LOAD]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/reso-project/reso/bench/internal/cluster"
	"github.com/reso-project/reso/bench/internal/proc"
	"github.com/reso-project/reso/channel/fleet/natstest"
)

func main() { cluster.Main("fleet", run) }

// config is the command line.
type config struct {
	reso       string
	d          time.Duration
	conns      int
	inflight   int
	subs       int
	fanSubs    int
	rate       int
	transients int
	depth      int
	heartbeat  time.Duration
	natsSync   string
	dbSync     string
	only       string
}

func run() error {
	var c config
	flag.StringVar(&c.reso, "reso", "", "the reso binary")
	flag.DurationVar(&c.d, "d", 3*time.Second, "duration of each load (at most 1m)")
	flag.IntVar(&c.conns, "conns", 32, "connections of the write loads (at most 256)")
	flag.IntVar(&c.inflight, "inflight", 16, "writes in flight on each connection of the write loads (at most 256)")
	flag.IntVar(&c.subs, "subs", 100, "subscribers of the NOTIFY load with one in flight (at most 5000)")
	flag.IntVar(&c.fanSubs, "fan-subs", 1000, "subscribers of the fan-out at -rate (at most 5000)")
	flag.IntVar(&c.rate, "rate", 1000, "NOTIFY per second of the fan-out (at most 5000; 0 skips it)")
	flag.IntVar(&c.transients, "transients", 1000, "transient resources of the node killed (at most 10000; 0 skips it)")
	flag.IntVar(&c.depth, "depth", 64, "writes in flight on the one connection of the pipelined load (at most 1024)")
	flag.DurationVar(&c.heartbeat, "heartbeat", 10*time.Second, "-fleet-heartbeat of the nodes")
	flag.StringVar(&c.natsSync, "nats-sync", "always", "sync_interval of the NATS servers: always, default (nats-server's, fsync every 2 minutes), or both (a second fleet on a second cluster with the default, measured beside the first by the write loads)")
	flag.StringVar(&c.dbSync, "db-sync", "normal", "-db-sync of the single node: normal, full, or both (a second single node with full, measured beside the first by the write loads)")
	flag.StringVar(&c.only, "only", "", "run only this load: writes (or only its persistent or transient ones), pipelined, reads, notify, fanout, death or stream")
	flag.Parse()
	switch {
	case c.reso == "":
		return errors.New("-reso is required")
	case c.d <= 0 || c.d > time.Minute, c.conns < 1 || c.conns > 256, c.inflight < 1 || c.inflight > 256,
		c.subs < 1 || c.subs > 5000, c.fanSubs < 1 || c.fanSubs > 5000,
		c.rate < 0 || c.rate > 5000, c.transients < 0 || c.transients > 10000, c.depth < 1 || c.depth > 1024:
		return errors.New("a flag is out of its range (see -h)")
	case c.natsSync != "always" && c.natsSync != "default" && c.natsSync != "both":
		return errors.New("-nats-sync: want always, default or both")
	case c.dbSync != "normal" && c.dbSync != "full" && c.dbSync != "both":
		return errors.New("-db-sync: want normal, full or both")
	}
	bin, err := filepath.Abs(c.reso)
	if err != nil {
		return err
	}
	c.reso = bin
	sync := natstest.SyncAlways
	if c.natsSync == "default" {
		sync = natstest.SyncDefault
	}
	aloneSync := "normal"
	if c.dbSync == "full" {
		aloneSync = "full"
	}
	// -db-sync normal is reso's default: not given, so that a reso from
	// before the flag runs too (bench/fleet-reads.sh compares with one).
	var aloneArgs []string
	if aloneSync != "normal" {
		aloneArgs = []string{"-db-sync", aloneSync}
	}
	pair, err := cluster.StartPairSync(c.reso, c.heartbeat, sync, aloneArgs...)
	if err != nil {
		return err
	}
	defer pair.Stop()
	f, alone := pair.Fleet, pair.Alone
	b := &bench{c: c, fleet: f, alone: alone}
	fmt.Printf("3 reso nodes on a 3-server NATS JetStream cluster (R3, sync_interval %v), and 1 reso on SQLite (-db-sync %s); %d CPUs\n", sync, aloneSync, runtime.NumCPU())
	fmt.Printf("admin listeners (metrics, pprof): nodes %s, %s, %s; single node %s\n", f.Nodes[0].Admin, f.Nodes[1].Admin, f.Nodes[2].Admin, alone.Admin)
	if c.natsSync == "both" {
		dir := filepath.Join(pair.Dir, "sync-default")
		if err := os.Mkdir(dir, 0o700); err != nil {
			return err
		}
		if b.fleet2, err = cluster.StartFleetSync(c.reso, dir, 3, c.heartbeat, natstest.SyncDefault); err != nil {
			return err
		}
		defer b.fleet2.Stop()
		fmt.Printf("and 3 reso nodes on a second 3-server cluster with sync_interval %v\n", b.fleet2.Sync)
	}
	if c.dbSync == "both" {
		if b.alone2, err = cluster.StartNode(c.reso, pair.Dir, "alone-full", "-db", filepath.Join(pair.Dir, "alone-full.db"), "-db-sync", "full"); err != nil {
			return err
		}
		defer b.alone2.Stop()
		fmt.Println("and a second single node with -db-sync full")
	}
	for _, l := range []struct {
		name string
		run  func() error
	}{
		{"writes", b.writes},
		{"pipelined", b.pipelined},
		{"reads", b.reads},
		{"notify", b.notify},
		{"fanout", b.fanout},
		{"death", b.death},
		{"stream", b.stream},
	} {
		if c.only == "" || c.only == l.name || l.name == "writes" && (c.only == "persistent" || c.only == "transient") {
			if err := l.run(); err != nil {
				return fmt.Errorf("%s: %w", l.name, err)
			}
		}
	}
	return nil
}

// bench is one run's processes.
type bench struct {
	c      config
	fleet  *cluster.Fleet
	alone  *cluster.Node
	fleet2 *cluster.Fleet // with -nats-sync both: the fleet whose NATS servers keep the default sync_interval
	alone2 *cluster.Node  // with -db-sync both: the single node with -db-sync full
}

func (b *bench) fleetAddrs() []string { return addrsOf(b.fleet) }

// addrsOf are the doors of f's nodes.
func addrsOf(f *cluster.Fleet) []string {
	var a []string
	for _, n := range f.Nodes {
		a = append(a, n.Addr)
	}
	return a
}

// fleetPIDs are the processes that serve the fleet: its nodes and NATS.
func (b *bench) fleetPIDs() []int { return pidsOf(b.fleet) }

// pidsOf are the processes that serve f: NATS, then its nodes.
func pidsOf(f *cluster.Fleet) []int {
	pids := []int{f.NATSPid()}
	for _, n := range f.Nodes {
		pids = append(pids, n.Pid())
	}
	return pids
}

// measured runs load and returns its rate and the CPU time each of pids
// spent per operation meanwhile, in microseconds.
func measured(pids []int, load func() (float64, error)) (rate float64, cpu []float64, err error) {
	before := make([]time.Duration, len(pids))
	for i, p := range pids {
		before[i] = proc.CPU(p)
	}
	start := time.Now()
	rate, err = load()
	if err != nil {
		return 0, nil, err
	}
	ops := rate * time.Since(start).Seconds()
	cpu = make([]float64, len(pids))
	for i, p := range pids {
		if ops > 0 {
			cpu[i] = float64((proc.CPU(p) - before[i]).Microseconds()) / ops
		}
	}
	return rate, cpu, nil
}

// abba measures the rates of loads a and b in the order a, b, b, a, each
// for half of d, so that a drift of the machine's load over the four
// weighs on both alike; it returns each one's mean rate.
func abba(d time.Duration, a, b func(time.Duration) (float64, error)) (ra, rb float64, err error) {
	for _, l := range []struct {
		run  func(time.Duration) (float64, error)
		rate *float64
	}{{a, &ra}, {b, &rb}, {b, &rb}, {a, &ra}} {
		r, err := l.run(d / 2)
		if err != nil {
			return 0, 0, err
		}
		*l.rate += r / 2
	}
	return ra, rb, nil
}

// sum adds xs up.
func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

func (b *bench) writes() error {
	c := b.c
	for _, persistent := range []bool{true, false} {
		kind := "transient"
		if persistent {
			kind = "persistent"
		}
		if c.only != "" && c.only != "writes" && c.only != kind {
			continue
		}
		for _, depth := range []int{c.inflight, 1} {
			one, oneCPU, err := measured([]int{b.alone.Pid(), os.Getpid()}, func() (float64, error) {
				return writes([]string{b.alone.Addr}, c.conns, depth, c.d, persistent)
			})
			if err != nil {
				return err
			}
			three, threeCPU, err := measured(append(b.fleetPIDs(), os.Getpid()), func() (float64, error) {
				return writes(b.fleetAddrs(), c.conns, depth, c.d, persistent)
			})
			if err != nil {
				return err
			}
			fmt.Printf("%s PUTs, %d connections × %d in flight: fleet %.0f/s, single node %.0f/s, ratio %.2f; CPU per write: fleet %.0f µs (NATS %.0f, nodes %.0f, %.0f, %.0f), single node %.0f µs (%.1f×); load client %.0f µs, %.0f µs; cores busy with the fleet's load %.2f, the single node's %.2f\n",
				kind, c.conns, depth, three, one, three/one, sum(threeCPU[:4]), threeCPU[0], threeCPU[1], threeCPU[2], threeCPU[3], oneCPU[0], sum(threeCPU[:4])/oneCPU[0],
				threeCPU[4], oneCPU[1], three*sum(threeCPU)/1e6, one*sum(oneCPU)/1e6)
			if b.fleet2 != nil {
				always, other, err := abba(c.d,
					func(d time.Duration) (float64, error) { return writes(b.fleetAddrs(), c.conns, depth, d, persistent) },
					func(d time.Duration) (float64, error) {
						return writes(addrsOf(b.fleet2), c.conns, depth, d, persistent)
					})
				if err != nil {
					return err
				}
				fmt.Printf("  NATS sync_interval %v against %v, measured in turn (%v, %v, %v, %v, %v each): %.0f/s against %.0f/s, ratio %.2f\n",
					b.fleet.Sync, b.fleet2.Sync, b.fleet.Sync, b.fleet2.Sync, b.fleet2.Sync, b.fleet.Sync, c.d/2, always, other, always/other)
			}
			if b.alone2 != nil && persistent {
				normal, full, err := abba(c.d,
					func(d time.Duration) (float64, error) {
						return writes([]string{b.alone.Addr}, c.conns, depth, d, persistent)
					},
					func(d time.Duration) (float64, error) {
						return writes([]string{b.alone2.Addr}, c.conns, depth, d, persistent)
					})
				if err != nil {
					return err
				}
				fmt.Printf("  single node -db-sync full against normal, measured in turn (normal, full, full, normal, %v each): %.0f/s against %.0f/s, ratio %.2f\n",
					c.d/2, full, normal, full/normal)
			}
		}
	}
	return nil
}

func (b *bench) pipelined() error {
	for _, depth := range []int{1, b.c.depth} {
		one, err := writes([]string{b.alone.Addr}, 1, depth, b.c.d, true)
		if err != nil {
			return err
		}
		three, err := writes([]string{b.fleet.Nodes[0].Addr}, 1, depth, b.c.d, true)
		if err != nil {
			return err
		}
		fmt.Printf("persistent PUTs, 1 connection, %d in flight: fleet %.0f/s, single node %.0f/s, ratio %.2f\n", depth, three, one, three/one)
	}
	return nil
}

func (b *bench) reads() error {
	var alone, three readResult
	_, aloneCPU, err := measured([]int{b.alone.Pid()}, func() (float64, error) {
		var err error
		alone, err = reads(b.alone.Addr, b.c.conns, b.c.d)
		return alone.rate, err
	})
	if err != nil {
		return err
	}
	pos0, err := appliedPosition(b.fleet.Nodes[0].Admin)
	if err != nil {
		return err
	}
	_, threeCPU, err := measured(b.fleetPIDs(), func() (float64, error) {
		var err error
		three, err = reads(b.fleet.Nodes[0].Addr, b.c.conns, b.c.d)
		return three.rate, err
	})
	if err != nil {
		return err
	}
	pos1, err := appliedPosition(b.fleet.Nodes[0].Admin)
	if err != nil {
		return err
	}
	fmt.Printf("GETs, %d connections to one node, one at a time each: fleet %s; single node %s; CPU per GET: fleet %.0f µs (NATS %.0f, nodes %.0f, %.0f, %.0f), single node %.0f µs; messages of the log per GET %.3f\n",
		b.c.conns, three, alone, sum(threeCPU), threeCPU[0], threeCPU[1], threeCPU[2], threeCPU[3], aloneCPU[0],
		float64(pos1-pos0)/(three.rate*b.c.d.Seconds()))
	info, mark, err := barrierFloor(b.fleet.NATSURLs(), b.c.d)
	if err != nil {
		return err
	}
	fmt.Printf("  the barriers' floor on this NATS cluster without reso, one request at a time: STREAM.INFO %s; an acknowledged publish (a read mark) %s; rate ratio %.2f\n",
		strings.ReplaceAll(info.String(), "GET/s", "requests/s"), strings.ReplaceAll(mark.String(), "GET/s", "publishes/s"), mark.rate/info.rate)
	return nil
}

func (b *bench) notify() error {
	one, err := fanout([]string{b.alone.Addr}, b.c.subs, 0, b.c.d)
	if err != nil {
		return err
	}
	three, err := fanout(b.fleetAddrs(), b.c.subs, 0, b.c.d)
	if err != nil {
		return err
	}
	fmt.Printf("one NOTIFY in flight, %d subscribers: fleet %s; single node %s; NOTIFY/s ratio %.2f\n", b.c.subs, three, one, three.published/one.published)
	rate, p50, p99, err := floor(b.fleet.NATSURLs(), b.c.d)
	if err != nil {
		return err
	}
	fmt.Printf("  its floor on this NATS cluster without reso (publish to an R3 stream, acknowledged, delivered to three consumers, two reports back): %.0f rounds/s, p50 %v, p99 %v; ratio to the single node %.2f\n",
		rate, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), rate/one.published)
	return nil
}

func (b *bench) fanout() error {
	if b.c.rate == 0 {
		return nil
	}
	// CPU per delivery: each process's CPU time over the whole run
	// (set-up and the last deliveries included) over its deliveries.
	run := func(addrs []string, pids []int) (fanResult, []float64, error) {
		pids = append(pids, os.Getpid())
		before := make([]time.Duration, len(pids))
		for i, p := range pids {
			before[i] = proc.CPU(p)
		}
		r, err := fanout(addrs, b.c.fanSubs, b.c.rate, b.c.d)
		cpu := make([]float64, len(pids))
		for i, p := range pids {
			if r.delivered > 0 {
				cpu[i] = float64((proc.CPU(p) - before[i]).Microseconds()) / float64(r.delivered)
			}
		}
		return r, cpu, err
	}
	one, oneCPU, err := run([]string{b.alone.Addr}, []int{b.alone.Pid()})
	if err != nil {
		return err
	}
	three, threeCPU, err := run(b.fleetAddrs(), b.fleetPIDs())
	if err != nil {
		return err
	}
	fmt.Printf("fan-out, %d subscribers, %d NOTIFY/s of ~100 bytes: fleet %s; single node %s\n", b.c.fanSubs, b.c.rate, three, one)
	fmt.Printf("  CPU per delivery: fleet %.1f µs (NATS %.1f, nodes %.1f, %.1f, %.1f), load client %.1f µs; single node %.1f µs, load client %.1f µs\n",
		sum(threeCPU[:4]), threeCPU[0], threeCPU[1], threeCPU[2], threeCPU[3], threeCPU[4], oneCPU[0], oneCPU[1])
	return nil
}

func (b *bench) death() error {
	if b.c.transients == 0 {
		return nil
	}
	took, err := death(b.fleet.Nodes, b.c.transients)
	if err != nil {
		return err
	}
	fmt.Printf("node death: kill -9 to the last DELETE of %d transient resources seen on another node: %v (-fleet-heartbeat %v)\n", b.c.transients, took.Round(time.Millisecond), b.c.heartbeat)
	return nil
}
