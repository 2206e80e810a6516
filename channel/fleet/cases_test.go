package fleet

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/reso-project/reso/channel/fleet/natstest"
	"github.com/reso-project/reso/internal/natsname"
)

// TestFleet runs the cases of one node's semantics across the nodes of
// fleets on one real three-server JetStream cluster (streams with three
// replicas).
func TestFleet(t *testing.T) {
	cl := natstest.Start(t, 3)
	t.Run("SameSeqEverywhere", func(t *testing.T) { sameSeqEverywhere(t, cl) })
	t.Run("CreateRace", func(t *testing.T) { createRace(t, cl) })
	t.Run("ReadOwnWriteAndOthers", func(t *testing.T) { readWrites(t, cl) })
	t.Run("ReplayOnAnotherNode", func(t *testing.T) { replayElsewhere(t, cl) })
	t.Run("TransientEnd", func(t *testing.T) { transientEnd(t, cl) })
	t.Run("NotifyCountsFleet", func(t *testing.T) { notifyCounts(t, cl) })
	t.Run("LateJoiner", func(t *testing.T) { lateJoiner(t, cl) })
	t.Run("LateJoinerFromSnapshot", func(t *testing.T) { lateFromSnapshot(t, cl) })
	t.Run("FormatVersion", func(t *testing.T) { formatVersion(t, cl) })
	t.Run("Epoch", func(t *testing.T) { epochEverywhere(t, cl) })
	t.Run("GapRebuild", func(t *testing.T) { gapRebuild(t, cl) })
	t.Run("Divergence", func(t *testing.T) { divergence(t, cl) })
	t.Run("PositionLag", func(t *testing.T) { positionLag(t, cl) })
	t.Run("ReadyDead", func(t *testing.T) { readyDead(t, cl) })
	t.Run("AdmitBehind", func(t *testing.T) { admitBehind(t, cl) })
	t.Run("DownloadChunks", func(t *testing.T) { downloadChunks(t, cl) })
	t.Run("LargeBatches", func(t *testing.T) { largeBatches(t, cl) })
}

// sameSeqEverywhere: writes proposed on every node reach the subscribers
// of every node as the same notifications with the same seqs, in order.
func sameSeqEverywhere(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 3, Config{})
	var subs []*client
	for _, n := range ns {
		c := connect(t, n, "")
		if r := c.do(`{"method":"SUBSCRIBE","resource":"/room"}`); code(r) != "success" {
			t.Fatal(r)
		}
		subs = append(subs, c)
	}
	var writers []*client
	for _, n := range ns {
		writers = append(writers, connect(t, n, ""))
	}
	const rounds = 10
	var wg sync.WaitGroup
	for i, w := range writers {
		wg.Go(func() {
			for j := range rounds {
				r := w.do(fmt.Sprintf(`{"method":"PUT","resource":"/room/w%d","entity":{"j":%d},"persistent":true}`, i, j))
				if code(r) != "success" {
					t.Errorf("PUT: %v", r)
				}
			}
		})
	}
	wg.Wait()
	for _, s := range subs {
		s.expect(3 * rounds)
	}
	for i, s := range subs[1:] {
		if !reflect.DeepEqual(s.notes, subs[0].notes) {
			t.Fatalf("node %d delivered\n%v\nnode 0\n%v", i+1, s.notes, subs[0].notes)
		}
	}
	seqs := subs[0].seqs()
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("seqs not consecutive: %v", seqs)
		}
	}
	for _, n := range ns {
		if a := n.tree.Applied(); a < uint64(3*rounds) {
			t.Fatalf("node applied %d entries, want at least %d", a, 3*rounds)
		}
	}
}

// createRace: two clients on two nodes POST the same child id at once:
// exactly one gets success, the other exists.
func createRace(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 2, Config{})
	a, b := connect(t, ns[0], ""), connect(t, ns[1], "")
	// Awaited: each node applies its own writes. Right after a fleet is
	// created a node's consumer of the log may deliver nothing for up to
	// 10 s (until the NATS client notices the missing heartbeats of its
	// first pull and starts it over), and a write then answers unavailable
	// although the log holds it.
	for _, c := range []*client{a, b} {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		for code(c.do(`{"method":"POST","resource":"/warm","entity":{},"persistent":true}`)) != "success" {
			if ctx.Err() != nil {
				t.Fatal("no write applied on its node a minute after the fleet started")
			}
		}
		cancel()
	}
	for i := range 20 {
		msg := fmt.Sprintf(`{"method":"POST","resource":"/race","id":"x%d","entity":{"i":%d},"persistent":true}`, i, i)
		var ra, rb map[string]any
		var wg sync.WaitGroup
		wg.Go(func() { ra = a.do(msg) })
		wg.Go(func() { rb = b.do(msg) })
		wg.Wait()
		got := []string{code(ra), code(rb)}
		if !(got[0] == "success" && got[1] == "failed: exists" || got[1] == "success" && got[0] == "failed: exists") {
			t.Fatalf("race %d: %v (applied: node 0 %d, node 1 %d)", i, got, ns[0].tree.Applied(), ns[1].tree.Applied())
		}
	}
	for _, n := range ns {
		c := connect(t, n, "")
		r := c.do(`{"method":"GET","resource":"/race?deep=0"}`)
		if e := r["entity"].(map[string]any); e["count"] != float64(20) {
			t.Fatalf("GET: %v", r)
		}
	}
}

// readWrites: a write is read back at once on the node of its client and
// on the other nodes (the read barrier).
func readWrites(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 3, Config{})
	var readers []*client
	for _, n := range ns {
		readers = append(readers, connect(t, n, ""))
	}
	for i, n := range ns {
		w := connect(t, n, "")
		for j := range 5 {
			ent := fmt.Sprintf(`{"n":%d,"j":%d}`, i, j)
			if r := w.do(`{"method":"PUT","resource":"/rw","entity":` + ent + `,"persistent":true}`); code(r) != "success" {
				t.Fatal(r)
			}
			for k, rd := range readers {
				r := rd.do(`{"method":"GET","resource":"/rw"}`)
				if e, _ := r["entity"].(map[string]any); e == nil || e["n"] != float64(i) || e["j"] != float64(j) {
					t.Fatalf("reader on node %d after a PUT on node %d: %v", k, i, r)
				}
			}
		}
	}
}

// replayElsewhere: a client that saw seq s on one node and resubscribes
// with since=s on another gets exactly what it missed.
func replayElsewhere(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 3, Config{})
	a := connect(t, ns[0], "")
	a.do(`{"method":"SUBSCRIBE","resource":"/feed"}`)
	w := connect(t, ns[1], "")
	w.do(`{"method":"POST","resource":"/feed","entity":{"n":0},"persistent":true}`)
	a.expect(1)
	since := a.seqs()[0]
	a.c.Disconnect()
	for i := 1; i <= 5; i++ {
		w.do(fmt.Sprintf(`{"method":"POST","resource":"/feed","entity":{"n":%d},"persistent":true}`, i))
	}
	live := connect(t, ns[2], "")
	b := connect(t, ns[2], "")
	r := b.do(fmt.Sprintf(`{"method":"SUBSCRIBE","resource":"/feed","since":%d}`, since))
	if r["recovered"] != true {
		t.Fatalf("SUBSCRIBE since: %v", r)
	}
	if len(b.notes) != 5 {
		t.Fatalf("replayed %d, want 5: %v", len(b.notes), b.notes)
	}
	for i, n := range b.notes {
		if n["notify"] != "UPDATE" || n["entity"].(map[string]any)["n"] != float64(i+1) {
			t.Fatalf("replay %d: %v", i, n)
		}
	}
	// And nothing twice: the next change comes once, after the replay.
	live.do(`{"method":"POST","resource":"/feed","entity":{"n":6},"persistent":true}`)
	b.expect(6)
	if got := b.seqs(); got[5] != got[4]+1 {
		t.Fatalf("seqs %v", got)
	}
}

// transientEnd: a transient resource of a connection on one node goes,
// with notifications on every node, when that connection ends.
func transientEnd(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 3, Config{})
	owner := connect(t, ns[0], "")
	if r := owner.do(`{"method":"PUT","resource":"/online/alice","entity":{"on":true}}`); code(r) != "success" {
		t.Fatal(r)
	}
	if r := owner.do(`{"method":"PUT","resource":"/online/bob","entity":{"on":true}}`); code(r) != "success" {
		t.Fatal(r)
	}
	var watchers []*client
	for _, n := range ns[1:] {
		c := connect(t, n, "")
		c.do(`{"method":"SUBSCRIBE","resource":"/online"}`)
		watchers = append(watchers, c)
	}
	owner.c.Disconnect()
	for _, w := range watchers {
		w.expect(2)
		for _, n := range w.notes {
			if n["notify"] != "UPDATE" || n["delete"] == nil {
				t.Fatalf("%v", w.notes)
			}
		}
		if r := w.do(`{"method":"GET","resource":"/online/alice"}`); code(r) != "failed: not found" {
			t.Fatal(r)
		}
	}
	if !reflect.DeepEqual(watchers[0].notes, watchers[1].notes) {
		t.Fatalf("%v\n%v", watchers[0].notes, watchers[1].notes)
	}
}

// notifyCounts: sent_count counts the receivers on every node.
func notifyCounts(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 3, Config{})
	sender := connect(t, ns[0], "")
	if r := sender.do(`{"method":"NOTIFY","resource":"/bell","data":1}`); code(r) != "failed: no subscriber" {
		t.Fatalf("NOTIFY without subscribers: %v", r)
	}
	for i, n := range ns {
		for range i + 1 { // 1 on node 0, 2 on node 1, 3 on node 2
			c := connect(t, n, "")
			c.do(`{"method":"SUBSCRIBE","resource":"/bell"}`)
		}
	}
	// The nodes' heartbeats are seen within a third of the timeout.
	deadline := time.Now().Add(10 * time.Second)
	for len(ns[0].f.Live()) < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if r := sender.do(`{"method":"NOTIFY","resource":"/bell","data":2}`); r["sent_count"] != float64(6) {
		t.Fatalf("NOTIFY: %v", r)
	}
}

// lateJoiner: a node started after the writes has the same tree and the
// same seq as the others, and its seq continues theirs.
func lateJoiner(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 2, Config{})
	w := connect(t, ns[0], "")
	for i := range 5 {
		w.do(fmt.Sprintf(`{"method":"PUT","resource":"/doc/p%d","entity":{"i":%d},"persistent":true}`, i, i))
	}
	s := connect(t, ns[1], "")
	s.do(`{"method":"SUBSCRIBE","resource":"/doc"}`)
	late := startNode(t, cl, Config{Name: fleetName(t)})
	l := connect(t, late, "")
	l.do(`{"method":"SUBSCRIBE","resource":"/doc"}`)
	r := l.do(`{"method":"GET","resource":"/doc"}`)
	if fmt.Sprint(r["entity"]) != "[p0 p1 p2 p3 p4]" {
		t.Fatalf("late GET: %v", r)
	}
	l.do(`{"method":"PUT","resource":"/doc/p5","entity":{},"persistent":true}`)
	l.expect(1)
	s.expect(1)
	if l.seqs()[0] != 6 || s.seqs()[0] != 6 {
		t.Fatalf("seq on the late node %v, on an early one %v, want 6", l.seqs(), s.seqs())
	}
}

// fleetName is the fleet name fleet gives the test's nodes.
func fleetName(t *testing.T) string {
	return natsName(t.Name())
}

// formatVersion: a node refuses a fleet of another format with one line.
func formatVersion(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 1, Config{})
	up := natsname.Of(fleetName(t), "KV")
	kv, err := ns[0].f.js.KeyValue(t.Context(), up)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(t.Context(), "format", []byte("99")); err != nil {
		t.Fatal(err)
	}
	_, err = Open(t.Context(), ns[0].nc, Config{Name: fleetName(t)})
	want := "fleet " + fleetName(t) + " has format 99; this reso reads format 2"
	if err == nil || err.Error() != want {
		t.Fatalf("Open: %v, want %q", err, want)
	}
}

// lateFromSnapshot: with the log trimmed below a snapshot, a node that
// joins late starts from the snapshot plus the tail: the same tree, the
// same seq, the transient resources of another node's connection (which
// go when it ends, with the same seq everywhere).
func lateFromSnapshot(t *testing.T, cl *natstest.Cluster) {
	// Trimming waits for the heartbeats to say every node applied the
	// entries: short ones make it come soon.
	cfg := Config{SnapshotEvery: 5, SnapshotInterval: -1, Keep: -1, Heartbeat: 2 * time.Second}
	ns := fleet(t, cl, 2, cfg)
	owner := connect(t, ns[0], "")
	if r := owner.do(`{"method":"PUT","resource":"/snap/mine","entity":{"t":1}}`); code(r) != "success" {
		t.Fatal(r)
	}
	w := connect(t, ns[1], "")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	posts := 0
	for ; ; posts++ {
		w.do(fmt.Sprintf(`{"method":"POST","resource":"/snap","entity":{"i":%d},"persistent":true}`, posts))
		info, err := ns[0].f.stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.FirstSeq > 1 {
			t.Logf("log trimmed: first entry %d, last %d", info.State.FirstSeq, info.State.LastSeq)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	posts++
	cfg.Name = fleetName(t)
	late := startNode(t, cl, cfg)
	var subs []*client
	for _, n := range []*node{ns[1], late} {
		c := connect(t, n, "")
		// The late node has the fleet's epoch, from the stream, not the
		// snapshot.
		if r := c.do(`{"method":"SUBSCRIBE","resource":"/snap"}`); r["epoch"] != ns[0].f.Epoch() || n.tree.Epoch() != ns[0].f.Epoch() {
			t.Fatalf("SUBSCRIBE: %v, tree's epoch %q, want epoch %q", r, n.tree.Epoch(), ns[0].f.Epoch())
		}
		subs = append(subs, c)
	}
	a := subs[0].do(`{"method":"GET","resource":"/snap?deep=2"}`)
	b := subs[1].do(`{"method":"GET","resource":"/snap?deep=2"}`)
	if !reflect.DeepEqual(a, b) || len(a["entity"].([]any)) != posts+1 {
		t.Fatalf("early node %v\nlate node %v", a, b)
	}
	owner.c.Disconnect()
	for _, s := range subs {
		s.expect(1)
	}
	if !reflect.DeepEqual(subs[0].notes, subs[1].notes) || subs[0].notes[0]["delete"] != "mine" {
		t.Fatalf("early %v\nlate %v", subs[0].notes, subs[1].notes)
	}
}
