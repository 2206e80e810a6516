package channel

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

// subSet against a map, through its move from slice to map and back to
// few paths, with removals while walking it.
func TestSubSet(t *testing.T) {
	for _, n := range []int{1, maxFewSubs, maxFewSubs + 1, 3 * maxFewSubs} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var s subSet
			want := map[string]struct{}{}
			check := func(when string) {
				t.Helper()
				if s.len() != len(want) {
					t.Fatalf("%s: len %d, want %d", when, s.len(), len(want))
				}
				got := slices.Sorted(s.all())
				if !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
					t.Fatalf("%s: %v, want %v", when, got, slices.Sorted(maps.Keys(want)))
				}
				for p := range want {
					if !s.has(p) {
						t.Fatalf("%s: has(%s) false", when, p)
					}
				}
				if s.has("/none") {
					t.Fatalf("%s: has(/none)", when)
				}
			}
			for i := range n {
				p := fmt.Sprintf("/p%d", i)
				s.add(p)
				want[p] = struct{}{}
			}
			check("added")
			if s.remove("/none") {
				t.Error("remove(/none) = true")
			}
			if !s.remove("/p0") || s.remove("/p0") {
				t.Error("remove(/p0) twice: want true, then false")
			}
			delete(want, "/p0")
			check("removed /p0")
			// Remove every other path while walking: each is seen once.
			seen := map[string]int{}
			for p := range s.all() {
				seen[p]++
				var i int
				fmt.Sscanf(p, "/p%d", &i)
				if i%2 == 1 {
					if !s.remove(p) {
						t.Fatalf("remove(%s) while walking = false", p)
					}
					delete(want, p)
				}
			}
			for p, k := range seen {
				if k != 1 {
					t.Errorf("%s seen %d times", p, k)
				}
			}
			if len(seen) != n-1 {
				t.Errorf("walk saw %d paths, want %d", len(seen), n-1)
			}
			check("removed the odd ones while walking")
			for p := range s.all() {
				s.remove(p)
			}
			want = map[string]struct{}{}
			check("removed all while walking")
			if n <= maxFewSubs && (s.few != nil || s.many != nil) {
				t.Errorf("empty set of few paths holds %v, %v", s.few, s.many)
			}
		})
	}
}
