package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	resoclient "github.com/reso-project/reso/client"
	"github.com/reso-project/reso/internal/poll"
)

// deathWait bounds each wait of TestFleetNodeDeath: the heartbeat
// timeout, the reconnects of a few hundred clients and the deletion of
// their resources take seconds alone, minutes under the whole parallel
// run with -race.
const deathWait = 4 * time.Minute

// TestFleetNodeDeath is issue 36's node death at a small scale (the full
// scale is bench/fleet-death.sh): a fleet of three nodes, 240 clients on
// node 0, half of them the Go client (in this process) and half reso.js
// (one Node process, bench/fleetdeath/clients.mjs), each given the list
// of the three nodes' URLs (node 0 first, so that it starts there, then
// the others in an order that depends on the client, so that the
// clients move to both), subscribed to one of 8 rooms and owning one
// transient presence resource; a publisher on node 1 NOTIFYs the rooms
// throughout and a writer on node 2 PUTs. Node 0 is killed with -9.
// Every client reconnects to node 1 or 2 by itself and resumes with
// since: every resync says recovered: true, and every NOTIFY the
// publisher saw acknowledged reaches every client of its room once,
// in seq order. Watchers on nodes 1 and 2 see each transient resource of
// node 0 deleted exactly once, and none is left in the tree; the
// writer's PUTs on node 2 are answered throughout, some between the kill
// and the last deletion.
func TestFleetNodeDeath(t *testing.T) {
	t.Parallel()
	nodeBin := nodePath(t) // skips (or fails under CI) before the fleet starts
	const goClients, jsClients, rooms = 120, 120, 8
	total := goClients + jsClients
	f := startFleet(t, fleetNodes)
	ctx := ctx(t)
	prefix := "/" + uniq("death-")
	var urls []string
	for i := range fleetNodes {
		urls = append(urls, "ws://"+f.node(i).Addr+"/channel")
	}

	// Watchers of the presence resources on the survivors.
	watchers := []*presenceWatch{newPresenceWatch(ctx, t, urls[1], prefix), newPresenceWatch(ctx, t, urls[2], prefix)}

	// The Go clients: they start on node 0 because their dialer refuses
	// the other nodes until the kill (a refused attempt moves a client to
	// the next URL of its list); from the kill on it dials every node.
	var released atomic.Bool
	node0 := f.node(0).Addr
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	gos := make([]*deathGoClient, goClients)
	var wg sync.WaitGroup
	errs := make(chan error, goClients)
	for i := range gos {
		d := &deathGoClient{node0: node0, room: fmt.Sprintf("%s/room%d", prefix, i%rooms), got: map[int]int{}}
		gos[i] = d
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if !released.Load() && addr != node0 {
				return nil, errors.New("not before the kill")
			}
			d.mu.Lock()
			d.addr = addr
			d.mu.Unlock()
			return dialer.DialContext(ctx, network, addr)
		}}}
		wg.Go(func() {
			own := []string{urls[0], urls[1+i%2], urls[2-i%2]} // the clients of node 0 go to both others
			d.c = resoclient.New("", &resoclient.Options{URLs: own, HTTPClient: hc})
			if err := d.c.WaitOpen(ctx); err != nil {
				errs <- err
				return
			}
			if _, err := d.c.SubscribeFunc(ctx, d.room, d.event); err != nil {
				errs <- err
				return
			}
			errs <- d.c.Put(ctx, fmt.Sprintf("%s/presence/g%d", prefix, i), map[string]int{"i": i}, false)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, d := range gos {
			d.c.Close()
		}
	}()

	// The reso.js clients, in one Node process.
	js := startDeathJS(t, nodeBin, map[string]any{"urls": urls, "n": jsClients, "first": 0, "prefix": prefix, "rooms": rooms})
	for _, w := range watchers {
		w.waitCreated(t, total)
	}

	// The publisher on node 1 and the writer on node 2.
	pub := dialFast(ctx, t, urls[1])
	var ackMu sync.Mutex
	acked := map[string][]int{}
	stopPub := make(chan struct{})
	pubDone := make(chan error, 1)
	go func() {
		for k := 0; ; k++ {
			select {
			case <-stopPub:
				pubDone <- nil
				return
			case <-time.After(20 * time.Millisecond):
			}
			room := fmt.Sprintf("%s/room%d", prefix, k%rooms)
			_, err := pub.Notify(ctx, room, map[string]int{"k": k})
			var e *resoclient.Error
			if err == nil || errors.As(err, &e) && e.Reason == "no subscriber" {
				ackMu.Lock()
				acked[room] = append(acked[room], k)
				ackMu.Unlock()
			} else if !errors.Is(err, resoclient.ErrConnectionLost) {
				pubDone <- fmt.Errorf("publisher: %w", err)
				return
			}
		}
	}()
	writer := dialFast(ctx, t, urls[2])
	var writes, writesAfterKill atomic.Int64
	var killed atomic.Bool
	stopWriter := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stopWriter:
				writerDone <- nil
				return
			case <-time.After(20 * time.Millisecond):
			}
			after := killed.Load()
			if err := writer.Put(ctx, prefix+"/writes", map[string]int{"i": i}, true); err != nil {
				writerDone <- fmt.Errorf("writer on node 2: %w", err)
				return
			}
			writes.Add(1)
			if after {
				writesAfterKill.Add(1)
			}
		}
	}()
	poll.Until(t, deathWait, "the publisher's first acknowledgements and the writer's first PUTs", func() bool {
		ackMu.Lock()
		defer ackMu.Unlock()
		return len(acked) == rooms && writes.Load() > 0
	})

	// The kill.
	released.Store(true)
	killed.Store(true)
	f.node(0).kill()
	poll.Until(t, deathWait, "every Go client subscribed again with a resync", func() bool {
		for _, d := range gos {
			if d.resyncs() == 0 {
				return false
			}
		}
		return true
	})
	poll.Until(t, deathWait, "every reso.js client subscribed again with a resync", func() bool {
		return js.report(t, nil).Resynced == jsClients
	})
	for _, w := range watchers {
		w.waitDeleted(t, total)
	}
	if writesAfterKill.Load() == 0 {
		t.Error("no PUT of the writer on node 2 answered between the kill and the last deletion")
	}

	// A few more NOTIFYs to the clients in their new places, then the
	// count of what they received against what was acknowledged.
	ackMu.Lock()
	n := len(acked[prefix+"/room0"])
	ackMu.Unlock()
	poll.Until(t, deathWait, "more NOTIFYs after the reconnects", func() bool {
		ackMu.Lock()
		defer ackMu.Unlock()
		return len(acked[prefix+"/room0"]) >= n+3
	})
	close(stopPub)
	close(stopWriter)
	if err := <-pubDone; err != nil {
		t.Fatal(err)
	}
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	ackMu.Lock()
	defer ackMu.Unlock()
	var goReport deathReport
	poll.Until(t, deathWait, "every acknowledged NOTIFY at every client of its room", func() bool {
		goReport = deathGoReport(gos, acked)
		return goReport.Missed == 0 && js.report(t, acked).Missed == 0
	})
	for _, r := range []struct {
		name string
		r    deathReport
		n    int
	}{{"Go", goReport, goClients}, {"reso.js", js.report(t, acked), jsClients}} {
		t.Logf("%s clients: %d resynced, %d with recovered: true only, %d on node 1 or 2; %d deliveries owed, %d missed, %d doubled",
			r.name, r.r.Resynced, r.r.Recovered, r.r.Elsewhere, r.r.Expected, r.r.Missed, r.r.Doubled)
		if r.r.Resynced != r.n || r.r.Recovered != r.n || r.r.Elsewhere != r.n {
			t.Errorf("%s clients: %d resynced, %d of them with recovered: true only, %d on node 1 or 2; want %d", r.name, r.r.Resynced, r.r.Recovered, r.r.Elsewhere, r.n)
		}
		if r.r.Missed != 0 || r.r.Doubled != 0 || r.r.Disorder != 0 || r.r.Expected == 0 {
			t.Errorf("%s clients: %d deliveries owed, %d missed, %d doubled, %d out of seq order; want none missed, doubled or out of order", r.name, r.r.Expected, r.r.Missed, r.r.Doubled, r.r.Disorder)
		}
	}
	for i, w := range watchers {
		w.check(t, i+1, total)
	}
	for i := 1; i < fleetNodes; i++ {
		c := dialFast(ctx, t, urls[i])
		r, err := c.Get(ctx, prefix+"/presence?deep=0")
		if err != nil && !isNotFound(err) {
			t.Fatal(err)
		}
		var n struct{ Count *int }
		if err == nil && (json.Unmarshal(r.Entity, &n) != nil || n.Count == nil || *n.Count != 0) {
			t.Errorf("node %d: %s/presence holds %s after the deletions, want none", i, prefix, r.Entity)
		}
	}
}

// isNotFound says whether err is the server's "not found".
func isNotFound(err error) bool {
	var e *resoclient.Error
	return errors.As(err, &e) && e.Reason == "not found"
}

// dialFast opens a Go client of one URL, closed when t ends.
func dialFast(ctx context.Context, t *testing.T, url string) *resoclient.Client {
	t.Helper()
	c, err := resoclient.Dial(ctx, url, &resoclient.Options{Buffer: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// deathReport is what a set of clients received: the fields of
// bench/fleetdeath/clients.mjs's report.
type deathReport struct {
	Clients   int     `json:"clients"`
	Resynced  int     `json:"resynced"`
	Recovered int     `json:"recovered"`
	Elsewhere int     `json:"elsewhere"`
	Expected  int     `json:"expected"`
	Missed    int     `json:"missed"`
	Doubled   int     `json:"doubled"`
	Disorder  int     `json:"disorder"`
	First     []int64 `json:"first"`
}

// deathGoClient is a Go client of TestFleetNodeDeath and what it
// received.
type deathGoClient struct {
	c     *resoclient.Client
	node0 string // HOST:PORT of node 0
	room  string

	mu       sync.Mutex
	addr     string      // HOST:PORT of the last connection attempt
	got      map[int]int // NOTIFY number -> times delivered
	resync   []bool      // recovered, per resync
	lastSeq  uint64
	disorder int
}

// event takes an event of the client's subscription.
func (d *deathGoClient) event(ev resoclient.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ev.Resync != nil {
		d.resync = append(d.resync, ev.Resync.Recovered)
		return
	}
	n := ev.Notification
	if n.Seq <= d.lastSeq {
		d.disorder++
	}
	d.lastSeq = n.Seq
	var p struct{ K *int }
	if n.Notify == "NOTIFY" && json.Unmarshal(n.Data, &p) == nil && p.K != nil {
		d.got[*p.K]++
	}
}

// resyncs is how many resyncs the client had.
func (d *deathGoClient) resyncs() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.resync)
}

// deathGoReport counts what the Go clients received against acked.
func deathGoReport(gos []*deathGoClient, acked map[string][]int) deathReport {
	r := deathReport{Clients: len(gos)}
	for _, d := range gos {
		d.mu.Lock()
		for _, k := range acked[d.room] {
			r.Expected++
			if d.got[k] == 0 {
				r.Missed++
			}
		}
		for _, n := range d.got {
			r.Doubled += max(n-1, 0)
		}
		r.Disorder += d.disorder
		if len(d.resync) > 0 {
			r.Resynced++
			all := true
			for _, ok := range d.resync {
				all = all && ok
			}
			if all {
				r.Recovered++
			}
			if d.addr != d.node0 {
				r.Elsewhere++
			}
		}
		d.mu.Unlock()
	}
	return r
}

// presenceWatch counts, on one node, the creations and deletions of the
// children of <prefix>/presence.
type presenceWatch struct {
	mu      sync.Mutex
	created map[string]int
	deleted map[string]int
}

// newPresenceWatch subscribes a client of url to prefix/presence.
func newPresenceWatch(ctx context.Context, t *testing.T, url, prefix string) *presenceWatch {
	t.Helper()
	w := &presenceWatch{created: map[string]int{}, deleted: map[string]int{}}
	c := dialFast(ctx, t, url)
	if _, err := c.SubscribeFunc(ctx, prefix+"/presence", func(ev resoclient.Event) {
		if ev.Notification == nil || ev.Notification.Notify != "UPDATE" {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if id := ev.Notification.Update; id != "" {
			w.created[id]++
		}
		if id := ev.Notification.Delete; id != "" {
			w.deleted[id]++
		}
	}); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *presenceWatch) counts() (created, deleted int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.created), len(w.deleted)
}

func (w *presenceWatch) waitCreated(t *testing.T, n int) {
	t.Helper()
	poll.Until(t, deathWait, fmt.Sprintf("a watcher to see %d presence resources created", n), func() bool { c, _ := w.counts(); return c >= n })
}

func (w *presenceWatch) waitDeleted(t *testing.T, n int) {
	t.Helper()
	poll.Until(t, deathWait, fmt.Sprintf("a watcher to see %d presence resources deleted", n), func() bool { _, d := w.counts(); return d >= n })
}

// check fails t unless each of the n resources created was deleted
// exactly once.
func (w *presenceWatch) check(t *testing.T, node, n int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.created) != n || len(w.deleted) != n {
		t.Errorf("watcher on node %d: %d presence resources created, %d deleted; want %d of each", node, len(w.created), len(w.deleted), n)
	}
	for id, c := range w.deleted {
		if c != 1 || w.created[id] != 1 {
			t.Errorf("watcher on node %d: %s created %d times, deleted %d times; want once each", node, id, w.created[id], c)
		}
	}
}

// deathJS is the Node process of reso.js clients of TestFleetNodeDeath.
type deathJS struct {
	stdin io.Writer
	lines chan string
}

// startDeathJS starts bench/fleetdeath/clients.mjs with cfg and waits
// until its clients are ready; the process ends with t.
func startDeathJS(t *testing.T, nodeBin string, cfg map[string]any) *deathJS {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	if nodeWebSocketFlag.Load() {
		args = append(args, "--experimental-websocket")
	}
	cmd := command(nodeBin, append(args, "../bench/fleetdeath/clients.mjs")...)
	cmd.Env = append(cmd.Environ(), "RESO_DEATH="+string(b))
	var stderr syncBuffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		io.WriteString(in, "close\n")
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("reso.js clients' stderr:\n%s", stderr.String())
		}
	})
	js := &deathJS{stdin: in, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			js.lines <- sc.Text()
		}
		close(js.lines)
	}()
	var ready struct {
		Ready *int
		Error string
	}
	js.next(t, &ready)
	if ready.Error != "" || ready.Ready == nil {
		t.Fatalf("reso.js clients: %s", ready.Error)
	}
	return js
}

// next decodes the next line of the process into v.
func (js *deathJS) next(t *testing.T, v any) {
	t.Helper()
	select {
	case line, ok := <-js.lines:
		if !ok {
			t.Fatal("the reso.js clients' process ended")
		}
		if err := json.Unmarshal([]byte(line), v); err != nil {
			t.Fatalf("reso.js clients: %q: %v", line, err)
		}
	case <-time.After(deathWait):
		t.Fatal("no answer from the reso.js clients' process")
	}
}

// report asks the process for its report against acked.
func (js *deathJS) report(t *testing.T, acked map[string][]int) deathReport {
	t.Helper()
	if acked == nil {
		acked = map[string][]int{}
	}
	b, err := json.Marshal(map[string]any{"report": acked})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(js.stdin, "%s\n", b); err != nil {
		t.Fatal(err)
	}
	var r struct {
		Report *deathReport
		Error  string
	}
	js.next(t, &r)
	if r.Report == nil {
		t.Fatalf("reso.js clients: %s", r.Error)
	}
	return *r.Report
}
