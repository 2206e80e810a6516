package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// clientEnv, in the environment of a process of this program, makes it a
// load client (runClient) instead of the bench.
const clientEnv = "RESO_FLEETSCALE_CLIENT"

// clientConfig is what the bench tells a load client, on the first line
// of its stdin.
type clientConfig struct {
	Targets   []target  `json:"targets"`   // the nodes to connect to, and how many connections to each
	Sources   []string  `json:"sources"`   // loopback addresses the connections come from, by turns
	Room      string    `json:"room"`      // the shared resource every connection subscribes to
	Presence  string    `json:"presence"`  // prefix of the transient resources the connections own
	Rate      float64   `json:"rate"`      // connections per second once the ramp is over
	Ramp      float64   `json:"ramp"`      // seconds from a tenth of Rate to Rate
	InFlight  int       `json:"inflight"`  // connections being set up at once
	Notifies  int       `json:"notifies"`  // notifications numbered 0..Notifies-1 to count
	Deadline  time.Time `json:"deadline"`  // the end of the setup
	Retries   int       `json:"retries"`   // further attempts of a connection whose setup failed
	ReadLimit int64     `json:"readlimit"` // largest message read
}

// target is a node and the connections to open to it.
type target struct {
	Addr string `json:"addr"`
	N    int    `json:"n"`
}

// clientReport is a line of a load client's stdout.
type clientReport struct {
	Kind       string   `json:"kind"`                 // "progress", "ready", "collect", "closed"
	Subscribed int64    `json:"subscribed"`           // connections subscribed and owning their presence entry
	Failures   int64    `json:"failures"`             // setups that failed (each retried, up to Retries)
	Unset      int64    `json:"unset,omitempty"`      // connections given up after every retry
	Dropped    int64    `json:"dropped"`              // connections that ended before the client closed them
	Errors     []string `json:"errors,omitempty"`     // the first failures' errors
	G          int      `json:"g"`                    // the notification of a collect
	Received   int64    `json:"received"`             // deliveries of notification G
	Last       int64    `json:"last"`                 // unix ns of its last delivery, 0 if none
	Expected   int64    `json:"expected"`             // connections subscribed when expect was told
	Duplicates int64    `json:"duplicates,omitempty"` // deliveries of a notification already counted on that connection
	Drops      []string `json:"drops,omitempty"`      // why the first dropped connections ended
}

// loadClient is the state of a load client's process.
type loadClient struct {
	cfg        clientConfig
	out        *json.Encoder
	outMu      sync.Mutex
	subscribed atomic.Int64
	failures   atomic.Int64
	dropped    atomic.Int64
	closing    atomic.Bool
	expected   []atomic.Int64 // per notification: connections subscribed at its expect
	received   []atomic.Int64 // per notification
	last       []atomic.Int64 // per notification: unix ns of the last delivery
	dups       atomic.Int64
	errMu      sync.Mutex
	errs       []string
	drops      []string // why the first dropped connections ended
	connMu     sync.Mutex
	conns      []*websocket.Conn
	readers    sync.WaitGroup
}

// runClient is the main of a load client: it reads its configuration,
// sets its connections up, reports, then answers the bench's commands on
// stdin until stdin ends, and closes its connections. The commands:
// "expect G" (before notification G is sent: the connections subscribed
// now are those that must have it) and "collect G UNIXNS" (report its
// deliveries once every one of those has it, or at UNIXNS).
func runClient() error {
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("client: configuration: %w", err)
	}
	c := &loadClient{out: json.NewEncoder(os.Stdout)}
	if err := json.Unmarshal(line, &c.cfg); err != nil {
		return fmt.Errorf("client: configuration: %w", err)
	}
	c.received = make([]atomic.Int64, c.cfg.Notifies)
	c.expected = make([]atomic.Int64, c.cfg.Notifies)
	c.last = make([]atomic.Int64, c.cfg.Notifies)
	defer c.closeAll()

	c.setUp()
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		f := strings.Fields(line)
		if len(f) < 2 || (f[0] == "expect") != (len(f) == 2) || (f[0] != "expect" && f[0] != "collect") {
			return fmt.Errorf("client: unknown command %q", line)
		}
		g, err := strconv.Atoi(f[1])
		if err != nil || g < 0 || g >= c.cfg.Notifies {
			return fmt.Errorf("client: bad command %q", line)
		}
		if f[0] == "expect" {
			c.expected[g].Store(c.subscribed.Load())
			continue
		}
		until, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return fmt.Errorf("client: bad command %q", line)
		}
		c.collect(g, time.Unix(0, until))
	}
}

// report writes r on stdout, one JSON line.
func (c *loadClient) report(r clientReport) {
	r.Subscribed, r.Failures, r.Dropped = c.subscribed.Load(), c.failures.Load(), c.dropped.Load()
	c.outMu.Lock()
	defer c.outMu.Unlock()
	_ = c.out.Encode(r)
}

// setUp opens every connection, at the configured rate and at most
// InFlight at once, each subscribed to the room and owning its presence
// entry, reporting progress every second, then reports ready.
func (c *loadClient) setUp() {
	var jobs []string // each connection's node
	for _, t := range c.cfg.Targets {
		for range t.N {
			jobs = append(jobs, t.Addr)
		}
	}
	// Interleave the nodes, so that each gets its share all along.
	order := make([]string, 0, len(jobs))
	idx := make([]int, len(c.cfg.Targets))
	for len(order) < len(jobs) {
		for i, t := range c.cfg.Targets {
			if idx[i] < t.N {
				order = append(order, t.Addr)
				idx[i]++
			}
		}
	}
	c.conns = make([]*websocket.Conn, len(order))

	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				c.report(clientReport{Kind: "progress"})
			}
		}
	}()

	var unset atomic.Int64
	slots := make(chan struct{}, max(c.cfg.InFlight, 1))
	var wg sync.WaitGroup
	start := time.Now()
	for i, addr := range order {
		// The ramp: the rate grows from a tenth of Rate to Rate over Ramp
		// seconds; connection i starts when the integral reaches i.
		time.Sleep(time.Until(start.Add(c.startAt(i))))
		if time.Now().After(c.cfg.Deadline) {
			unset.Add(int64(len(order) - i))
			c.fail(fmt.Errorf("the setup's deadline passed with %d connections left", len(order)-i))
			break
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			for attempt := 0; ; attempt++ {
				err := c.open(i, addr)
				if err == nil {
					return
				}
				c.failures.Add(1)
				c.fail(err)
				if attempt >= c.cfg.Retries || time.Now().After(c.cfg.Deadline) {
					unset.Add(1)
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	close(stopProgress)
	<-progressDone
	c.errMu.Lock()
	errs := c.errs
	c.errMu.Unlock()
	c.report(clientReport{Kind: "ready", Unset: unset.Load(), Errors: errs})
}

// startAt is when connection i starts, from the setup's start: the rate
// r(t) grows linearly from Rate/10 to Rate over Ramp, then stays.
func (c *loadClient) startAt(i int) time.Duration {
	r, ramp := c.cfg.Rate, c.cfg.Ramp
	if r <= 0 {
		return 0
	}
	// Connections started by the ramp's end: the area under r(t).
	inRamp := ramp * (r/10 + r) / 2
	n := float64(i)
	if n >= inRamp || ramp <= 0 {
		return time.Duration((ramp + (n-inRamp)/r) * float64(time.Second))
	}
	// Solve r/10*t + (0.9r/ramp)*t²/2 = n for t.
	a := 0.45 * r / ramp
	b := r / 10
	t := (-b + math.Sqrt(b*b+4*a*n)) / (2 * a)
	return time.Duration(t * float64(time.Second))
}

// fail keeps the first errors of the setup.
func (c *loadClient) fail(err error) {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	if len(c.errs) < 5 {
		c.errs = append(c.errs, err.Error())
	}
}

// open sets connection i up: a WebSocket to addr from one of the source
// addresses, SUBSCRIBE of the room, PUT of its presence entry (transient:
// it owns it); then it reads until the connection ends.
func (c *loadClient) open(i int, addr string) error {
	src := c.cfg.Sources[i%len(c.cfg.Sources)]
	d := websocket.Dialer{
		NetDial: (&net.Dialer{
			Timeout:   10 * time.Second,
			LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)},
		}).Dial,
		HandshakeTimeout: 10 * time.Second,
		ReadBufferSize:   1024,
		WriteBufferSize:  1024,
		WriteBufferPool:  &writePool,
	}
	conn, _, err := d.Dial("ws://"+addr+"/channel", http.Header{"Origin": {"http://" + addr}})
	if err != nil {
		return fmt.Errorf("dial %s from %s: %w", addr, src, err)
	}
	conn.SetReadLimit(c.cfg.ReadLimit)
	deadline := time.Now().Add(30 * time.Second)
	if err := call(conn, `{"method":"SUBSCRIBE","resource":"`+c.cfg.Room+`","msg_id":1}`, 1, deadline); err != nil {
		conn.Close()
		return err
	}
	if err := call(conn, `{"method":"PUT","resource":"`+c.cfg.Presence+strconv.Itoa(i)+`","entity":{"i":`+strconv.Itoa(i)+`},"msg_id":2}`, 2, deadline); err != nil {
		conn.Close()
		return err
	}
	c.connMu.Lock()
	closing := c.closing.Load()
	if !closing {
		c.conns[i] = conn
		c.readers.Add(1)
	}
	c.connMu.Unlock()
	if closing {
		conn.Close()
		return nil
	}
	c.subscribed.Add(1)
	// gorilla's own answer to a ping allows the pong a second: a load
	// client process starved on these two cores missed it once in a run
	// of 100,000 ("write ... i/o timeout") and counted its own drop.
	conn.SetPingHandler(func(data string) error {
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(pongWait))
		if errors.Is(err, websocket.ErrCloseSent) {
			return nil
		}
		return err
	})
	go c.read(conn)
	return nil
}

// pongWait bounds the write of a pong.
const pongWait = 30 * time.Second

// writePool is the write buffers shared by every connection.
var writePool sync.Pool

// reply is the part of a reply that the setup reads.
type reply struct {
	MsgID  *int64 `json:"msg_id"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// call sends msg on conn and reads until the reply with msg_id id
// (before the setup is done, nothing else is sent to the connection but
// notifications of the room, which it skips).
func call(conn *websocket.Conn, msg string, id int64, deadline time.Time) error {
	conn.SetWriteDeadline(deadline)
	if err := conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		return err
	}
	conn.SetReadDeadline(deadline)
	defer conn.SetReadDeadline(time.Time{})
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			return err
		}
		var r reply
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%q: %w", data, err)
		}
		if r.MsgID != nil && *r.MsgID == id {
			if r.Code != "success" {
				return fmt.Errorf("%s: %s (%s)", msg, r.Code, r.Reason)
			}
			return nil
		}
	}
}

// gKey is how the number of a notification of the bench starts in it.
var gKey = []byte(`"data":{"g":`)

// read counts the notifications of conn until it ends, and counts it
// dropped when the client did not close it.
func (c *loadClient) read(conn *websocket.Conn) {
	defer c.readers.Done()
	var seen []bool // the notifications this connection has had
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			if !c.closing.Load() {
				c.dropped.Add(1)
				c.subscribed.Add(-1)
				c.errMu.Lock()
				if len(c.drops) < 3 {
					c.drops = append(c.drops, time.Now().Format("15:04:05.000")+" "+err.Error())
				}
				c.errMu.Unlock()
			}
			return
		}
		now := time.Now().UnixNano()
		k := bytes.Index(data, gKey)
		if k < 0 {
			continue
		}
		rest := data[k+len(gKey):]
		e := bytes.IndexByte(rest, '}')
		if e < 0 {
			continue
		}
		g, err := strconv.Atoi(string(rest[:e]))
		if err != nil || g < 0 || g >= len(c.received) {
			continue
		}
		if seen == nil {
			seen = make([]bool, len(c.received))
		}
		if seen[g] {
			c.dups.Add(1)
			continue
		}
		seen[g] = true
		c.received[g].Add(1)
		for {
			l := c.last[g].Load()
			if now <= l || c.last[g].CompareAndSwap(l, now) {
				break
			}
		}
	}
}

// collect reports notification g's deliveries once every subscribed
// connection has had it, or at until.
func (c *loadClient) collect(g int, until time.Time) {
	expected := c.expected[g].Load()
	for c.received[g].Load() < expected && time.Now().Before(until) {
		time.Sleep(5 * time.Millisecond)
	}
	c.report(clientReport{Kind: "collect", G: g, Received: c.received[g].Load(), Last: c.last[g].Load(),
		Expected: expected, Duplicates: c.dups.Load()})
}

// closeAll closes every connection with a normal close and waits for
// their readers.
func (c *loadClient) closeAll() {
	c.connMu.Lock()
	c.closing.Store(true)
	conns := c.conns
	c.connMu.Unlock()
	for _, conn := range conns {
		if conn != nil {
			conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			conn.Close()
		}
	}
	c.readers.Wait()
	c.errMu.Lock()
	drops := c.drops
	c.errMu.Unlock()
	c.report(clientReport{Kind: "closed", Drops: drops})
}
