// Command fleet measures the figures of the fleet (issue 21, docs/fleet.md)
// on this machine: it starts a three-server NATS JetStream cluster in its
// own process, three reso nodes on it and one reso alone on SQLite, and
// prints, measured in one run:
//
//   - persistent and transient PUTs per second with 32 connections spread
//     over the three nodes, beside the single node;
//   - persistent PUTs per second on one connection, one at a time and
//     with -depth writes in flight (pipelined), beside the single node;
//   - fan-out: 1,000 subscribers spread over the three nodes, one publisher
//     at a fixed NOTIFY rate of about 100 bytes: deliveries per second and
//     p50/p99 from NOTIFY to delivery, beside the single node;
//   - node death: the time from kill -9 of a node to the last DELETE of its
//     transient resources seen on another node.
//
// Every load is bounded in count and time, on loopback.
//
//	go run ./bench/fleet -reso PATH [-d 3s] [-conns 32] [-depth 64] [-subs 1000] [-rate 1000] [-transients 1000] [-heartbeat 10s]
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	reso       string
	d          time.Duration
	conns      int
	subs       int
	rate       int
	transients int
	depth      int
	heartbeat  time.Duration
}

func run() error {
	var c config
	flag.StringVar(&c.reso, "reso", "", "the reso binary")
	flag.DurationVar(&c.d, "d", 3*time.Second, "duration of each load (at most 1m)")
	flag.IntVar(&c.conns, "conns", 32, "connections of the write loads (at most 256)")
	flag.IntVar(&c.subs, "subs", 1000, "subscribers of the fan-out (at most 5000)")
	flag.IntVar(&c.rate, "rate", 1000, "NOTIFY per second of the fan-out (at most 5000)")
	flag.IntVar(&c.transients, "transients", 1000, "transient resources of the node killed (at most 10000)")
	flag.IntVar(&c.depth, "depth", 64, "writes in flight on the one connection of the pipelined load (at most 1024)")
	flag.DurationVar(&c.heartbeat, "heartbeat", 10*time.Second, "-fleet-heartbeat of the nodes")
	flag.Parse()
	switch {
	case c.reso == "":
		return errors.New("-reso is required")
	case c.d <= 0 || c.d > time.Minute, c.conns < 1 || c.conns > 256, c.subs < 1 || c.subs > 5000,
		c.rate < 1 || c.rate > 5000, c.transients < 1 || c.transients > 10000, c.depth < 1 || c.depth > 1024:
		return errors.New("a flag is out of its range (see -h)")
	}
	dir, err := os.MkdirTemp("", "reso-fleet-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	nc, err := natstest.New(3, filepath.Join(dir, "nats"))
	if err != nil {
		return err
	}
	defer nc.StopAll()
	var nodes []*node
	defer func() {
		for _, n := range nodes {
			n.stop()
		}
	}()
	for i := range 3 {
		n, err := startNode(c.reso, dir, fmt.Sprintf("node%d", i), "-nats", nc.URLs(), "-fleet", "bench", "-fleet-heartbeat", c.heartbeat.String())
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	alone, err := startNode(c.reso, dir, "alone", "-db", filepath.Join(dir, "alone.db"))
	if err != nil {
		return err
	}
	defer alone.stop()
	fleetAddrs := []string{nodes[0].addr, nodes[1].addr, nodes[2].addr}
	aloneAddrs := []string{alone.addr}
	fmt.Printf("3 reso nodes on a 3-server NATS JetStream cluster (R3), and 1 reso on SQLite; %d CPUs\n", numCPU())

	for _, persistent := range []bool{true, false} {
		kind := "transient"
		if persistent {
			kind = "persistent"
		}
		one, err := writes(aloneAddrs, c.conns, c.d, persistent)
		if err != nil {
			return err
		}
		three, err := writes(fleetAddrs, c.conns, c.d, persistent)
		if err != nil {
			return err
		}
		fmt.Printf("%s PUTs, %d connections: fleet %.0f/s, single node %.0f/s, ratio %.2f\n", kind, c.conns, three, one, three/one)
	}

	for _, depth := range []int{1, c.depth} {
		one, err := pipelined(alone.addr, depth, c.d)
		if err != nil {
			return err
		}
		three, err := pipelined(nodes[0].addr, depth, c.d)
		if err != nil {
			return err
		}
		fmt.Printf("persistent PUTs, 1 connection, %d in flight: fleet %.0f/s, single node %.0f/s, ratio %.2f\n", depth, three, one, three/one)
	}

	one, err := fanout(aloneAddrs, c.subs, c.rate, c.d)
	if err != nil {
		return err
	}
	three, err := fanout(fleetAddrs, c.subs, c.rate, c.d)
	if err != nil {
		return err
	}
	fmt.Printf("fan-out, %d subscribers, %d NOTIFY/s of ~100 bytes: fleet %s; single node %s\n", c.subs, c.rate, three, one)

	took, err := death(nodes, c.transients)
	if err != nil {
		return err
	}
	fmt.Printf("node death: kill -9 to the last DELETE of %d transient resources seen on another node: %v (-fleet-heartbeat %v)\n", c.transients, took.Round(time.Millisecond), c.heartbeat)
	return nil
}

// numCPU returns the CPUs this process may use.
func numCPU() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "processor\t:")
}

// node is a reso process.
type node struct {
	cmd  *exec.Cmd
	addr string
}

var listenRe = regexp.MustCompile(`msg="reso listening" addr=(\S+)`)

// startNode starts reso with args and waits until it listens.
func startNode(bin, dir, name string, args ...string) (*node, error) {
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-login", "", "-channel-max-connections", "20000"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, name))
	out, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listenRe.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case a := <-found:
		return &node{cmd: cmd, addr: a}, nil
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		return nil, fmt.Errorf("%s did not listen", name)
	}
}

// stop ends the node with SIGTERM (kill once it is past its grace).
func (n *node) stop() {
	if n.cmd.ProcessState != nil {
		return
	}
	_ = n.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { n.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		n.cmd.Process.Kill()
		<-done
	}
}

// dial opens a WebSocket connection to the channel door at addr.
func dial(addr string) (*websocket.Conn, error) {
	h := map[string][]string{"Origin": {"http://" + addr}}
	c, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/channel", h)
	return c, err
}

// run counts the rounds of one connection.
var runID atomic.Uint64

// writes runs conns connections spread over addrs, each sending PUTs to
// its own new paths one after the other, for d; it returns successes per
// second.
func writes(addrs []string, conns int, d time.Duration, persistent bool) (float64, error) {
	id := runID.Add(1)
	var ok atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i := range conns {
		c, err := dial(addrs[i%len(addrs)])
		if err != nil {
			return 0, err
		}
		wg.Go(func() {
			defer c.Close()
			for j := 0; time.Now().Before(deadline); j++ {
				msg := fmt.Sprintf(`{"method":"PUT","resource":"/w%d/c%d/r%d","entity":{"j":%d},"persistent":%t,"msg_id":%d}`, id, i, j, j, persistent, j)
				if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				_, data, err := c.ReadMessage()
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if strings.Contains(string(data), `"code":"success"`) {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	return float64(ok.Load()) / time.Since(start).Seconds(), nil
}

// pipelined runs one connection to addr that keeps depth persistent PUTs
// to its own new paths in flight for d; it returns successes per second.
func pipelined(addr string, depth int, d time.Duration) (float64, error) {
	id := runID.Add(1)
	c, err := dial(addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	deadline := start.Add(d)
	sent, ok := 0, 0
	send := func() error {
		sent++
		msg := fmt.Sprintf(`{"method":"PUT","resource":"/p%d/r%d","entity":{"j":%d},"persistent":true,"msg_id":%d}`, id, sent, sent, sent)
		return c.WriteMessage(websocket.TextMessage, []byte(msg))
	}
	for range depth {
		if err := send(); err != nil {
			return 0, err
		}
	}
	for got := 0; got < sent; got++ {
		_, data, err := c.ReadMessage()
		if err != nil {
			return 0, err
		}
		if strings.Contains(string(data), `"code":"success"`) {
			ok++
		}
		if time.Now().Before(deadline) {
			if err := send(); err != nil {
				return 0, err
			}
		}
	}
	return float64(ok) / time.Since(start).Seconds(), nil
}

// fanResult is what one fan-out run measured.
type fanResult struct {
	rate     float64 // deliveries per second
	p50, p99 time.Duration
	missing  int
	slow     int // subscribers the server disconnected as slow consumers (1008)
}

func (r fanResult) String() string {
	return fmt.Sprintf("%.0f deliveries/s, p50 %v, p99 %v, missing %d (subscribers cut as slow consumers: %d)", r.rate, r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond), r.missing, r.slow)
}

// fanout subscribes subs connections spread over addrs to one path and
// NOTIFYs it rate times a second for d from a connection to addrs[0],
// each notification carrying its send time; it measures the time to each
// delivery.
func fanout(addrs []string, subs, rate int, d time.Duration) (fanResult, error) {
	p := fmt.Sprintf("/fan%d", runID.Add(1))
	var mu sync.Mutex
	var lat []time.Duration
	var slow atomic.Int64
	var wg sync.WaitGroup
	var cs []*websocket.Conn
	for i := range subs {
		c, err := dial(addrs[i%len(addrs)])
		if err != nil {
			return fanResult{}, err
		}
		cs = append(cs, c)
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"method":"SUBSCRIBE","resource":"`+p+`","msg_id":1}`)); err != nil {
			return fanResult{}, err
		}
		if _, _, err := c.ReadMessage(); err != nil {
			return fanResult{}, err
		}
	}
	sent := 0
	timeRe := regexp.MustCompile(`"t":(\d+)`)
	for _, c := range cs {
		wg.Go(func() {
			var mine []time.Duration
			for {
				_, data, err := c.ReadMessage()
				if err != nil {
					if websocket.IsCloseError(err, websocket.ClosePolicyViolation) {
						slow.Add(1)
					}
					break
				}
				if m := timeRe.FindSubmatch(data); m != nil {
					ns, _ := strconv.ParseInt(string(m[1]), 10, 64)
					mine = append(mine, time.Since(time.Unix(0, ns)))
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	pub, err := dial(addrs[0])
	if err != nil {
		return fanResult{}, err
	}
	go func() {
		for {
			if _, _, err := pub.ReadMessage(); err != nil {
				return
			}
		}
	}()
	pad := strings.Repeat("x", 60)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	start := time.Now()
	for time.Since(start) < d {
		<-tick.C
		msg := fmt.Sprintf(`{"method":"NOTIFY","resource":"%s","data":{"t":%d,"pad":"%s"}}`, p, time.Now().UnixNano(), pad)
		if err := pub.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			return fanResult{}, err
		}
		sent++
	}
	tick.Stop()
	elapsed := time.Since(start)
	time.Sleep(2 * time.Second) // the last deliveries
	pub.Close()
	for _, c := range cs {
		c.Close()
	}
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	r := fanResult{rate: float64(len(lat)) / elapsed.Seconds(), missing: sent*subs - len(lat), slow: int(slow.Load())}
	if len(lat) > 0 {
		r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return r, nil
}

// death makes node 0 own n transient resources (over 10 connections),
// subscribes a connection on node 1 to their parent, kills node 0 with
// SIGKILL and returns the time until the last DELETE arrived.
func death(nodes []*node, n int) (time.Duration, error) {
	p := fmt.Sprintf("/death%d", runID.Add(1))
	w, err := dial(nodes[1].addr)
	if err != nil {
		return 0, err
	}
	defer w.Close()
	if err := w.WriteMessage(websocket.TextMessage, []byte(`{"method":"SUBSCRIBE","resource":"`+p+`","msg_id":1}`)); err != nil {
		return 0, err
	}
	if _, _, err := w.ReadMessage(); err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for k := range 10 {
		c, err := dial(nodes[0].addr)
		if err != nil {
			return 0, err
		}
		wg.Go(func() {
			for j := k; j < n; j += 10 {
				msg := fmt.Sprintf(`{"method":"PUT","resource":"%s/t%d","msg_id":%d}`, p, j, j)
				if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if _, _, err := c.ReadMessage(); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	// The creations first.
	for seen := 0; seen < n; {
		if _, _, err := w.ReadMessage(); err != nil {
			return 0, err
		}
		seen++
	}
	killed := time.Now()
	if err := nodes[0].cmd.Process.Kill(); err != nil {
		return 0, err
	}
	nodes[0].cmd.Wait()
	_ = w.SetReadDeadline(time.Now().Add(2 * time.Minute))
	for seen := 0; seen < n; {
		_, data, err := w.ReadMessage()
		if err != nil {
			return 0, fmt.Errorf("after %d of %d deletes: %w", seen, n, err)
		}
		if strings.Contains(string(data), `"delete":`) {
			seen++
		}
	}
	return time.Since(killed), nil
}
