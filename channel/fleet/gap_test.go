package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channel/fleet/natstest"
)

// gapRebuild: a node whose consumer is held while the others write past
// a snapshot and the log is trimmed under it finds the gap when it goes
// on, reports not ready while no snapshot covers the gap, then ends its
// clients with close code 1012, rebuilds from the newest snapshot and the
// tail without a restart, and ends with the state and seq of the others,
// ready again.
func gapRebuild(t *testing.T, cl *natstest.Cluster) {
	cfg := Config{SnapshotEvery: 5, SnapshotInterval: -1, Keep: -1, Heartbeat: 2 * time.Second}
	ns := fleet(t, cl, 3, cfg)
	// The node with the smallest id takes the snapshots; the one with the
	// largest falls behind.
	sort.Slice(ns, func(i, j int) bool { return ns[i].f.Node() < ns[j].f.Node() })
	lag := ns[2]
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	lc := connect(t, lag, "")
	if r := lc.do(`{"method":"PUT","resource":"/gap/mine","entity":{"t":1}}`); code(r) != "success" {
		t.Fatal(r)
	}
	if r := lc.do(`{"method":"SUBSCRIBE","resource":"/gap"}`); code(r) != "success" {
		t.Fatal(r)
	}
	h := make(chan struct{})
	lag.f.held.Store(&h)
	held := lag.tree.Applied()

	w := connect(t, ns[0], "")
	posts := 0
	post := func() {
		t.Helper()
		if r := w.do(fmt.Sprintf(`{"method":"POST","resource":"/gap","entity":{"i":%d},"persistent":true}`, posts)); code(r) != "success" {
			t.Fatal(r)
		}
		posts++
	}
	newest := func() snapRef {
		t.Helper()
		s, err := ns[0].f.newest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	lastSeq := func() uint64 {
		t.Helper()
		info, err := ns[0].f.stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	// Write until a snapshot lies past what the held node applied.
	var s1 snapRef
	for s1 = newest(); s1.pos <= held+1; s1 = newest() {
		if ctx.Err() != nil {
			t.Fatalf("no snapshot past %d in time", held+1)
		}
		post()
	}
	// Then trim the log past the snapshot: no snapshot covers the gap yet
	// (the next one comes 5 entries later).
	for lastSeq() < s1.pos+2 {
		post()
	}
	last := lastSeq()
	if err := ns[0].f.stream.Purge(ctx, jetstream.WithPurgeSequence(last)); err != nil {
		t.Fatal(err)
	}
	if s := newest(); s.pos >= last-1 {
		t.Fatalf("a snapshot at %d covers the gap below %d already", s.pos, last)
	}
	lag.f.held.Store(nil)
	close(h)

	// The gap: not ready, and says why. Unless a snapshot that covers it
	// was stored before the node found it: the snapshotting node stores
	// one apart, a moment after it applied the writes above, so that
	// newest() may not have shown it yet; the node then rebuilds at once
	// and its client ends with 1012 (seen in a CI run under load).
	// ended reads lc's frames for at most d and reports whether it ended,
	// which it must with 1012.
	ended := func(d time.Duration) (bool, error) {
		t.Helper()
		rctx, rcancel := context.WithTimeout(ctx, d)
		defer rcancel()
		_, err := lc.c.Next(rctx, nil)
		var g *channel.Gone
		if errors.As(err, &g) {
			if g.Code != 1012 {
				t.Fatalf("client of the lagging node ended with %d %q, want 1012", g.Code, g.Reason)
			}
			return true, nil
		}
		return false, err
	}
	rebuilt := false
	for !rebuilt {
		err := lag.f.Ready(ctx)
		if err != nil && strings.Contains(err.Error(), "lost entries") {
			t.Logf("lagging node: %v", err)
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the lagging node did not report the gap in time (last: %v)", err)
		}
		if rebuilt, _ = ended(10 * time.Millisecond); rebuilt {
			t.Logf("a snapshot covering the gap came before the node found it: rebuilt at once")
		}
	}
	// A snapshot that covers the gap: the node rebuilds and ends its
	// clients with 1012.
	for newest().pos < last-1 {
		if ctx.Err() != nil {
			t.Fatal("no snapshot covering the gap in time")
		}
		post()
	}
	for !rebuilt {
		var err error
		if rebuilt, err = ended(30 * time.Second); err != nil {
			t.Fatalf("client of the lagging node: %v, want its end with 1012", err)
		}
	}
	for {
		err := lag.f.Ready(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the lagging node not ready again in time: %v", err)
		}
	}
	// Its transient resource went with its connection, everywhere.
	for {
		r := w.do(`{"method":"GET","resource":"/gap/mine"}`)
		if code(r) != "success" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("/gap/mine outlived its connection: %v", r)
		}
	}
	post()
	end := lastSeq()
	var snaps [][]byte
	for _, n := range ns {
		if err := n.tree.WaitApplied(ctx, end); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := n.tree.Snapshot(&b); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, b.Bytes())
	}
	for i := 1; i < len(snaps); i++ {
		if !bytes.Equal(snaps[0], snaps[i]) {
			t.Fatalf("node %d differs from node 0:\n%s\n%s", i, snaps[i], snaps[0])
		}
	}
	c := connect(t, lag, "")
	a, b := w.do(`{"method":"GET","resource":"/gap?deep=2"}`), c.do(`{"method":"GET","resource":"/gap?deep=2"}`)
	delete(a, "msg_id")
	delete(b, "msg_id")
	if fmt.Sprint(a) != fmt.Sprint(b) || len(b["entity"].([]any)) != posts {
		t.Fatalf("healthy node %v\nrebuilt node %v", a, b)
	}
}
