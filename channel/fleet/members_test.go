package fleet

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// TestPredecessors: each node watches its k predecessors on the ring, so
// each node is watched by its k successors.
func TestPredecessors(t *testing.T) {
	ring := []string{"a", "b", "c", "d", "e"}
	tests := []struct {
		self string
		ring []string
		k    int
		want []string
	}{
		{"c", ring, 3, []string{"b", "a", "e"}},
		{"a", ring, 3, []string{"e", "d", "c"}},
		{"a", []string{"a", "b"}, 3, []string{"b"}},
		{"a", []string{"a"}, 3, nil},
		{"z", ring, 3, nil},
	}
	for _, tt := range tests {
		if got := predecessors(tt.self, tt.ring, tt.k); !slices.Equal(got, tt.want) {
			t.Errorf("predecessors(%s, %v, %d) = %v, want %v", tt.self, tt.ring, tt.k, got, tt.want)
		}
	}
	// Every node is watched by exactly k others.
	by := map[string]int{}
	for _, n := range ring {
		for _, p := range predecessors(n, ring, 3) {
			by[p]++
		}
	}
	for _, n := range ring {
		if by[n] != 3 {
			t.Errorf("%s watched by %d nodes, want 3", n, by[n])
		}
	}
}

// TestRing: in a fleet of six, every node counts six live nodes while
// each but the one with the smallest id watches three others' heartbeats;
// a node killed (its connections owning a transient resource) is found
// by its watchers: its death is applied on every node, its member key
// purged, and the others count five.
func TestRing(t *testing.T) {
	cl := natstest.Start(t, 3)
	const hb = 2 * time.Second
	ns := fleet(t, cl, 6, Config{Heartbeat: hb})
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	smallest := ns[0]
	for _, n := range ns {
		if n.f.Node() < smallest.f.Node() {
			smallest = n
		}
	}
	// Awaited: every node counts six and watches its share.
	settled := func() error {
		for _, n := range ns {
			if l := n.f.Live(); len(l) != 6 {
				return fmt.Errorf("node %s counts %d live nodes, want 6", n.f.Node(), len(l))
			}
			want := watchers
			if n == smallest {
				want = 5
			}
			n.f.mu.Lock()
			got, watching := len(n.f.sus), n.f.watching
			n.f.mu.Unlock()
			if got != want || !watching {
				return fmt.Errorf("node %s watches %d nodes (watching %v), want %d", n.f.Node(), got, watching, want)
			}
		}
		return nil
	}
	for err := settled(); err != nil; err = settled() {
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	victim := ns[1]
	if victim == smallest {
		victim = ns[2]
	}
	owner := connect(t, victim, "")
	if r := owner.do(`{"method":"PUT","resource":"/online/v","entity":{"on":true}}`); code(r) != "success" {
		t.Fatal(r)
	}
	var rest []*node
	for _, n := range ns {
		if n != victim {
			rest = append(rest, n)
			if err := n.tree.WaitApplied(ctx, victim.tree.Applied()); err != nil {
				t.Fatal(err)
			}
		}
	}
	victim.kill()
	killed := time.Now()
	defer func() { t.Logf("the victim found dead on all in %v", time.Since(killed)) }()
	member := func(n *node) bool {
		n.f.mu.Lock()
		defer n.f.mu.Unlock()
		return n.f.member[victim.f.Node()]
	}
	for _, n := range rest {
		for !n.tree.Dead(victim.f.Node()) || len(n.f.Live()) != 5 || member(n) {
			if ctx.Err() != nil {
				t.Fatalf("node %s: victim dead %v, live %v, member %v", n.f.Node(), n.tree.Dead(victim.f.Node()), n.f.Live(), member(n))
			}
			time.Sleep(50 * time.Millisecond)
		}
		c := connect(t, n, "")
		if r := c.do(`{"method":"GET","resource":"/online/v"}`); code(r) != "failed: not found" {
			t.Errorf("node %s: the victim's transient resource: %v", n.f.Node(), r)
		}
	}
}
