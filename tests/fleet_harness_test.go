package tests

import (
	"context"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/channel/fleet/natstest"
	"github.com/reso-project/reso/internal/natsname"
)

// fleetMode runs the channel's suites on a fleet (docs/fleet.md): three
// reso nodes on a three-server NATS JetStream cluster, behind a loopback
// proxy that sends each new TCP connection to the next node, so that
// consecutive clients of one test talk to different nodes. It is one of
// the default modes (see modes): each test gets three nodes of its own,
// on the one NATS cluster of the test binary (sharedNATS), since some
// tests restart the nodes (chanServer.restart) or give them flags of
// their own.
var fleetMode = mode{name: "fleet"}

// fleetNodes is how many nodes a test fleet has.
const fleetNodes = 3

// fleetHeartbeat is the -fleet-heartbeat of the test fleets: short, so
// that the tests that wait for a node's death end soon, but not 2 s, with
// which a live node starved of CPU under the whole parallel run (load
// average 30 on two cores) was taken for dead by the others.
const fleetHeartbeat = "4s"

// fleetWait bounds a fleet node's answer to one request of the tests: a
// node answers a write within 15 s (5 s for the log to store it, 10 s for
// its node to apply it: channel/replica_log.go), unavailable at worst, and a
// read within 10 s; right after NATS comes back they take that long.
const fleetWait = 30 * time.Second

var (
	natsMu     sync.Mutex
	natsShared *natstest.Procs
	natsDir    string
)

// sharedNATS returns the NATS cluster of the test binary, started on
// first use (three nats-server processes, streams replicated three
// times); TestMain stops it. The servers are processes rather than
// servers in the test's process so that they run as users run them,
// without the race detector the test binary is built with: in the
// test's process they made the package's run cost about 1,620
// CPU-seconds on two cores, as processes 1,390.
func sharedNATS(t testing.TB) *natstest.Procs {
	t.Helper()
	natsMu.Lock()
	defer natsMu.Unlock()
	if natsShared != nil {
		return natsShared
	}
	dir, err := os.MkdirTemp("", "reso-nats-")
	if err != nil {
		t.Fatal(err)
	}
	c, err := natstest.NewProcs(3, dir, natstest.ProcsConfig{})
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	natsShared, natsDir = c, dir
	return c
}

// isSharedNATS reports whether nc is the shared NATS cluster.
func isSharedNATS(nc *natstest.Procs) bool {
	natsMu.Lock()
	defer natsMu.Unlock()
	return nc == natsShared
}

// stopNATS stops the shared NATS cluster, if it was started.
func stopNATS() {
	natsMu.Lock()
	defer natsMu.Unlock()
	if natsShared != nil {
		natsShared.StopAll()
		os.RemoveAll(natsDir)
	}
}

// fleet is a fleet of reso nodes of one test.
type fleet struct {
	t     testing.TB
	nats  *natstest.Procs
	name  string
	dir   string
	args  []string // every node's flags, -nats and -fleet included
	proxy *rrProxy

	mu    sync.Mutex
	nodes []*server
}

// node returns node i.
func (f *fleet) node(i int) *server {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nodes[i]
}

// startFleet starts n nodes of a new fleet (a name of its own on the
// shared NATS cluster) in one directory with the standard fixtures, each
// with the given flags, and stops them when t ends.
func startFleet(t *testing.T, n int, args ...string) *fleet {
	t.Helper()
	return startFleetOn(t, sharedNATS(t), n, args...)
}

// startFleetOn is startFleet on the NATS cluster nc.
func startFleetOn(t testing.TB, nc *natstest.Procs, n int, args ...string) *fleet {
	t.Helper()
	return startFleetNamed(t, nc, uniq("f-"), n, args...)
}

// startFleetNamed is startFleetOn for the fleet name.
func startFleetNamed(t testing.TB, nc *natstest.Procs, name string, n int, args ...string) *fleet {
	t.Helper()
	f := &fleet{t: t, nats: nc, name: name, dir: t.TempDir()}
	if isSharedNATS(nc) {
		// Registered first, so run last: after every node stopped.
		t.Cleanup(func() { dropStreams(t, nc, name) })
	}
	writeFixtures(t, f.dir)
	f.args = append([]string{"-nats", nc.URLs(), "-fleet", f.name, "-fleet-heartbeat", fleetHeartbeat}, args...)
	for range n {
		f.nodes = append(f.nodes, nil)
	}
	for i := range f.nodes {
		f.launch(i)
	}
	f.proxy = newRRProxy(t, f)
	return f
}

// dropStreams deletes the streams of the fleet name (its log, its
// key-value buckets, its snapshot store) from nc, once its nodes are gone:
// the shared cluster would otherwise keep those of every fleet of the run,
// each a replicated group of the three servers beating its heartbeats, and
// spend more of the processor on them with every test. A failure is
// logged: the streams are the cluster's, not the test's outcome.
func dropStreams(t testing.TB, nc *natstest.Procs, name string) {
	conn, err := nats.Connect(nc.URLs())
	if err != nil {
		t.Logf("dropping the streams of fleet %s: %v", name, err)
		return
	}
	defer conn.Close()
	js, err := jetstream.New(conn)
	if err != nil {
		t.Logf("dropping the streams of fleet %s: %v", name, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), fleetWait)
	defer cancel()
	// As channel/fleet and the login store name them: RESO_<NAME>_LOG,
	// KV_RESO_<NAME>_KV, OBJ_RESO_<NAME>_SNAP, ...
	part := natsname.Prefix(name)
	var mine []string
	names := js.StreamNames(ctx)
	for s := range names.Name() {
		if strings.HasPrefix(s, part) || strings.Contains(s, "_"+part) {
			mine = append(mine, s)
		}
	}
	if err := names.Err(); err != nil {
		t.Logf("listing the streams of fleet %s: %v", name, err)
	}
	for _, s := range mine {
		if err := js.DeleteStream(ctx, s); err != nil {
			t.Logf("dropping stream %s of fleet %s: %v", s, name, err)
		}
	}
}

// launch starts node i.
func (f *fleet) launch(i int) {
	f.t.Helper()
	s, err := startIn(f.t, f.dir, mode{name: "fleet"}, f.args...)
	if err != nil {
		f.t.Fatal(err)
	}
	s.wait = fleetWait
	f.mu.Lock()
	f.nodes[i] = s
	f.mu.Unlock()
	f.t.Cleanup(func() {
		s.stop()
		if f.t.Failed() {
			f.t.Logf("node %d log (%s):\n%s", i, s.Addr, s.log.String())
		}
	})
}

// nodeIDRe finds a node's id in its log.
var nodeIDRe = regexp.MustCompile(`msg="fleet node" node=([0-9a-f]{16})|"msg":"fleet node","node":"([0-9a-f]{16})"`)

// nodeID returns the id node i printed at start.
func (f *fleet) nodeID(i int) string {
	m := nodeIDRe.FindStringSubmatch(f.node(i).Log())
	if m == nil {
		f.t.Fatalf("node %d printed no id:\n%s", i, f.node(i).Log())
	}
	return m[1] + m[2]
}

// front returns a server value whose address is the proxy's: what the
// channel tests dial.
func (f *fleet) front() *server {
	return &server{Addr: f.proxy.addr, URL: "http://" + f.proxy.addr, Dir: f.dir, wait: fleetWait}
}

// rrProxy passes each new TCP connection to the next live node in turn.
type rrProxy struct {
	addr string
	ln   net.Listener
	f    *fleet
	next atomic.Uint64
}

// newRRProxy starts the proxy of f on a loopback port until t ends.
func newRRProxy(t testing.TB, f *fleet) *rrProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &rrProxy{addr: ln.Addr().String(), ln: ln, f: f}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { p.serve(c) })
		}
	})
	return p
}

// serve connects c to the next node that accepts a connection.
func (p *rrProxy) serve(c net.Conn) {
	defer c.Close()
	n := p.f.count()
	var up net.Conn
	for range n {
		s := p.f.node(int(p.next.Add(1)-1) % n)
		var err error
		if up, err = net.Dial("tcp", s.Addr); err == nil {
			break
		}
	}
	if up == nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}
