package fleet

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// writers keeps clients of a fleet's nodes writing persistent resources
// under /w, each waiting for its reply, and records what was
// acknowledged.
type writers struct {
	mu     sync.Mutex
	acked  []string  // names acknowledged, in the order of their replies
	failed []string  // the other replies
	last   time.Time // of the last acknowledgement
	gap    time.Duration
	stop   chan struct{}
	wg     sync.WaitGroup
}

// startWriters starts k writers on each node.
func startWriters(t *testing.T, ns []*node, k int) *writers {
	w := &writers{stop: make(chan struct{}), last: time.Now()}
	for i, n := range ns {
		for j := range k {
			c := connect(t, n, "")
			w.wg.Go(func() {
				for seq := 0; ; seq++ {
					select {
					case <-w.stop:
						return
					default:
					}
					name := fmt.Sprintf("n%dw%ds%d", i, j, seq)
					r := c.do(`{"method":"PUT","resource":"/w/` + name + `","entity":{},"persistent":true}`)
					w.mu.Lock()
					if code(r) == "success" {
						now := time.Now()
						w.gap = max(w.gap, now.Sub(w.last))
						w.last = now
						w.acked = append(w.acked, name)
					} else {
						w.failed = append(w.failed, code(r))
					}
					w.mu.Unlock()
					// A bounded load: at most about 50 writes a second each.
					select {
					case <-w.stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			})
		}
	}
	t.Cleanup(w.end)
	return w
}

// end stops the writers and waits for their last replies.
func (w *writers) end() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

// count returns how many writes were acknowledged.
func (w *writers) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// await waits until n writes were acknowledged, bounded.
func (w *writers) await(t *testing.T, n int, what string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for w.count() < n {
		if time.Now().After(deadline) {
			w.mu.Lock()
			defer w.mu.Unlock()
			t.Fatalf("%s: %d writes acknowledged in 90 s, want %d (other replies: %v)", what, len(w.acked), n, summary(w.failed))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// summary counts the replies of a list.
func summary(rs []string) map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		m[r]++
	}
	return m
}

// follower reads the notifications of a subscriber as they come (so
// that its queue never fills), until a marker.
type follower struct {
	mu    sync.Mutex
	names []string // of the resources notified, in order
	bad   error    // a seq not above the one before, or the end of the client
	done  chan struct{}
}

// follow reads sub's notifications in the background until one of
// /w/marker.
func follow(sub *client) *follower {
	fl := &follower{done: make(chan struct{})}
	go func() {
		defer close(fl.done)
		var last uint64
		for {
			f := sub.read()
			if f == nil {
				fl.mu.Lock()
				fl.bad = fmt.Errorf("subscriber ended: %v", sub.err)
				fl.mu.Unlock()
				return
			}
			name, _ := f["update"].(string)
			if name == "" {
				continue
			}
			seq := uint64(f["seq"].(float64))
			fl.mu.Lock()
			if seq <= last && fl.bad == nil {
				fl.bad = fmt.Errorf("seq %d after %d", seq, last)
			}
			last = seq
			fl.names = append(fl.names, name)
			fl.mu.Unlock()
			if name == "marker" {
				return
			}
		}
	}()
	return fl
}

// checkAcked reads every acknowledged write back on every node (one
// listing of /w each) and checks that the follower of /w was notified of
// each exactly once, in seq order, up to a marker written last.
func checkAcked(t *testing.T, ns []*node, fl *follower, acked []string) {
	t.Helper()
	for i, n := range ns {
		r := connect(t, n, "").do(`{"method":"GET","resource":"/w"}`)
		if code(r) != "success" {
			t.Fatalf("node %d: GET /w: %s", i, code(r))
		}
		listed := map[string]bool{}
		for _, id := range r["entity"].([]any) {
			listed[id.(string)] = true
		}
		for _, name := range acked {
			if !listed[name] {
				t.Fatalf("node %d: acknowledged write %s lost", i, name)
			}
		}
	}
	marker := connect(t, ns[0], "")
	for {
		r := marker.do(`{"method":"PUT","resource":"/w/marker","entity":{},"persistent":true}`)
		if code(r) == "success" {
			break
		}
		t.Logf("marker: %s", code(r))
	}
	select {
	case <-fl.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the marker not notified within 60 s")
	}
	if fl.bad != nil {
		t.Fatal(fl.bad)
	}
	seen := map[string]int{}
	for _, name := range fl.names {
		seen[name]++
		if seen[name] > 1 {
			t.Fatalf("%s notified twice", name)
		}
	}
	for _, name := range acked {
		if seen[name] != 1 {
			t.Fatalf("acknowledged write %s not notified", name)
		}
	}
}

// leaderOf returns the index of the NATS server that leads the log's
// stream (servers are named nats-<i>).
func leaderOf(t *testing.T, n *node) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		info, err := n.f.stream.Info(ctx)
		if err == nil && info.Cluster != nil && strings.HasPrefix(info.Cluster.Leader, "nats-") {
			var i int
			if _, err := fmt.Sscanf(info.Cluster.Leader, "nats-%d", &i); err == nil {
				return i
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("no leader of the log's stream: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// awaitCurrent waits until every replica of the log's stream is current
// with the leader, with nothing to catch up; it returns how long that took.
func awaitCurrent(t *testing.T, n *node, replicas int) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	var state string
	for {
		info, err := n.f.stream.Info(ctx)
		if err == nil && info.Cluster != nil && len(info.Cluster.Replicas) == replicas-1 {
			ok := true
			state = "leader " + info.Cluster.Leader
			for _, r := range info.Cluster.Replicas {
				state += fmt.Sprintf(", %s current %v offline %v lag %d", r.Name, r.Current, r.Offline, r.Lag)
				ok = ok && r.Current && !r.Offline && r.Lag == 0
			}
			if ok {
				return time.Since(start)
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("the log's replicas not current within 90 s: %s (%v)", state, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestNATSServerKilled: three nats-server processes, two nodes writing
// persistent resources without pause. kill -9 of the server that leads
// the log's stream: writes keep being acknowledged (after the stream's
// new leader is elected); the server restarted catches up with the
// stream. Then kill -9 of all three: writes answer unavailable and the
// nodes say why they are not ready; the servers restarted, the nodes
// recover by themselves and writes are acknowledged again. Every
// acknowledged write reads back on both nodes, and a subscriber got each
// exactly once, in seq order.
func TestNATSServerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nats-server processes (built from the module)")
	}
	cl := natstest.StartProcs(t, 3)
	// The default heartbeat timeout: a leader's election takes seconds,
	// and a node must not be taken for dead meanwhile.
	ns := fleet(t, cl, 2, Config{Heartbeat: DefaultHeartbeat})
	sub := connect(t, ns[1], "")
	if r := sub.do(`{"method":"SUBSCRIBE","resource":"/w"}`); code(r) != "success" {
		t.Fatal(code(r))
	}
	fl := follow(sub)
	w := startWriters(t, ns, 2)
	w.await(t, 20, "before the kill")

	leader := leaderOf(t, ns[0])
	before := w.count()
	killed := time.Now()
	cl.Kill(leader)
	w.await(t, before+1, "after kill -9 of the stream's leader")
	resumed := time.Since(killed)
	w.await(t, before+30, "after kill -9 of the stream's leader")
	t.Logf("kill -9 of nats-%d (the log's leader): the next write acknowledged %v after it", leader, resumed.Round(time.Millisecond))
	if err := cl.Restart(leader); err != nil {
		t.Fatal(err)
	}
	t.Logf("nats-%d restarted: the log's replicas current %v after", leader, awaitCurrent(t, ns[0], 3).Round(time.Millisecond))

	// Every server killed at once.
	n := w.count()
	for i := range 3 {
		cl.Kill(i)
	}
	// Awaited: a write answered unavailable (those under way may have been
	// acknowledged just before).
	deadline := time.Now().Add(60 * time.Second)
	c := connect(t, ns[0], "")
	for {
		r := c.do(`{"method":"PUT","resource":"/down","entity":{},"persistent":true}`)
		if code(r) == "failed: unavailable" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a write with every NATS server killed: %s", code(r))
		}
	}
	for i, nd := range ns {
		err := nd.f.Ready(t.Context())
		if err == nil || !strings.Contains(err.Error(), "nats unreachable") && !strings.Contains(err.Error(), "does not answer") {
			t.Fatalf("node %d ready with every NATS server killed: %v", i, err)
		}
		t.Logf("node %d not ready: %v", i, err)
	}
	for i := range 3 {
		if err := cl.Restart(i); err != nil {
			t.Fatal(err)
		}
	}
	back := time.Now()
	for i, nd := range ns {
		for nd.f.Ready(t.Context()) != nil {
			if time.Since(back) > 90*time.Second {
				t.Fatalf("node %d not ready 90 s after NATS came back: %v", i, nd.f.Ready(t.Context()))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	ready := time.Since(back)
	w.await(t, n+30, "after every NATS server restarted")
	w.end()
	w.mu.Lock()
	acked, failed, gap := w.acked, w.failed, w.gap
	w.mu.Unlock()
	t.Logf("every server killed and restarted: both nodes ready %v after; %d writes acknowledged in all, other replies %v, longest wait between acknowledgements %v",
		ready.Round(time.Millisecond), len(acked), summary(failed), gap.Round(time.Millisecond))
	checkAcked(t, ns, fl, acked)
}
