package channel

import (
	"fmt"
	"slices"
	"testing"
)

// TestOwnedSet drives a connection's set of owned entities through taking,
// letting go, taking again (an entity with an entry left behind) and
// passing to another connection, and checks after each step what the set
// yields, its count, and that its slice stays within twice its size.
func TestOwnedSet(t *testing.T) {
	tr := &Tree{}
	c, d := &connection{}, &connection{}
	ns := make([]*node, 200)
	for i := range ns {
		ns[i] = &node{path: fmt.Sprintf("/o/%d", i)}
	}
	want := map[*connection][]*node{}
	take := func(o *connection, n *node) {
		if n.owner != nil {
			tr.disown(n.owner, n)
			want[n.owner] = slices.DeleteFunc(want[n.owner], func(m *node) bool { return m == n })
		}
		n.owner = o
		tr.own(o, n)
		want[o] = append(want[o], n)
	}
	drop := func(n *node) {
		tr.disown(n.owner, n)
		want[n.owner] = slices.DeleteFunc(want[n.owner], func(m *node) bool { return m == n })
		n.owner = nil
	}
	check := func(step string) {
		t.Helper()
		for _, o := range []*connection{c, d} {
			var got []*node
			for n := range tr.ownedAll(o) {
				got = append(got, n)
			}
			if !slices.Equal(got, want[o]) {
				t.Fatalf("%s: yields %d entities, want %d in the order taken", step, len(got), len(want[o]))
			}
			if n := tr.ownedLen(o); n != len(want[o]) {
				t.Fatalf("%s: ownedLen %d, want %d", step, n, len(want[o]))
			}
			if s := tr.owns[o]; s != nil && len(s.nodes) > 2*s.n+20 {
				t.Fatalf("%s: %d entries for %d entities", step, len(s.nodes), s.n)
			}
		}
	}
	for _, n := range ns {
		take(c, n)
	}
	check("200 taken")
	for i := 0; i < len(ns); i += 2 {
		drop(ns[i])
	}
	check("every other let go")
	for i := 0; i < 40; i += 2 {
		take(c, ns[i]) // its old entry was compacted away by the walk
	}
	check("20 taken again")
	for i := 101; i < 121; i += 2 {
		drop(ns[i])
	}
	for i := 101; i < 121; i += 2 {
		take(c, ns[i]) // its old entry is still there: two entries
	}
	check("10 let go and taken again")
	for i := 1; i < 100; i += 2 {
		take(d, ns[i])
	}
	check("50 passed to another connection")
	// Letting go of the one being yielded is allowed.
	for n := range tr.ownedAll(c) {
		drop(n)
	}
	check("all of c's let go during a walk")
	tr.disownAll(d)
	want[d] = nil
	for _, n := range ns {
		if n.bits&bitOwned != 0 {
			t.Fatalf("%s still marked owned after disownAll", n.path)
		}
	}
	check("d's forgotten")
	// A set of one, and back.
	take(c, ns[0])
	take(c, ns[1])
	drop(ns[0])
	drop(ns[1])
	take(c, ns[0])
	check("one again")
}
