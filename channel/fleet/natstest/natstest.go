// Package natstest starts a real NATS JetStream cluster for tests: three
// nats-server instances (the github.com/nats-io/nats-server/v2 module) in
// the test's process ([Start]), or as child processes that a test can
// kill with SIGKILL ([StartProcs]), pause, or cut off from the others
// through proxies of the test's routes ([StartProcsWith], [Proxy]),
// routed to each other on loopback ports, each with its own store under
// the test's temporary directory. No mock: the fleet's tests run against
// the server they run against in production, configured as docs/fleet.md
// §14 says: with sync_interval: always, so that a server writes a message
// to disk (fsync) before it acknowledges it, and with the write deadline
// and policy of a client a loaded node reads slowly from (WriteDeadline,
// WriteTimeout).
package natstest

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// The write deadline of the servers' client connections, and what a server
// does when a client misses it, as docs/fleet.md §14 configures them
// (write_deadline, write_timeout): a client (a reso node) that takes no
// byte for WriteDeadline is cut off, one that takes some is kept. The
// default, 10 s and close, cut off a node whose other work left it too
// little of the processor to read 1.5 MB in 10 s (issue 36).
const (
	WriteDeadline = 30 * time.Second
	WriteTimeout  = "retry"
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
// keep their stores under dir, with sync_interval: always (NewSync with
// SyncAlways). The caller stops it with StopAll.
//
// Each server takes the ports the system gives it as it listens (a port
// found free beforehand may be taken by another process before the
// server listens on it, and the server then never gets ready), and
// routes to the servers started before it; Restart uses the same ports.
func New(n int, dir string) (*Cluster, error) { return NewSync(n, dir, SyncAlways) }

// Sync is when a server's JetStream store writes to disk (fsync): the
// configuration's sync_interval.
type Sync int

const (
	// SyncAlways is sync_interval: always: every message stored is
	// written to disk before it is acknowledged (server.Options'
	// SyncAlways). What docs/fleet.md §14 configures in production.
	SyncAlways Sync = iota
	// SyncDefault is nats-server's default: a message is acknowledged
	// once in memory (of a majority of the stream's replicas) and written
	// to disk every 2 minutes. For measuring what SyncAlways costs.
	SyncDefault
)

// String names the setting: "always", or "default (2m)".
func (s Sync) String() string {
	if s == SyncDefault {
		return "default (2m)"
	}
	return "always"
}

// NewSync is New with the servers' sync_interval chosen.
func NewSync(n int, dir string, sync Sync) (*Cluster, error) {
	c := &Cluster{servers: make([]*server.Server, n)}
	for i := range n {
		o := &server.Options{
			ServerName: "nats-" + strconv.Itoa(i),
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			JetStream:  true,
			StoreDir:   filepath.Join(dir, "nats-"+strconv.Itoa(i)),
			SyncAlways: sync == SyncAlways,
			// What WriteDeadline and WriteTimeout say.
			WriteDeadline: WriteDeadline,
			WriteTimeout:  server.WriteTimeoutPolicyRetry,
			NoLog:         true,
			NoSigs:        true,
		}
		if n > 1 {
			// NoAdvertise: clients know the servers they were given and no
			// others, so that a proxy in front of them stays in the way.
			o.Cluster = server.ClusterOpts{Name: "reso-test", Host: "127.0.0.1", Port: server.RANDOM_PORT, NoAdvertise: true}
			o.Routes = c.routes()
		}
		c.opts = append(c.opts, o)
		if err := c.Restart(i); err != nil {
			c.StopAll()
			return nil, err
		}
		c.mu.Lock()
		s := c.servers[i]
		o.Port = s.Addr().(*net.TCPAddr).Port
		if n > 1 {
			o.Cluster.Port = s.ClusterAddr().Port
		}
		c.mu.Unlock()
	}
	if n > 1 {
		routes := c.routes()
		for _, o := range c.opts {
			o.Routes = routes
		}
	}
	return c, nil
}

// routes returns the route URLs of the servers started so far.
func (c *Cluster) routes() []*url.URL {
	var us []string
	for _, o := range c.opts {
		if o.Cluster.Port > 0 {
			us = append(us, "nats://127.0.0.1:"+strconv.Itoa(o.Cluster.Port))
		}
	}
	return server.RoutesFromStr(strings.Join(us, ","))
}

// errorLog keeps the last errors and warnings a server logged.
type errorLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *errorLog) add(format string, v []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, v...))
	if len(l.lines) > 10 {
		l.lines = l.lines[1:]
	}
}

// String returns the lines kept, or "none".
func (l *errorLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return "none"
	}
	return strings.Join(l.lines, "; ")
}

func (l *errorLog) Noticef(string, ...any)         {}
func (l *errorLog) Debugf(string, ...any)          {}
func (l *errorLog) Tracef(string, ...any)          {}
func (l *errorLog) Warnf(format string, v ...any)  { l.add(format, v) }
func (l *errorLog) Errorf(format string, v ...any) { l.add(format, v) }
func (l *errorLog) Fatalf(format string, v ...any) { l.add(format, v) }

// URLs returns the client URLs of every server, comma-separated, as
// reso's -nats takes them.
func (c *Cluster) URLs() string {
	var us []string
	for _, o := range c.opts {
		us = append(us, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(us, ",")
}

// Addr returns the client address (host:port) of server i.
func (c *Cluster) Addr(i int) string {
	return fmt.Sprintf("127.0.0.1:%d", c.opts[i].Port)
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
	s, err := StartServer(&o)
	if err != nil {
		return fmt.Errorf("natstest: server %d: %w", i, err)
	}
	c.servers[i] = s
	return nil
}

// StartServer starts a server with opts in this process and returns it once it
// accepts connections. A server that does not within a minute is shut
// down, and the error gives the last errors and warnings it logged (a
// port taken, a store it cannot open).
func StartServer(opts *server.Options) (*server.Server, error) {
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, err
	}
	var log errorLog
	s.SetLoggerV2(&log, false, false, false)
	go s.Start()
	if !s.ReadyForConnections(time.Minute) {
		s.Shutdown()
		return nil, fmt.Errorf("not ready for connections a minute after its start (it logged: %s)", log.String())
	}
	return s, nil
}
