// Package natstest starts a real NATS JetStream cluster for tests: three
// nats-server instances (the github.com/nats-io/nats-server/v2 module) in
// the test's process, routed to each other on loopback ports, each with
// its own store under the test's temporary directory. No mock: the
// fleet's tests run against the server they run against in production.
package natstest

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Cluster is a JetStream cluster of in-process servers.
type Cluster struct {
	mu      sync.Mutex
	opts    []*server.Options
	servers []*server.Server // nil while stopped
}

// Start starts an n-server JetStream cluster on 127.0.0.1 and stops it
// when the test ends. Its client ports stay the same across Stop and
// Restart, so that clients reconnect to a restarted server.
func Start(tb testing.TB, n int) *Cluster {
	tb.Helper()
	c, err := New(n, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.StopAll)
	return c
}

// New starts an n-server JetStream cluster on 127.0.0.1 whose servers
// keep their stores under dir. The caller stops it with StopAll.
func New(n int, dir string) (*Cluster, error) {
	client, err := freePorts(n)
	if err != nil {
		return nil, err
	}
	cluster, err := freePorts(n)
	if err != nil {
		return nil, err
	}
	var routes []string
	for _, p := range cluster {
		routes = append(routes, "nats://127.0.0.1:"+strconv.Itoa(p))
	}
	c := &Cluster{servers: make([]*server.Server, n)}
	for i := range n {
		o := &server.Options{
			ServerName: "nats-" + strconv.Itoa(i),
			Host:       "127.0.0.1",
			Port:       client[i],
			JetStream:  true,
			StoreDir:   filepath.Join(dir, "nats-"+strconv.Itoa(i)),
			NoLog:      true,
			NoSigs:     true,
		}
		if n > 1 {
			o.Cluster = server.ClusterOpts{Name: "reso-test", Host: "127.0.0.1", Port: cluster[i]}
			o.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		}
		c.opts = append(c.opts, o)
	}
	for i := range n {
		if err := c.Restart(i); err != nil {
			c.StopAll()
			return nil, err
		}
	}
	return c, nil
}

// freePorts returns n TCP ports free on 127.0.0.1 now.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	var ps []int
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ps = append(ps, l.Addr().(*net.TCPAddr).Port)
	}
	return ps, nil
}

// URLs returns the client URLs of every server, comma-separated, as
// reso's -nats takes them.
func (c *Cluster) URLs() string {
	var us []string
	for _, o := range c.opts {
		us = append(us, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(us, ",")
}

// Stop stops server i.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	s := c.servers[i]
	c.servers[i] = nil
	c.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// StopAll stops every server.
func (c *Cluster) StopAll() {
	for i := range c.servers {
		c.Stop(i)
	}
}

// Restart starts server i again (with its store) when it is stopped.
func (c *Cluster) Restart(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.servers[i] != nil {
		return nil
	}
	o := *c.opts[i]
	s, err := server.NewServer(&o)
	if err != nil {
		return fmt.Errorf("natstest: server %d: %w", i, err)
	}
	go s.Start()
	if !s.ReadyForConnections(time.Minute) {
		s.Shutdown()
		return fmt.Errorf("natstest: server %d not ready for connections", i)
	}
	c.servers[i] = s
	return nil
}
