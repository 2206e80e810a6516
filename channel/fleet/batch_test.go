package fleet

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/channel/fleet/natstest"
	"github.com/reso-project/reso/internal/poll"
)

// TestBatches runs the group commit into the log on one real three-server
// JetStream cluster.
func TestBatches(t *testing.T) {
	cl := natstest.Start(t, 3)
	t.Run("OneOrder", func(t *testing.T) { batchesOneOrder(t, cl) })
	t.Run("StoredTwice", func(t *testing.T) { batchStoredTwice(t, cl) })
	t.Run("ProposerKilled", func(t *testing.T) { proposerKilled(t, cl) })
	t.Run("CountsWhereNeeded", func(t *testing.T) { countsWhereNeeded(t, cl) })
	t.Run("Pipelined", func(t *testing.T) { pipelined(t, cl) })
}

// call runs msg on n's tree as an HTTP request would and returns the
// reply's code.
func call(t *testing.T, n *node, msg string) string {
	r := n.tree.Call(t.Context(), "", "", []byte(msg))
	if strings.HasPrefix(string(r), `{"code":"success"`) {
		return "success"
	}
	return string(r)
}

// subscriber subscribes a new client of n to path.
func subscriber(t *testing.T, n *node, path string) *client {
	t.Helper()
	c := connect(t, n, "")
	if r := c.do(`{"method":"SUBSCRIBE","resource":"` + path + `"}`); code(r) != "success" {
		t.Fatal(r)
	}
	return c
}

// changed returns the child a notification names: created, updated or
// deleted.
func changed(n map[string]any) string {
	for _, k := range []string{"create", "update", "delete"} {
		if v, ok := n[k]; ok {
			return k + " " + fmt.Sprint(v)
		}
	}
	return fmt.Sprint(n)
}

// updates returns (seq, change) of each notification of c, and fails the
// test when a change comes twice.
func updates(t *testing.T, c *client) []string {
	t.Helper()
	var u []string
	seen := map[string]bool{}
	for _, n := range c.notes {
		name := changed(n)
		if seen[name] {
			t.Fatalf("%s notified twice", name)
		}
		seen[name] = true
		u = append(u, fmt.Sprintf("%v %s", n["seq"], name))
	}
	return u
}

// getMsg returns the message at seq of n's log. The stream allows direct
// gets, which any replica answers: one that has not stored seq yet
// answers "message not found" (a POST is acknowledged once a quorum
// stored it), so that is asked again for a while.
func getMsg(t *testing.T, n *node, seq uint64) *jetstream.RawStreamMsg {
	t.Helper()
	var m *jetstream.RawStreamMsg
	var err error
	poll.Wait(10*time.Second, func() bool {
		m, err = n.f.stream.GetMsg(t.Context(), seq)
		return err == nil
	})
	if err != nil {
		t.Fatalf("log message %d: %v", seq, err)
	}
	return m
}

// logBatches reads every message of n's log and returns how many there
// are and how many entries they carry.
func logBatches(t *testing.T, n *node) (msgs, entries, most int) {
	t.Helper()
	info, err := n.f.stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m := getMsg(t, n, seq)
		if isReadMark(m.Data) {
			continue // a read's barrier (the nodes' start and Ready)
		}
		b, err := decodeBatch(m.Data)
		if err != nil {
			t.Fatalf("log message %d: %v", seq, err)
		}
		msgs++
		entries += len(b.Entries)
		most = max(most, len(b.Entries))
	}
	return msgs, entries, most
}

// batchesOneOrder: many writes from many goroutines on each of three
// nodes are applied in one order, with the same seqs on every node, each
// once; the log carries them in fewer messages than entries.
func batchesOneOrder(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 3, Config{})
	var subs []*client
	for _, n := range ns {
		subs = append(subs, subscriber(t, n, "/b"))
	}
	const goroutines, writes = 8, 25
	var wg sync.WaitGroup
	for i, n := range ns {
		for g := range goroutines {
			wg.Go(func() {
				for k := range writes {
					msg := fmt.Sprintf(`{"method":"PUT","resource":"/b/n%dg%dk%d","entity":{"k":%d},"persistent":true}`, i, g, k, k)
					if c := call(t, n, msg); c != "success" {
						t.Errorf("PUT: %s", c)
					}
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	total := len(ns) * goroutines * writes
	var first []string
	for i, s := range subs {
		s.expect(total)
		u := updates(t, s)
		if i == 0 {
			first = u
		} else if !reflect.DeepEqual(u, first) {
			t.Fatalf("node %d applied another order:\n%v\nnode 0:\n%v", i, u, first)
		}
	}
	msgs, entries, most := logBatches(t, ns[0])
	t.Logf("%d writes: %d entries in %d messages of the log, at most %d in one", total, entries, msgs, most)
	if entries < total || msgs >= entries || most < 2 {
		t.Fatalf("%d entries in %d messages of the log (at most %d in one): no batching", entries, msgs, most)
	}
}

// batchStoredTwice: a batch stored again, with its message id (within
// JetStream's duplicate window) or with another (beyond it), is applied
// once.
func batchStoredTwice(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 2, Config{})
	var subs []*client
	for _, n := range ns {
		subs = append(subs, subscriber(t, n, "/d"))
	}
	if c := call(t, ns[0], `{"method":"POST","resource":"/d","entity":{"once":true},"persistent":true}`); c != "success" {
		t.Fatal(c)
	}
	info, err := ns[0].f.stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	m := getMsg(t, ns[0], info.State.LastSeq)
	b, err := decodeBatch(m.Data)
	if err != nil || b.Node != ns[0].f.Node() || len(b.Entries) != 1 {
		t.Fatalf("the POST's message: %+v, %v", b, err)
	}
	id := m.Header.Get(jetstream.MsgIDHeader)
	if id != fmt.Sprintf("%s-%d", b.Node, b.N) {
		t.Fatalf("message id %q of batch %d of %s", id, b.N, b.Node)
	}
	for _, mid := range []string{id, id + "-again"} {
		ack, err := ns[1].f.js.Publish(t.Context(), ns[1].f.subject, m.Data, jetstream.WithMsgID(mid))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("stored again with message id %s: position %d, duplicate %v", mid, ack.Sequence, ack.Duplicate)
	}
	if c := call(t, ns[1], `{"method":"PUT","resource":"/d/marker","entity":{},"persistent":true}`); c != "success" {
		t.Fatal(c)
	}
	var first []string
	for i, s := range subs {
		s.expect(2)
		for s.notes[len(s.notes)-1]["update"] != "marker" {
			s.expect(len(s.notes) + 1)
		}
		u := updates(t, s)
		if len(u) != 2 {
			t.Fatalf("node %d: %v, want the POST once then the marker", i, u)
		}
		if i == 0 {
			first = u
		} else if !reflect.DeepEqual(u, first) {
			t.Fatalf("node %d: %v, node 0: %v", i, u, first)
		}
	}
}

// proposerKilled: a node killed (its NATS connection closed abruptly)
// while its batches are in flight, cycle after cycle: every write it
// acknowledged is applied on the surviving nodes, none twice, with the
// same seqs everywhere.
func proposerKilled(t *testing.T, cl *natstest.Cluster) {
	cfg := Config{Name: natsName(t.Name())}
	ns := []*node{startNode(t, cl, cfg), startNode(t, cl, cfg)}
	var subs []*client
	for _, n := range ns {
		subs = append(subs, subscriber(t, n, "/k"))
	}
	acked := map[string]bool{}
	const cycles, goroutines = 5, 8
	for cycle := range cycles {
		victim := startNode(t, cl, cfg)
		var mu sync.Mutex
		var done atomic.Int64
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for k := 0; ; k++ {
					name := fmt.Sprintf("c%dg%dk%d", cycle, g, k)
					c := call(t, victim, `{"method":"PUT","resource":"/k/`+name+`","entity":{},"persistent":true}`)
					if c != "success" {
						return // killed
					}
					mu.Lock()
					acked[name] = true
					mu.Unlock()
					done.Add(1)
				}
			})
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		for done.Load() < 40 && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		late := ctx.Err() != nil
		cancel()
		if late {
			t.Fatalf("cycle %d: %d writes acknowledged in a minute, want 40", cycle, done.Load())
		}
		victim.kill()
		wg.Wait()
	}
	if c := call(t, ns[0], `{"method":"PUT","resource":"/k/marker","entity":{},"persistent":true}`); c != "success" {
		t.Fatal(c)
	}
	var first []string
	for i, s := range subs {
		for len(s.notes) == 0 || s.notes[len(s.notes)-1]["update"] != "marker" {
			s.expect(len(s.notes) + 1)
		}
		u := updates(t, s) // none twice
		seen := map[string]bool{}
		for _, n := range s.notes {
			seen[changed(n)] = true
		}
		for name := range acked {
			if !seen["update "+name] {
				t.Fatalf("node %d: acknowledged write %s lost", i, name)
			}
		}
		if i == 0 {
			first = u
		} else if !reflect.DeepEqual(u, first) {
			t.Fatalf("node %d applied another order:\n%v\nnode 0:\n%v", i, u, first)
		}
	}
	t.Logf("%d cycles: %d writes acknowledged, %d applied", cycles, len(acked), len(first)-1)
}

// countsWhereNeeded: the other nodes report the count of a NOTIFY only
// when its proposer waits for sent_count (it has a msg_id), in one message
// per batch of the proposer's.
func countsWhereNeeded(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 3, Config{})
	for _, n := range ns {
		subscriber(t, n, "/n")
	}
	spy, err := nats.Connect(cl.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Close()
	reports, err := spy.SubscribeSync(ns[0].f.countSubject(ns[0].f.Node()))
	if err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	// NOTIFYs without msg_id, which nobody asks the count of: a path
	// without subscribers, so that a count of one would be 0.
	quiet := connect(t, ns[0], "")
	for range 20 {
		quiet.c.Exec(t.Context(), []byte(`{"method":"NOTIFY","resource":"/nobody","data":1}`))
	}
	// NOTIFYs with msg_id from many goroutines: each one subscriber per
	// node.
	const goroutines, each = 8, 10
	var wg sync.WaitGroup
	for range goroutines {
		c := connect(t, ns[0], "")
		wg.Go(func() {
			for range each {
				if r := c.do(`{"method":"NOTIFY","resource":"/n","data":2}`); r["sent_count"] != float64(3) {
					t.Errorf("NOTIFY: %v, want sent_count 3", r)
				}
			}
		})
	}
	wg.Wait()
	// Every count of the NOTIFYs with msg_id reached the proposer, so its
	// copy reaches the spy's subscription (or the bound runs out).
	lines, msgs := map[string]int{}, 0
	for lines[ns[1].f.Node()] < goroutines*each || lines[ns[2].f.Node()] < goroutines*each {
		m, err := reports.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("counts of %d NOTIFYs from each other node awaited, got %v: %v", goroutines*each, lines, err)
		}
		msgs++
		ls := strings.Split(string(m.Data), "\n")
		for _, l := range ls[1:] {
			if !strings.HasSuffix(l, " 1") {
				t.Fatalf("count %q from %s: a NOTIFY nobody asked the count of, or a wrong count", l, ls[0])
			}
			lines[ls[0]]++
		}
	}
	t.Logf("%d counts in %d messages", 2*goroutines*each, msgs)
	if msgs >= 2*goroutines*each {
		t.Fatalf("%d counts in %d messages: one message per NOTIFY", 2*goroutines*each, msgs)
	}
}

// pipelined: one connection sends many writes without waiting for their
// replies, then a read: the writes travel to the log together, the
// replies come in the connection's order, each after the notification
// its write caused, and the read sees every write before it.
func pipelined(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 2, Config{})
	c := connect(t, ns[0], "")
	if r := c.do(`{"method":"SUBSCRIBE","resource":"/pipe"}`); code(r) != "success" {
		t.Fatal(r)
	}
	const writes = 200
	for i := 1; i <= writes; i++ {
		c.c.Exec(t.Context(), fmt.Appendf(nil, `{"method":"PUT","resource":"/pipe/r","entity":{"i":%d},"persistent":true,"msg_id":%d}`, i, 100+i))
	}
	c.c.Exec(t.Context(), []byte(`{"method":"GET","resource":"/pipe/r","msg_id":1000}`))
	next := 101
	notified := 0
	for done := false; !done; {
		f := c.read()
		if f == nil {
			t.Fatalf("no frame after reply %d", next-1)
		}
		switch {
		case f["notify"] != nil:
			notified++
		case f["msg_id"] == float64(1000):
			if next != 100+writes+1 {
				t.Fatalf("the GET's reply before the reply to write %d", next-100)
			}
			if e, _ := f["entity"].(map[string]any); e["i"] != float64(writes) {
				t.Fatalf("GET after the writes: %v", f)
			}
			done = true
		default:
			if f["msg_id"] != float64(next) || f["code"] != "success" {
				t.Fatalf("reply %v, want the success of msg_id %d", f, next)
			}
			if notified < next-100 {
				t.Fatalf("reply to write %d after %d notifications", next-100, notified)
			}
			next++
		}
	}
	msgs, entries, most := logBatches(t, ns[0])
	t.Logf("%d writes of one connection: %d entries in %d messages of the log, at most %d in one", writes, entries, msgs, most)
	if most < 2 {
		t.Fatalf("%d entries in %d messages: the connection's writes went one at a time", entries, msgs)
	}
}
