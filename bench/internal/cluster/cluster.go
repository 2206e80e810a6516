// Package cluster starts what the fleet's load programs of bench/ measure:
// a NATS JetStream cluster in a child process (the calling program started
// again, see NATSChild) and reso nodes as child processes on it (or alone
// on SQLite), each listening on loopback and with its admin listener
// (metrics and pprof) on loopback too.
package cluster

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// Node is a reso process.
type Node struct {
	Name  string
	Addr  string // HOST:PORT of the doors
	Admin string // HOST:PORT of -admin-addr (metrics, pprof)
	Log   string // the file its log goes to: dir/name.log
	cmd   *exec.Cmd
	done  chan struct{}
}

var (
	listenRe = regexp.MustCompile(`msg="reso listening" addr=(\S+)`)
	adminRe  = regexp.MustCompile(`msg="reso admin listening" addr=(\S+)`)
)

// StartNode starts bin in dir with its state under dir/name and its log
// in dir/name.log, loopback listeners (doors, and admin with pprof), no
// login, room for 20,000 connections and args, and waits (at most 90 s)
// until both listen.
func StartNode(bin, dir, name string, args ...string) (*Node, error) {
	base := []string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-pprof", "-login", "", "-channel-max-connections", "20000"}
	cmd := exec.Command(bin, append(base, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, name))
	out, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	logName := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logName)
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	n := &Node{Name: name, Log: logName, cmd: cmd, done: make(chan struct{})}
	addrs := make(chan [2]string, 1)
	go func() {
		defer logFile.Close()
		var a [2]string
		sc := bufio.NewScanner(io.TeeReader(out, logFile))
		for sc.Scan() {
			if m := listenRe.FindStringSubmatch(sc.Text()); m != nil && a[0] == "" {
				a[0] = m[1]
			}
			if m := adminRe.FindStringSubmatch(sc.Text()); m != nil && a[1] == "" {
				a[1] = m[1]
			}
			if a[0] != "" && a[1] != "" && addrs != nil {
				addrs <- a
				addrs = nil
			}
		}
		io.Copy(logFile, out) // past a line too long to scan: the node must not block on its log
	}()
	go func() { cmd.Wait(); close(n.done) }()
	select {
	case a := <-addrs:
		n.Addr, n.Admin = a[0], a[1]
		return n, nil
	case <-n.done:
		return nil, fmt.Errorf("%s exited before it listened: %v", name, cmd.ProcessState)
	case <-time.After(90 * time.Second):
		n.Kill()
		return nil, fmt.Errorf("%s did not listen within 90 s", name)
	}
}

// Pid is the node's process id.
func (n *Node) Pid() int { return n.cmd.Process.Pid }

// Exited returns how the node's process ended ("signal: killed", "exit
// status 1"), or "" while it runs.
func (n *Node) Exited() string {
	select {
	case <-n.done:
		return n.cmd.ProcessState.String()
	default:
		return ""
	}
}

// Kill ends the node with SIGKILL and waits until it is gone.
func (n *Node) Kill() error {
	err := n.cmd.Process.Kill()
	<-n.done
	return err
}

// Stop ends the node with SIGINT, and with SIGKILL once it is past a
// grace of 15 s; a node already gone is left alone.
func (n *Node) Stop() {
	select {
	case <-n.done:
		return
	default:
	}
	_ = n.cmd.Process.Signal(os.Interrupt)
	select {
	case <-n.done:
	case <-time.After(15 * time.Second):
		n.Kill()
	}
}

// Fleet is a NATS JetStream cluster in a child process and reso nodes on
// it.
type Fleet struct {
	nats  *natsProc
	Sync  natstest.Sync // the NATS servers' sync_interval
	Nodes []*Node
}

// StartFleet starts a three-server JetStream cluster (stores under
// dir/nats, sync_interval: always) in a child process, the calling program
// started again (its main must serve NATS when NATSChild says so), and n
// reso nodes of the fleet "bench" on it, with -fleet-heartbeat heartbeat
// and args. The caller ends it with Stop.
func StartFleet(bin, dir string, n int, heartbeat time.Duration, args ...string) (*Fleet, error) {
	return StartFleetSync(bin, dir, n, heartbeat, natstest.SyncAlways, args...)
}

// StartFleetSync is StartFleet with the NATS servers' sync_interval
// chosen.
func StartFleetSync(bin, dir string, n int, heartbeat time.Duration, sync natstest.Sync, args ...string) (*Fleet, error) {
	nc, err := startNATS(filepath.Join(dir, "nats"), sync)
	if err != nil {
		return nil, err
	}
	f := &Fleet{nats: nc, Sync: sync}
	for i := range n {
		a := append([]string{"-nats", nc.urls, "-fleet", "bench", "-fleet-heartbeat", heartbeat.String()}, args...)
		node, err := StartNode(bin, dir, fmt.Sprintf("node%d", i), a...)
		if err != nil {
			f.Stop()
			return nil, err
		}
		f.Nodes = append(f.Nodes, node)
	}
	return f, nil
}

// NATSURLs are the client URLs of the fleet's NATS cluster.
func (f *Fleet) NATSURLs() string { return f.nats.urls }

// NATSPid is the process id of the fleet's NATS cluster.
func (f *Fleet) NATSPid() int { return f.nats.cmd.Process.Pid }

// Stop ends the nodes, then the NATS cluster.
func (f *Fleet) Stop() {
	for _, n := range f.Nodes {
		n.Stop()
	}
	f.nats.stop()
}

// Pair is what the fleet's figures compare: a fleet of three nodes and
// one reso alone on SQLite, in a temporary directory of their own.
type Pair struct {
	Dir   string // the nodes' working directory
	Fleet *Fleet
	Alone *Node
}

// StartPair starts a Pair of bin: the fleet with -fleet-heartbeat
// heartbeat (its NATS servers with sync_interval: always), the single node
// with its database alone.db in Dir and aloneArgs. The caller ends it with
// Stop.
func StartPair(bin string, heartbeat time.Duration, aloneArgs ...string) (*Pair, error) {
	return StartPairSync(bin, heartbeat, natstest.SyncAlways, aloneArgs...)
}

// StartPairSync is StartPair with the NATS servers' sync_interval chosen.
func StartPairSync(bin string, heartbeat time.Duration, sync natstest.Sync, aloneArgs ...string) (*Pair, error) {
	dir, err := os.MkdirTemp("", "reso-bench-")
	if err != nil {
		return nil, err
	}
	p := &Pair{Dir: dir}
	if p.Fleet, err = StartFleetSync(bin, dir, 3, heartbeat, sync); err != nil {
		p.Stop()
		return nil, err
	}
	if p.Alone, err = StartNode(bin, dir, "alone", append([]string{"-db", filepath.Join(dir, "alone.db")}, aloneArgs...)...); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// Stop ends the nodes and the NATS cluster and removes the directory.
func (p *Pair) Stop() {
	if p.Alone != nil {
		p.Alone.Stop()
	}
	if p.Fleet != nil {
		p.Fleet.Stop()
	}
	os.RemoveAll(p.Dir)
}
