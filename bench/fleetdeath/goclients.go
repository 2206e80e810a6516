package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	resoclient "github.com/reso-project/reso/client"
)

// goChildEnv, in the environment of this program's process, makes it a
// process of Go clients; RESO_DEATH holds its configuration, the same as
// clients.mjs's (see there), and it speaks the same lines on stdin and
// stdout.
const goChildEnv = "RESO_DEATH_GO"

// childConfig is the configuration of a process of clients.
type childConfig struct {
	URLs   []string `json:"urls"`
	N      int      `json:"n"`
	First  int      `json:"first"`
	Prefix string   `json:"prefix"`
	Rooms  int      `json:"rooms"`
	WS     string   `json:"ws,omitempty"`
}

// ownList is client i's list of URLs: urls[0], then the others rotated by
// i, so that the clients of urls[0] move to all the other nodes.
func ownList(urls []string, i int) []string {
	rest := urls[1:]
	if len(rest) == 0 {
		return urls
	}
	r := i % len(rest)
	return append(append([]string{urls[0]}, rest[r:]...), rest[:r]...)
}

// goClient is one Go client of the process and what it received.
type goClient struct {
	c    *resoclient.Client
	sub  *resoclient.Subscription
	room string

	mu      sync.Mutex
	placed  bool   // its first connection is open
	addr    string // HOST:PORT of its last connection attempt
	got     map[int]int
	resyncs []resyncAt
	lastSeq uint64
	disord  int
	tracing bool      // set once every client is ready
	dropped time.Time // when the connection of ready ended (the kill)
	down    time.Time // when the last attempt or connection ended (Reconnecting)
	trace   []attempt // the connection attempts since ready
	waits   []time.Duration
}

// attempt is a connection attempt of a traced client: its handshake's
// start and end, and what ended it ("101" when it opened, else the
// status and reason of the refusal, with its Retry-After, or the error).
type attempt struct {
	start, end time.Time
	how        string
}

// tracer records a client's handshakes: the RoundTrip of each (a
// WebSocket dial is one HTTP request).
type tracer struct {
	g    *goClient
	next http.RoundTripper
}

func (t tracer) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	g := t.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.tracing {
		return resp, err
	}
	if !g.down.IsZero() {
		g.waits = append(g.waits, start.Sub(g.down))
		g.down = time.Time{}
	}
	a := attempt{start: start, end: time.Now()}
	switch {
	case err != nil:
		a.how = "handshake: " + shortErr(err)
	case resp.StatusCode == http.StatusSwitchingProtocols:
		a.how = "101"
	default:
		a.how = "handshake: " + resp.Status
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			a.how += " (Retry-After " + ra + ")"
		}
	}
	g.trace = append(g.trace, a)
	return resp, err
}

// shortErr is the kind of a failed dial: the syscall's error when there
// is one (connection refused, reset), else the error's text, cut.
func shortErr(err error) string {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	s := err.Error()
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

// state takes the client's state changes: the drop of ready's
// connection, and the end of each attempt or connection.
func (g *goClient) state(s resoclient.State) {
	if s != resoclient.Reconnecting {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.tracing {
		return
	}
	now := time.Now()
	if g.dropped.IsZero() {
		g.dropped = now
	}
	g.down = now
}

// resyncAt is a resync and when it came.
type resyncAt struct {
	at        time.Time
	recovered bool
}

// event takes an event of the client's subscription.
func (g *goClient) event(ev resoclient.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ev.Resync != nil {
		g.resyncs = append(g.resyncs, resyncAt{time.Now(), ev.Resync.Recovered})
		return
	}
	n := ev.Notification
	if n.Seq <= g.lastSeq {
		g.disord++
	}
	g.lastSeq = n.Seq
	var p struct{ K *int }
	if n.Notify == "NOTIFY" && json.Unmarshal(n.Data, &p) == nil && p.K != nil {
		g.got[*p.K]++
	}
}

// goChild runs a process of Go clients: each starts on urls[0] (its
// dialer refuses the other nodes until its first connection is open; a
// refused attempt moves the client to the next URL of its list), then
// reconnects as the client does.
func goChild() error {
	var cfg childConfig
	if err := json.Unmarshal([]byte(os.Getenv("RESO_DEATH")), &cfg); err != nil {
		return fmt.Errorf("RESO_DEATH: %w", err)
	}
	node0 := cfg.URLs[0]
	out := json.NewEncoder(os.Stdout)
	ctx := context.Background()
	clients := make([]*goClient, cfg.N)
	sem := make(chan struct{}, 100)
	errs := make(chan error, cfg.N)
	var wg sync.WaitGroup
	for j := range clients {
		i := cfg.First + j
		g := &goClient{room: fmt.Sprintf("%s/room%d", cfg.Prefix, i%cfg.Rooms), got: map[int]int{}}
		clients[j] = g
		dialer := &net.Dialer{Timeout: 10 * time.Second}
		hc := &http.Client{Transport: tracer{g, &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			g.mu.Lock()
			placed := g.placed
			g.addr = addr
			g.mu.Unlock()
			if !placed && "ws://"+addr+"/channel" != node0 {
				return nil, errors.New("not before the first connection to node 0")
			}
			return dialer.DialContext(ctx, network, addr)
		}}}}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			g.c = resoclient.New("", &resoclient.Options{URLs: ownList(cfg.URLs, i), HTTPClient: hc, OnState: g.state})
			if err := g.c.WaitOpen(ctx); err != nil {
				errs <- err
				return
			}
			g.mu.Lock()
			g.placed = true
			g.mu.Unlock()
			sub, err := g.c.SubscribeFunc(ctx, g.room, g.event)
			if err != nil {
				errs <- err
				return
			}
			g.sub = sub
			errs <- g.c.Put(ctx, fmt.Sprintf("%s/presence/c%d", cfg.Prefix, i), map[string]int{"i": i}, false)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			out.Encode(map[string]string{"error": err.Error()})
			return err
		}
	}
	for _, g := range clients {
		g.mu.Lock()
		g.tracing = true
		g.mu.Unlock()
	}
	out.Encode(map[string]int{"ready": len(clients)})
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if sc.Text() == "close" {
			break
		}
		var msg struct {
			Report map[string][]int
			Detail bool
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			out.Encode(map[string]string{"error": err.Error()})
			return err
		}
		out.Encode(map[string]report{"report": goReport(clients, node0, msg.Report, msg.Detail)})
	}
	for _, g := range clients {
		g.c.Close()
	}
	return nil
}

// goReport counts what the clients received against acked, as
// clients.mjs's report does, with each client's trace when detail is set.
func goReport(clients []*goClient, node0 string, acked map[string][]int, detail bool) report {
	r := report{Clients: len(clients)}
	if detail {
		r.Ended = map[string]int{}
	}
	for _, g := range clients {
		g.mu.Lock()
		if detail {
			g.traced(&r)
		}
		for _, k := range acked[g.room] {
			r.Expected++
			if g.got[k] == 0 {
				r.Missed++
			}
		}
		for _, n := range g.got {
			r.Doubled += max(n-1, 0)
		}
		r.Disorder += g.disord
		var first int64
		if len(g.resyncs) > 0 {
			r.Resynced++
			first = g.resyncs[0].at.UnixMilli()
			all := true
			for _, s := range g.resyncs {
				all = all && s.recovered
			}
			if all {
				r.Recovered++
			}
			if "ws://"+g.addr+"/channel" != node0 {
				r.Elsewhere++
			}
		}
		r.First = append(r.First, first)
		g.mu.Unlock()
		if first == 0 {
			if r.States == nil {
				r.States = map[string]int{}
			}
			st := g.c.State().String()
			if err := g.sub.Err(); err != nil {
				st = "subscription ended: " + err.Error()
			}
			r.States[st]++
		}
	}
	return r
}

// traced adds the client's trace up to its first resync to r, as
// clients.mjs's traced does.
func (g *goClient) traced(r *report) {
	until := time.Now().Add(time.Hour)
	if len(g.resyncs) > 0 {
		until = g.resyncs[0].at
	}
	var opened int64
	n := 0
	for k, a := range g.trace {
		if a.start.After(until) {
			break
		}
		n++
		// An attempt that opened and was followed by another before the
		// resync: its connection ended first.
		switch {
		case a.how != "101":
			r.Ended[a.how]++
		case k+1 < len(g.trace) && !g.trace[k+1].start.After(until):
			r.Ended["closed after the upgrade"]++
		default:
			opened = a.end.UnixMilli()
		}
	}
	var drop int64
	if !g.dropped.IsZero() && n > 0 {
		drop = g.dropped.UnixMilli()
	}
	for k, w := range g.waits {
		if k < n {
			r.Waits = append(r.Waits, int(w.Milliseconds()))
		}
	}
	r.Drop = append(r.Drop, drop)
	r.Opened = append(r.Opened, opened)
	r.Attempts = append(r.Attempts, n)
}
