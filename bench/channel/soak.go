package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// soakConfig is the churn of issue 24, run over time: clients that each
// loop on open a WebSocket, SUBSCRIBE a room, PUT a transient member, PUT
// a persistent record out of a fixed set of keys, NOTIFY the room, GET the
// room, then close (every other loop with a close frame, else by dropping
// TCP); every tenth loop also opens a GET kept open of the room and drops
// it after its status line (or, with watchEvent, its first event). Over
// several servers (a fleet's nodes), the clients are spread over them and
// each opens its GETs kept open on the server after its own.
type soakConfig struct {
	clients  int
	rooms    int
	keys     int
	prefix   string // rooms are PREFIX/room<k>, records PREFIX/rec/<key>
	warmup   time.Duration
	dur      time.Duration // measured, after the warm-up
	every    time.Duration // between two lines of figures
	cooldown time.Duration // longest wait after the churn for the servers to be back
	// watchEvent drops a GET kept open after its first event rather than
	// after its status line.
	watchEvent bool
	readBuf    int
	// slack is how many goroutines and descriptors above their values
	// before the churn still count as back after it.
	slack int64
}

// soakSample is one reading of the figures, of every server.
type soakSample struct {
	at         time.Duration // since the start of the churn
	loops      int64         // since the previous sample
	rate       float64       // loops per second since the previous sample
	errs       int64         // in all, so far
	nodes      []nodeSample  // one per server, in the order of -url
	start      bool          // before the churn
	measured   bool          // after the warm-up
	afterChurn bool
}

// nodeSample is what one reading found of one server.
type nodeSample struct {
	rss, heap int64 // KiB; -1 when not read
	gor, fds  int64 // -1 when not read
}

// soakResult is every sample and the totals of the measured time.
type soakResult struct {
	samples  []soakSample
	loops    int64 // measured
	measured time.Duration
	errs     int64
	lastErr  string
	slack    int64 // goroutines and descriptors above the start still counted as back
}

// soakClient is one looping client.
type soakClient struct {
	d     *dialer
	cfg   soakConfig
	http  string // http://HOST:PORT of the server of its GETs kept open
	id    int
	loops *atomic.Int64
	errs  *atomic.Int64
	last  *atomic.Value // string: the last error
}

// runSoak runs the churn for cfg.warmup + cfg.dur, printing a line of
// figures every cfg.every to w, then one more once every server's
// goroutines and descriptors are back within cfg.slack of their values
// before the churn, or after cfg.cooldown. Client i opens its WebSockets
// with ds[i%len(ds)] and its GETs kept open on the next server; ps are the
// servers' probes, in the same order.
func runSoak(ds []*dialer, ps []*probe, cfg soakConfig, w io.Writer) (soakResult, error) {
	hosts := make([]string, len(ds))
	for i, d := range ds {
		u, err := url.Parse(d.url)
		if err != nil {
			return soakResult{}, err
		}
		hosts[i] = "http://" + u.Host
	}
	res := soakResult{slack: cfg.slack}
	var loops, errs atomic.Int64
	var lastErr atomic.Value
	lastErr.Store("")
	fmt.Fprintf(w, "soak: %d clients over %d server(s), %d rooms, %d persistent keys; %.0fs warm-up, then %.0fs measured; a line every %.0fs\n",
		cfg.clients, len(ds), cfg.rooms, cfg.keys, cfg.warmup.Seconds(), cfg.dur.Seconds(), cfg.every.Seconds())
	if len(ds) > 1 {
		fmt.Fprintf(w, "%8s %-8s %9s %7s %-5s %9s %9s %10s %6s\n", "t", "phase", "loops/s", "errors", "node", "RSS MiB", "heap MiB", "goroutines", "fds")
	} else {
		fmt.Fprintf(w, "%8s %-8s %9s %7s %9s %9s %10s %6s\n", "t", "phase", "loops/s", "errors", "RSS MiB", "heap MiB", "goroutines", "fds")
	}
	first := sample(ps, 0, 0, 0, 0)
	first.start = true
	res.samples = append(res.samples, first)
	first.print(w)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range cfg.clients {
		c := &soakClient{d: ds[i%len(ds)], cfg: cfg, http: hosts[(i+1)%len(ds)], id: i, loops: &loops, errs: &errs, last: &lastErr}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(stop)
		}()
	}
	start := time.Now()
	end := start.Add(cfg.warmup + cfg.dur)
	var prevLoops int64
	prev := start
	var measuredFrom int64 = -1
	for {
		next := prev.Add(cfg.every)
		if next.After(end) {
			next = end
		}
		time.Sleep(time.Until(next))
		now := time.Now()
		n := loops.Load()
		if measuredFrom < 0 && now.Sub(start) >= cfg.warmup {
			measuredFrom = n
		}
		s := sample(ps, now.Sub(start), n-prevLoops, now.Sub(prev), errs.Load())
		s.measured = now.Sub(start) > cfg.warmup
		res.samples = append(res.samples, s)
		s.print(w)
		prevLoops, prev = n, now
		if !now.Before(end) {
			break
		}
	}
	close(stop)
	wg.Wait()
	res.loops = loops.Load() - measuredFrom
	res.measured = cfg.dur
	res.errs = errs.Load()
	res.lastErr = lastErr.Load().(string)
	// Wait for the servers to let go of the last connections: poll until
	// every one is back, at most cfg.cooldown.
	churnEnd := time.Now()
	var s soakSample
	for {
		s = sample(ps, time.Since(start), 0, 0, errs.Load())
		if res.back(first, s) || time.Since(churnEnd) >= cfg.cooldown {
			break
		}
		time.Sleep(time.Second)
	}
	s.afterChurn = true
	res.samples = append(res.samples, s)
	s.print(w)
	return res, nil
}

// back tells whether every server's goroutines and descriptors in s are
// at most r.slack above those of the sample before the churn.
func (r soakResult) back(start, s soakSample) bool {
	for i, n := range s.nodes {
		b := start.nodes[i]
		if n.gor < 0 || n.fds < 0 || n.gor > b.gor+r.slack || n.fds > b.fds+r.slack {
			return false
		}
	}
	return true
}

// sample reads the servers' figures.
func sample(ps []*probe, at time.Duration, loops int64, over time.Duration, errs int64) soakSample {
	s := soakSample{at: at, loops: loops, errs: errs}
	if over > 0 {
		s.rate = float64(loops) / over.Seconds()
	}
	for _, p := range ps {
		n := nodeSample{rss: -1, heap: -1, gor: -1, fds: -1}
		if v, err := p.rssKB(); err == nil {
			n.rss = v
		}
		if v, err := p.heapInuseKB(false); err == nil {
			n.heap = v
		}
		if v, err := p.goroutines(); err == nil {
			n.gor = v
		}
		if v, err := p.fds(); err == nil {
			n.fds = v
		}
		s.nodes = append(s.nodes, n)
	}
	return s
}

// print writes the sample: one line, or one line per server when there
// are several.
func (s soakSample) print(w io.Writer) {
	phase := "warm-up"
	switch {
	case s.start:
		phase = "start"
	case s.afterChurn:
		phase = "after"
	case s.measured:
		phase = "measured"
	}
	rate := fmt.Sprintf("%.0f", s.rate)
	if s.afterChurn || s.start {
		rate = "-"
	}
	for i, n := range s.nodes {
		if len(s.nodes) > 1 {
			fmt.Fprintf(w, "%7.0fs %-8s %9s %7d %-5s %9s %9s %10s %6s\n", s.at.Seconds(), phase, rate, s.errs, "n"+strconv.Itoa(i), mib(n.rss), mib(n.heap), num(n.gor), num(n.fds))
			continue
		}
		fmt.Fprintf(w, "%7.0fs %-8s %9s %7d %9s %9s %10s %6s\n", s.at.Seconds(), phase, rate, s.errs, mib(n.rss), mib(n.heap), num(n.gor), num(n.fds))
	}
}

// mib formats KiB as MiB, "-" when not read.
func mib(kb int64) string {
	if kb < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(kb)/1024)
}

// num formats a count, "-" when not read.
func num(n int64) string {
	if n < 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// print writes the summary: the measured rate; per server, the memory at
// the start, at the end of the warm-up, in the middle and at the end of
// the measured time; and its goroutines and descriptors before the churn
// and after it.
func (r soakResult) print(w io.Writer) {
	fmt.Fprintf(w, "measured: %d loops in %.0fs = %.0f loops/s; %d errors", r.loops, r.measured.Seconds(), float64(r.loops)/r.measured.Seconds(), r.errs)
	if r.lastErr != "" {
		fmt.Fprintf(w, " (last: %s)", r.lastErr)
	}
	fmt.Fprintln(w)
	var m []soakSample
	var start, after soakSample
	for _, s := range r.samples {
		switch {
		case s.start:
			start = s
		case s.afterChurn:
			after = s
		case s.measured:
			m = append(m, s)
		}
	}
	if len(m) == 0 || len(start.nodes) == 0 || len(after.nodes) == 0 {
		return
	}
	first, mid, last := m[0], m[len(m)/2], m[len(m)-1]
	for i := range start.nodes {
		var peak int64
		for _, s := range r.samples {
			if !s.afterChurn {
				peak = max(peak, s.nodes[i].rss)
			}
		}
		label := ""
		if len(start.nodes) > 1 {
			label = "n" + strconv.Itoa(i) + " "
		}
		f, md, l := first.nodes[i], mid.nodes[i], last.nodes[i]
		fmt.Fprintf(w, "%sRSS (host + plugin processes): %.1f MiB start, %.1f MiB first measured, %.1f MiB mid (%.0fs), %.1f MiB end, %.1f MiB peak; mid to end %+.1f MiB\n",
			label, float64(start.nodes[i].rss)/1024, float64(f.rss)/1024, float64(md.rss)/1024, mid.at.Seconds(), float64(l.rss)/1024, float64(peak)/1024, float64(l.rss-md.rss)/1024)
		fmt.Fprintf(w, "%shost heap in use: %.1f MiB mid, %.1f MiB end; mid to end %+.1f MiB\n",
			label, float64(md.heap)/1024, float64(l.heap)/1024, float64(l.heap-md.heap)/1024)
		b, a := start.nodes[i], after.nodes[i]
		verdict := "back"
		if a.gor < 0 || a.fds < 0 || a.gor > b.gor+r.slack || a.fds > b.fds+r.slack {
			verdict = "NOT back"
		}
		fmt.Fprintf(w, "%sgoroutines %s before the churn, %s after it; descriptors %s before, %s after: %s (margin %d)\n",
			label, num(b.gor), num(a.gor), num(b.fds), num(a.fds), verdict, r.slack)
	}
}

// run loops until stop is closed.
func (c *soakClient) run(stop <-chan struct{}) {
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		if err := c.loop(n); err != nil {
			c.errs.Add(1)
			c.last.Store(err.Error())
			continue
		}
		c.loops.Add(1)
	}
}

// loop is one loop of the churn.
func (c *soakClient) loop(n int) error {
	ws, err := c.d.dial()
	if err != nil {
		return err
	}
	room := c.cfg.prefix + "/room" + strconv.Itoa((c.id+n)%c.cfg.rooms)
	key := c.cfg.prefix + "/rec/" + strconv.Itoa((c.id*7919+n)%c.cfg.keys)
	deadline := time.Now().Add(10 * time.Second)
	steps := []message{
		{Method: "SUBSCRIBE", Resource: room, MsgID: 1},
		{Method: "PUT", Resource: room + "/m" + strconv.Itoa(c.id), MsgID: 2, Entity: json.RawMessage(`{"client":` + strconv.Itoa(c.id) + `}`)},
		{Method: "PUT", Resource: key, MsgID: 3, Persistent: true, Entity: json.RawMessage(`{"n":` + strconv.Itoa(n) + `}`)},
		{Method: "NOTIFY", Resource: room, MsgID: 4, Data: json.RawMessage(`"loop ` + strconv.Itoa(n) + `"`)},
	}
	for _, m := range steps {
		if _, err := mustSucceed(ws, m, deadline); err != nil {
			ws.Close()
			return err
		}
	}
	// The room's listing; a room without an entity of its own answers
	// "not found" when its members are gone.
	if r, err := call(ws, message{Method: "GET", Resource: room + "?deep=1", MsgID: 5}, deadline); err != nil || r.Code != "success" && r.Reason != "not found" {
		ws.Close()
		if err == nil {
			err = fmt.Errorf("GET %s?deep=1: %s (%s)", room, r.Code, r.Reason)
		}
		return err
	}
	if n%10 == 0 {
		if err := c.dropWatch(room); err != nil {
			ws.Close()
			return err
		}
	}
	if n%2 == 0 {
		closeClean(ws)
		return nil
	}
	return closeRaw(ws, false)
}

// dropWatch opens GET room?watch, reads the status line (and the first
// event with cfg.watchEvent) and drops the connection.
func (c *soakClient) dropWatch(room string) error {
	u, _ := url.Parse(c.http)
	conn, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(conn, "GET /channel%s?watch HTTP/1.1\r\nHost: %s\r\n\r\n", room, u.Host); err != nil {
		return err
	}
	br := bufio.NewReaderSize(conn, c.cfg.readBuf)
	status, err := br.ReadString('\n')
	if err != nil {
		return fmt.Errorf("GET %s?watch: %w", room, err)
	}
	if !strings.HasPrefix(status, "HTTP/1.1 200 ") {
		return fmt.Errorf("GET %s?watch: %s", room, strings.TrimSpace(status))
	}
	if !c.cfg.watchEvent {
		return nil
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("GET %s?watch: %w", room, err)
		}
		if strings.HasPrefix(line, "{") {
			return nil
		}
	}
}
