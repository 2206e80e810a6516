package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/reso-project/reso/channel/fleet/natstest"
	"github.com/reso-project/reso/internal/poll"
)

// The runbook of docs/fleet.md (§15): a fleet's metrics, /readyz, adding
// and removing a node, a rolling restart under writes.

// admin returns the base URL of node i's -admin-addr.
func (f *fleet) admin(i int) string {
	f.t.Helper()
	return adminURL(f.t, f.node(i))
}

// count returns how many nodes f has.
func (f *fleet) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.nodes)
}

// add starts one more node of f, with the flags of the others, and
// returns its index.
func (f *fleet) add() int {
	f.t.Helper()
	f.mu.Lock()
	f.nodes = append(f.nodes, nil)
	i := len(f.nodes) - 1
	f.mu.Unlock()
	f.launch(i)
	return i
}

// histogram returns the sample count and sum of the histogram name.
func histogram(fams map[string]*dto.MetricFamily, name string) (uint64, float64) {
	fam := fams[name]
	if fam == nil || len(fam.Metric) == 0 || fam.Metric[0].Histogram == nil {
		return 0, 0
	}
	h := fam.Metric[0].Histogram
	return h.GetSampleCount(), h.GetSampleSum()
}

// position is a node's place in the log as its metrics show it.
type position struct {
	applied, last, lag float64
	lagSeconds         float64 // reso_fleet_lag_seconds
	// messages applied, their entries, their apply time; batches stored
	// and their entries.
	msgs             uint64
	entries, seconds float64
	timed, batches   uint64
	proposed         float64
}

// positionOf scrapes node i's metrics of the log.
func (f *fleet) positionOf(i int) position {
	f.t.Helper()
	fams := scrape(f.t, f.admin(i))
	var p position
	var ok [4]bool
	p.applied, ok[0] = value(fams, "reso_fleet_applied_position")
	p.last, ok[1] = value(fams, "reso_fleet_log_last_position")
	p.lag, ok[2] = value(fams, "reso_fleet_lag_messages")
	p.lagSeconds, ok[3] = value(fams, "reso_fleet_lag_seconds")
	if ok != [4]bool{true, true, true, true} {
		f.t.Fatalf("node %d: no reso_fleet_applied_position, reso_fleet_log_last_position, reso_fleet_lag_messages or reso_fleet_lag_seconds", i)
	}
	p.msgs, p.entries = histogram(fams, "reso_fleet_applied_batch_entries")
	p.timed, p.seconds = histogram(fams, "reso_fleet_apply_duration_seconds")
	p.batches, p.proposed = histogram(fams, "reso_fleet_proposed_batch_entries")
	return p
}

// caughtUp waits until node i's metrics show it applied at least pos
// and lags by 0 (messages and seconds), and returns them.
func (f *fleet) caughtUp(i int, pos float64) position {
	f.t.Helper()
	deadline := time.Now().Add(fleetWait)
	for {
		p := f.positionOf(i)
		if p.applied >= pos && p.lag == 0 && p.last == p.applied && p.lagSeconds == 0 {
			return p
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("node %d at %+v, want applied at least %v and lag 0", i, p, pos)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readyAgain waits until node i's /readyz answers 200.
func (f *fleet) readyAgain(i int) {
	f.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		r := f.node(i).get(f.t, "/readyz")
		if r.StatusLine == "HTTP/1.1 200 OK" {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("node %d not ready: %s %q", i, r.StatusLine, r.Body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestFleetMetrics: a node's metrics show its place in the log and move
// with writes: every node's applied position rises by at least one
// message per write (each waits for its reply) to the writer's, with
// lag 0 and the last position equal to it; every node observed the
// messages it applied (entries per message, one apply time each); the
// writer observed its batches with their entries.
func TestFleetMetrics(t *testing.T) {
	t.Parallel()
	f := startFleet(t, fleetNodes, "-admin-addr", "127.0.0.1:0")
	var before []position
	for i := range fleetNodes {
		p := f.positionOf(i)
		if p.lag != 0 || p.last < p.applied {
			t.Fatalf("node %d at start: %+v", i, p)
		}
		before = append(before, p)
	}
	p := "/channel/" + uniq("metrics-")
	const writes = 20
	for k := range writes {
		wantHTTP(t, f.on(0).httpJSON("PUT", fmt.Sprintf("%s/k%d", p, k), `{"k":1}`), "200 OK", "{}")
	}
	w := f.positionOf(0)
	if w.applied-before[0].applied < writes {
		t.Fatalf("writer's applied position went from %v to %v for %d writes", before[0].applied, w.applied, writes)
	}
	if got := w.proposed - before[0].proposed; got < writes || w.batches == before[0].batches || float64(w.batches-before[0].batches) > got {
		t.Fatalf("writer stored %d batches of %v entries for %d writes", w.batches-before[0].batches, got, writes)
	}
	for i := range fleetNodes {
		a := f.caughtUp(i, w.applied)
		b := before[i]
		if a.msgs-b.msgs < writes || a.entries-b.entries < writes || a.timed != a.msgs || a.seconds <= b.seconds {
			t.Fatalf("node %d applied %d messages of %v entries in %v s (%d timed) for %d writes",
				i, a.msgs-b.msgs, a.entries-b.entries, a.seconds-b.seconds, a.timed-b.timed, writes)
		}
		t.Logf("node %d: position %v, %d messages of %v entries applied in %.6f s", i, a.applied, a.msgs-b.msgs, a.entries-b.entries, a.seconds-b.seconds)
	}
}

// TestFleetReadyzQuorumLost: with two of the three NATS servers stopped
// the node stays connected to the third but the log has no leader: /readyz
// says so, on the server's address and on -admin-addr, and a read answers
// 503 (the third server's last position may miss writes the others
// acknowledged); once they are back, the node is ready again by itself.
// Before, the third server's answer about the log made the node ready and
// its reads served.
func TestFleetReadyzQuorumLost(t *testing.T) {
	t.Parallel()
	nc := natstest.StartProcs(t, 3)
	f := startFleetOn(t, nc, 1, "-admin-addr", "127.0.0.1:0")
	f.readyAgain(0)
	p := "/channel/" + uniq("quorum-")
	wantHTTP(t, f.on(0).httpJSON("PUT", p, `{}`), "200 OK", "{}")
	nc.Stop(1)
	nc.Stop(2)
	want := "fleet " + f.name + ": fleet: the log has no leader (most of its NATS servers down or cut off): it stores no write\nnode " + f.nodeID(0) + "\n"
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := f.node(0).get(t, "/readyz")
		if r.StatusLine == "HTTP/1.1 503 Service Unavailable" && r.Body == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz without quorum: %s %q, want 503 %q", r.StatusLine, r.Body, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, body := fetch(t, f.admin(0)+"/readyz"); code != 503 || body != want {
		t.Fatalf("admin readyz without quorum: %d %q", code, body)
	}
	wantHTTP(t, f.on(0).httpJSON("GET", p, ""), "503 Service Unavailable", "-")
	for _, i := range []int{1, 2} {
		if err := nc.Restart(i); err != nil {
			t.Fatal(err)
		}
	}
	f.readyAgain(0)
	// Ready, the node serves reads again; the first may still meet the
	// log's leader changing as the servers that came back catch up (a
	// CI run answered one 503 right after readyz's 200), so it is asked
	// until it answers, within a node's bound.
	var r response
	poll.Wait(fleetWait, func() bool {
		r = f.on(0).httpJSON("GET", p, "")
		return r.StatusLine == "HTTP/1.1 200 OK"
	})
	wantHTTP(t, r, "200 OK", "{}")
}

// TestFleetAddRemoveNode: a node added to a running fleet serves what was
// written before it, with the same position in the log, and the others
// count it live; removed with SIGTERM, its transient resources go at once
// and the others stop counting it after the heartbeat timeout.
func TestFleetAddRemoveNode(t *testing.T) {
	t.Parallel()
	f := startFleet(t, 2, "-admin-addr", "127.0.0.1:0")
	p := "/channel/" + uniq("grow-")
	const writes = 10
	var names []string
	for k := range writes {
		names = append(names, fmt.Sprintf("k%d", k))
		wantHTTP(t, f.on(k%2).httpJSON("PUT", p+"/"+names[k], `{}`), "200 OK", "{}")
	}
	live := func(i int, want float64) {
		t.Helper()
		deadline := time.Now().Add(fleetWait)
		for {
			v, _ := value(scrape(t, f.admin(i)), "reso_fleet_live_nodes")
			if v == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d counts %v live nodes, want %v", i, v, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	live(0, 2)
	n := f.add()
	f.readyAgain(n)
	wantHTTP(t, f.on(n).httpJSON("GET", p+"?deep=1", ""), "200 OK", mustJSON(t, names))
	w := f.positionOf(0)
	f.caughtUp(n, w.applied)
	live(0, 3)
	live(n, 3)

	c := clients(t, f.on(n)).dial("$T")
	tp := strings.TrimPrefix(p, "/channel")
	if r := c.call(`{"method":"PUT","resource":"` + tp + `/t","entity":{},"msg_id":1}`); r != `{"msg_id":1,"code":"success"}` {
		t.Fatal(r)
	}
	wantHTTP(t, f.on(0).httpJSON("GET", p+"/t", ""), "200 OK", "{}")
	f.node(n).stop()
	// Awaited: the transient resource gone (its node ended its connection
	// through the log as it stopped).
	deadline := time.Now().Add(fleetWait)
	for f.on(0).httpJSON("GET", p+"/t", "").StatusLine != "HTTP/1.1 404 Not Found" {
		if time.Now().After(deadline) {
			t.Fatal("the removed node's transient resource is still there")
		}
		time.Sleep(100 * time.Millisecond)
	}
	live(0, 2)
	live(1, 2)
}

// mustJSON returns v as JSON.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFleetRollingRestart: the runbook's rolling restart of three nodes
// while a client writes through a balancer: each node in turn stopped
// with SIGTERM, started again and awaited ready on /readyz before the
// next, the client's writes going on meanwhile (some answered by the
// others during each restart). No acknowledged write is lost on any node,
// and every node ends at the same position with the same seq.
func TestFleetRollingRestart(t *testing.T) {
	t.Parallel()
	f := startFleet(t, fleetNodes, "-admin-addr", "127.0.0.1:0")
	front := f.front()
	p := "/channel/" + uniq("roll-")
	hc := &http.Client{Timeout: fleetWait, Transport: &http.Transport{DisableKeepAlives: true}}
	var mu sync.Mutex
	var acked []string
	var failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			name := fmt.Sprintf("w%d", k)
			req, _ := http.NewRequest("PUT", front.URL+p+"/"+name, strings.NewReader(`{}`))
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				failed.Add(1)
				continue // the node stopped under the request: not acknowledged
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				failed.Add(1)
				continue
			}
			mu.Lock()
			acked = append(acked, name)
			mu.Unlock()
		}
	})
	nacked := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	// progress waits until the client has n more acknowledged writes.
	progress := func(n int) {
		t.Helper()
		want := nacked() + n
		deadline := time.Now().Add(fleetWait)
		for nacked() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%d writes acknowledged, want %d", nacked(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	progress(10)
	for i := range fleetNodes {
		old := f.nodeID(i)
		f.node(i).stop()
		progress(5) // the others take the writes
		f.launch(i)
		f.readyAgain(i)
		if f.nodeID(i) == old {
			t.Fatalf("node %d restarted with its old id %s", i, old)
		}
		progress(5)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d writes acknowledged, %d not during the restarts", len(acked), failed.Load())

	var subs []*wsClient
	tp := strings.TrimPrefix(p, "/channel")
	for i := range fleetNodes {
		s := clients(t, f.on(i)).dial(fmt.Sprintf("$S%d", i))
		s.call(`{"method":"SUBSCRIBE","resource":"` + tp + `","msg_id":1}`)
		subs = append(subs, s)
	}
	wantHTTP(t, f.on(0).httpJSON("PUT", p+"/final", `{}`), "200 OK", "{}")
	var seqs []uint64
	for _, s := range subs {
		seqs = append(seqs, s.expect(`{"notify":"UPDATE","resource":"`+tp+`","update":"final","type":"application/json","entity":{},"seq":N}`)...)
	}
	if len(seqs) != fleetNodes || slices.Min(seqs) != slices.Max(seqs) {
		t.Fatalf("the last write's seq on each node: %v", seqs)
	}
	// Awaited: every node at one position of the log, lagging by 0.
	deadline := time.Now().Add(fleetWait)
	for {
		var ps []position
		for i := range fleetNodes {
			ps = append(ps, f.positionOf(i))
		}
		same := true
		for _, q := range ps {
			same = same && q.applied == ps[0].applied && q.lag == 0
		}
		if same {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes at %+v", ps)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := range fleetNodes {
		r := f.on(i).httpJSON("GET", p+"?deep=1", "")
		var got []string
		if err := json.Unmarshal([]byte(r.Body), &got); err != nil {
			t.Fatalf("node %d: %s %q", i, r.StatusLine, r.Body)
		}
		have := map[string]bool{}
		for _, g := range got {
			have[g] = true
		}
		for _, a := range acked {
			if !have[a] {
				t.Fatalf("node %d lost the acknowledged write %s (%d children)", i, a, len(got))
			}
		}
	}
}
