// Command fleetup runs a load program against a fleet: it starts a
// three-server NATS JetStream cluster in a child process and -nodes reso
// nodes on it (bench/internal/cluster: loopback listeners, admin listener
// with metrics and pprof), runs CMD in its own process with the nodes in
// its environment, and stops everything when CMD ends (or after -timeout).
//
//	fleetup -reso PATH [-nodes 3] [-heartbeat 10s] [-timeout 1h] CMD [ARGS...]
//
// CMD's environment gains FLEET_URLS (ws://HOST:PORT/channel of each node,
// comma-separated), FLEET_PIDS (their process ids) and FLEET_ADMINS (their
// -admin-addr), in the same order. bench/fleet-soak.sh runs the churn soak
// of bench/channel this way.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/reso-project/reso/bench/internal/cluster"
)

func main() { cluster.Main("fleetup", run) }

func run() error {
	reso := flag.String("reso", "", "the reso binary")
	nodes := flag.Int("nodes", 3, "reso nodes (1 to 5)")
	heartbeat := flag.Duration("heartbeat", 10*time.Second, "-fleet-heartbeat of the nodes")
	timeout := flag.Duration("timeout", time.Hour, "CMD is killed after this long (1s to 2h)")
	flag.Parse()
	switch {
	case *reso == "":
		return errors.New("-reso is required")
	case flag.NArg() == 0:
		return errors.New("usage: fleetup -reso PATH [flags] CMD [ARGS...]")
	case *nodes < 1 || *nodes > 5:
		return fmt.Errorf("-nodes %d: want 1 to 5", *nodes)
	case *timeout < time.Second || *timeout > 2*time.Hour:
		return fmt.Errorf("-timeout %v: want 1s to 2h", *timeout)
	}
	dir, err := os.MkdirTemp("", "reso-fleetup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	f, err := cluster.StartFleet(*reso, dir, *nodes, *heartbeat)
	if err != nil {
		return err
	}
	defer f.Stop()
	var urls, pids, admins []string
	for _, n := range f.Nodes {
		urls = append(urls, "ws://"+n.Addr+"/channel")
		pids = append(pids, strconv.Itoa(n.Pid()))
		admins = append(admins, n.Admin)
		fmt.Printf("reso %s: %s (pid %d, admin %s)\n", n.Name, n.Addr, n.Pid(), n.Admin)
	}
	fmt.Printf("%d reso nodes on a 3-server NATS JetStream cluster (R3), -fleet-heartbeat %v\n", *nodes, *heartbeat)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, *timeout)
	defer cancelT()
	cmd := exec.CommandContext(ctx, flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		"FLEET_URLS="+strings.Join(urls, ","), "FLEET_PIDS="+strings.Join(pids, ","), "FLEET_ADMINS="+strings.Join(admins, ","))
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	return cmd.Run()
}
