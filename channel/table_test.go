package channel

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestTable checks the tree's index against a map through random puts,
// replacements and deletions, growing to thousands of elements and
// shrinking back to none: every element is found, every removed one is
// not, and the count and the walk agree.
func TestTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tb table[*node]
	want := map[string]*node{}
	check := func(step int) {
		t.Helper()
		if tb.len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, tb.len(), len(want))
		}
		for k, n := range want {
			if got := tb.get(k); got != n {
				t.Fatalf("step %d: get(%q) = %p, want %p", step, k, got, n)
			}
		}
		seen := 0
		for n := range tb.all() {
			if want[n.path] != n {
				t.Fatalf("step %d: the walk yields %q, not in the set", step, n.path)
			}
			seen++
		}
		if seen != len(want) {
			t.Fatalf("step %d: the walk yields %d, want %d", step, seen, len(want))
		}
	}
	for step := range 40_000 {
		// Grow for the first half, then shrink: keys from a small range
		// so that puts replace and deletions hit.
		k := fmt.Sprintf("/p/%d", rng.IntN(3000))
		grow := step < 20_000 && rng.IntN(4) != 0 || step >= 20_000 && rng.IntN(4) == 0
		if grow {
			n := &node{path: k}
			tb.put(n)
			want[k] = n
		} else {
			tb.del(k)
			delete(want, k)
			if tb.get(k) != nil {
				t.Fatalf("step %d: %q found after its deletion", step, k)
			}
		}
		if step%997 == 0 {
			check(step)
		}
	}
	for k := range want {
		tb.del(k)
		delete(want, k)
	}
	check(-1)
	if len(tb.slots) != minSlots {
		t.Errorf("an empty table keeps %d slots, want %d", len(tb.slots), minSlots)
	}
	if tb.get("/p/1") != nil {
		t.Error("an empty table finds an element")
	}
}

// BenchmarkTable compares the tree's index with the map it replaced on
// 100,000 paths: a lookup that finds its node, and one that does not
// (what create does for a path that has none).
func BenchmarkTable(b *testing.B) {
	const n = 100_000
	var tb table[*node]
	m := make(map[string]*node)
	hits, misses := make([]string, n), make([]string, n)
	for i := range n {
		p := &node{path: fmt.Sprintf("/bench/t1/c%d/%d", i%256, i)}
		tb.put(p)
		m[p.path] = p
		hits[i] = p.path
		misses[i] = fmt.Sprintf("/bench/t1/c%d/%d", i%256, n+i)
	}
	for _, c := range []struct {
		name string
		keys []string
	}{{"hit", hits}, {"miss", misses}} {
		b.Run("table/"+c.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				tb.get(c.keys[i%n])
			}
		})
		b.Run("map/"+c.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				_ = m[c.keys[i%n]]
			}
		})
	}
}
