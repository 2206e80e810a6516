package fleet

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channel/fleet/natstest"
)

// divergence: a node whose tree applied one entry the log does not hold
// finds, from the heartbeats, that it differs from both others at the
// same position, and reports itself divergent and not ready; the two
// healthy nodes see that it differs from them, stay ready and do not
// take themselves for divergent.
func divergence(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 3, Config{Heartbeat: 2 * time.Second})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	w := connect(t, ns[0], "")
	for i := range 3 {
		if r := w.do(fmt.Sprintf(`{"method":"PUT","resource":"/div/r%d","entity":{},"persistent":true}`, i)); code(r) != "success" {
			t.Fatal(r)
		}
	}
	last, err := ns[0].f.Barrier(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		if err := n.tree.WaitApplied(ctx, last); err != nil {
			t.Fatal(err)
		}
	}
	// Healthy so far: every node ready once it compared with the others.
	for _, n := range ns {
		if err := n.f.Ready(ctx); err != nil || n.f.Divergent() {
			t.Fatalf("node %s before the change: ready %v, divergent %v", n.f.Node(), err, n.f.Divergent())
		}
	}
	// The fleet is idle: apply to node 1's tree, at the position it is at,
	// a batch of a node that never wrote to the log.
	bad := ns[1]
	extra := []byte(`{"v":2,"k":"msg","p":"x1","node":"x","call":true,"at":1}` + "\n" + `{"method":"PUT","resource":"/div/extra","entity":{},"persistent":true}`)
	bad.tree.Apply(bad.tree.Applied(), channel.Batch{Node: "x", N: 1, Entries: [][]byte{extra}})
	// A node keeps the first mark of a position: the one of the position
	// above was taken before the change, maybe. The next entry of the log
	// takes every node to a position none has marked, where the changed
	// node's chained hash differs.
	if r := w.do(`{"method":"PUT","resource":"/div/after","entity":{},"persistent":true}`); code(r) != "success" {
		t.Fatal(r)
	}
	if last, err = ns[0].f.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		if err := n.tree.WaitApplied(ctx, last); err != nil {
			t.Fatal(err)
		}
	}
	for ; ; time.Sleep(50 * time.Millisecond) {
		err := bad.f.Ready(ctx)
		if err != nil && strings.Contains(err.Error(), "diverged") {
			t.Logf("changed node: %v", err)
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the changed node did not report itself divergent in time (last: %v)", err)
		}
	}
	if !bad.f.Divergent() {
		t.Fatal("Divergent() false on the divergent node")
	}
	// The healthy nodes saw it differ, and stay ready.
	for _, n := range []*node{ns[0], ns[2]} {
		for {
			n.f.mu.Lock()
			seen := n.f.differs[bad.f.Node()]
			n.f.mu.Unlock()
			if seen {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("node %s did not see node %s differ in time", n.f.Node(), bad.f.Node())
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := n.f.Ready(ctx); err != nil || n.f.Divergent() {
			t.Fatalf("healthy node %s: ready %v, divergent %v", n.f.Node(), err, n.f.Divergent())
		}
	}
}
