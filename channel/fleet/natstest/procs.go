package natstest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reso-project/reso/channel/fleet/natstest/freeport"
)

// Procs is a JetStream cluster of nats-server processes: the same server
// as [Cluster], built from the module this one requires, each instance a
// child process of the test, so that a test can kill one with SIGKILL
// (which it cannot do to a server in its own process). Each server keeps
// its client and route ports and its store across Kill, Stop and
// Restart.
type Procs struct {
	bin string
	dir string
	cfg ProcsConfig

	mu     sync.Mutex
	confs  []string     // each server's configuration file
	ports  []int        // client ports
	cport  []int        // route ports
	mport  []int        // monitoring ports (with cfg.Monitor)
	procs  []*proc      // nil while stopped
	routes [][]*Proxy   // routes[i][j]: server i's way to server j (with cfg.ProxiedRoutes)
	cut    []routeState // how each server is cut off (with cfg.ProxiedRoutes)
}

// ProcsConfig holds the less common ways of starting a [Procs] cluster;
// its zero value is what [StartProcs] starts (sync_interval: always).
type ProcsConfig struct {
	// Sync is when each server writes its store to disk: SyncAlways (the
	// zero value: sync_interval: always in its jetstream block, as a
	// cluster that must survive the loss of power runs) or SyncDefault.
	Sync Sync
	// Monitor has each server serve its monitoring endpoints (/routez,
	// /jsz, ...) on a loopback port: see [Procs.MonitorURL].
	Monitor bool
	// ProxiedRoutes passes every route between two servers through a
	// [Proxy] of the test, one per ordered pair, so that [Procs.Cut] and
	// [Procs.Stall] can cut a running server off from the others. Each
	// server lists the proxies to the others as its routes and advertises
	// an address that refuses every connection (127.0.0.1:1), so that the
	// routes that servers open to the addresses they are told of (gossip)
	// fail instead of leading around the proxies: the explicit routes
	// alone make the full mesh.
	ProxiedRoutes bool
}

// proc is one running server.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once it exited
	log  string        // the file its output goes to
}

// procStart bounds the start of one server.
const procStart = time.Minute

// StartProcs starts an n-server JetStream cluster of processes on
// 127.0.0.1 and kills it when the test ends. The nats-server binary is
// built once per module version (the first call may take a minute) and
// kept in the user's cache directory.
func StartProcs(tb testing.TB, n int) *Procs {
	tb.Helper()
	return StartProcsWith(tb, n, ProcsConfig{})
}

// StartProcsWith is [StartProcs] with the options of cfg.
func StartProcsWith(tb testing.TB, n int, cfg ProcsConfig) *Procs {
	tb.Helper()
	p, err := NewProcs(n, tb.TempDir(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.killAll)
	return p
}

// NewProcs starts an n-server JetStream cluster of processes as
// [StartProcsWith] does, with its files (configurations, stores, logs)
// under dir, for a program that is no test (the load programs of bench/);
// the caller ends it with [Procs.StopAll] (its servers also get SIGKILL
// when the caller dies).
func NewProcs(n int, dir string, cfg ProcsConfig) (*Procs, error) {
	bin, err := serverBinary()
	if err != nil {
		return nil, err
	}
	p := &Procs{bin: bin, dir: dir, cfg: cfg}
	// The route ports are chosen first, so that each server can be told
	// every other's from its first start (a JetStream cluster starts only
	// with routes); the client ports are those the servers take at their
	// first start.
	cports, err := freeport.Take(n)
	if err != nil {
		return nil, err
	}
	for i := range n {
		p.confs = append(p.confs, filepath.Join(p.dir, "nats-"+strconv.Itoa(i)+".conf"))
		p.ports = append(p.ports, -1)
		p.cport = append(p.cport, cports[i])
		p.mport = append(p.mport, -1)
		p.procs = append(p.procs, nil)
	}
	if cfg.ProxiedRoutes {
		if err := p.startRouteProxies(n); err != nil {
			p.killAll()
			return nil, err
		}
	}
	for i := range n {
		if err := p.writeConf(i, n); err != nil {
			p.killAll()
			return nil, err
		}
	}
	for i := range n {
		if err := p.Restart(i); err != nil {
			p.killAll()
			return nil, err
		}
		// From now on the server keeps its client port.
		if err := p.writeConf(i, n); err != nil {
			p.killAll()
			return nil, err
		}
	}
	return p, nil
}

// writeConf writes server i's configuration with the ports known.
func (p *Procs) writeConf(i, n int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := strconv.Quote
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: %s\nhost: 127.0.0.1\nport: %d\n", q(p.Name(i)), p.ports[i])
	fmt.Fprintf(&b, "ports_file_dir: %s\n", q(p.dir))
	fmt.Fprintf(&b, "write_deadline: %s\nwrite_timeout: %s\n", q(WriteDeadline.String()), WriteTimeout)
	if p.cfg.Monitor {
		fmt.Fprintf(&b, "http_port: %d\n", p.mport[i])
	}
	syncLine := ""
	if p.cfg.Sync == SyncAlways {
		syncLine = "  sync_interval: always\n"
	}
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %s\n%s}\n", q(filepath.Join(p.dir, "nats-"+strconv.Itoa(i))), syncLine)
	if n > 1 {
		var routes []string
		for j, cp := range p.cport {
			switch {
			case j == i || cp <= 0:
			case p.routes != nil:
				routes = append(routes, q("nats://"+p.routes[i][j].Addr()))
			default:
				routes = append(routes, q("nats://127.0.0.1:"+strconv.Itoa(cp)))
			}
		}
		advertise := ""
		if p.routes != nil {
			advertise = "  advertise: \"127.0.0.1:1\"\n"
		}
		// no_advertise: clients know the servers they were given and no
		// others, so that a proxy in front of them stays in the way.
		fmt.Fprintf(&b, "cluster {\n  name: reso-test\n  host: 127.0.0.1\n  port: %d\n  no_advertise: true\n%s  routes: [%s]\n}\n",
			p.cport[i], advertise, strings.Join(routes, ", "))
	}
	return os.WriteFile(p.confs[i], []byte(b.String()), 0o600)
}

// URLs returns the client URLs of every server, comma-separated, as
// reso's -nats takes them.
func (p *Procs) URLs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var us []string
	for _, port := range p.ports {
		us = append(us, fmt.Sprintf("nats://127.0.0.1:%d", port))
	}
	return strings.Join(us, ",")
}

// Addr returns the client address (host:port) of server i.
func (p *Procs) Addr(i int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return "127.0.0.1:" + strconv.Itoa(p.ports[i])
}

// Restart starts server i again (with its store) when it is not running,
// and waits until it accepts connections.
func (p *Procs) Restart(i int) error {
	p.mu.Lock()
	if p.procs[i] != nil {
		p.mu.Unlock()
		return nil
	}
	conf := p.confs[i]
	p.mu.Unlock()
	logName := filepath.Join(p.dir, fmt.Sprintf("nats-%d.%d.log", i, time.Now().UnixNano()))
	out, err := os.Create(logName)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, "-c", conf)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("natstest: server %d: %w", i, err)
	}
	pr := &proc{cmd: cmd, done: make(chan struct{}), log: logName}
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(pr.done)
	}()
	ports, err := p.awaitPorts(pr)
	if err != nil {
		_ = cmd.Process.Kill()
		<-pr.done
		return fmt.Errorf("natstest: server %d: %w (its log: %s)", i, err, tail(logName))
	}
	p.mu.Lock()
	p.procs[i] = pr
	p.ports[i] = ports.client
	if ports.cluster > 0 {
		p.cport[i] = ports.cluster
	}
	if ports.monitor > 0 {
		p.mport[i] = ports.monitor
	}
	p.mu.Unlock()
	return nil
}

// listening are the ports a server listens on.
type listening struct{ client, cluster, monitor int }

// awaitPorts waits for the ports file of pr (written once it listens)
// and for its client port to accept a connection.
func (p *Procs) awaitPorts(pr *proc) (listening, error) {
	file := filepath.Join(p.dir, fmt.Sprintf("%s_%d.ports", filepath.Base(p.bin), pr.cmd.Process.Pid))
	deadline := time.Now().Add(procStart)
	for {
		select {
		case <-pr.done:
			return listening{}, errors.New("exited at its start")
		default:
		}
		if data, err := os.ReadFile(file); err == nil {
			var ports struct{ Nats, Cluster, Monitoring []string }
			if json.Unmarshal(data, &ports) == nil && len(ports.Nats) > 0 && (!p.cfg.Monitor || len(ports.Monitoring) > 0) {
				l := listening{client: portOf(ports.Nats[0])}
				if len(ports.Cluster) > 0 {
					l.cluster = portOf(ports.Cluster[0])
				}
				if len(ports.Monitoring) > 0 {
					l.monitor = portOf(ports.Monitoring[0])
				}
				if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(l.client), time.Second); err == nil {
					c.Close()
					return l, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return listening{}, fmt.Errorf("no ports file %s within %v", file, procStart)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// portOf returns the port of a URL of the ports file, or 0.
func portOf(u string) int {
	pu, err := url.Parse(u)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(pu.Port())
	return n
}

// tail returns the end of a log file.
func tail(name string) string {
	b, err := os.ReadFile(name)
	if err != nil {
		return err.Error()
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}

// Log returns the end of the output of server i's last start.
func (p *Procs) Log(i int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.procs[i] == nil {
		return "(stopped)"
	}
	return tail(p.procs[i].log)
}
