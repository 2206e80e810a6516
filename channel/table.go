package channel

import (
	"hash/maphash"
	"iter"
)

// keyed is what a [table] holds: a pointer that gives its own key.
type keyed interface {
	comparable
	key() string
}

// table is a set of pointers found by the key each gives (a node by its
// path, a ghost by its connection id): one slice of pointers with open
// addressing and linear probing, at most 3/4 full. A slot is 8 bytes,
// where a map[string]*T spends 24 and a control byte on each, with its
// groups at most 7/8 full and often half: every node of a fleet indexes
// every connection's transient entity and its owner's ghost, and a
// smaller index is less to keep and less for the collector to scan
// (issue 36, docs/fleet.md §13). The key is not kept: an element gives
// it, so the table keeps no second string header per entry. The zero
// value is empty; it is not safe for concurrent use (the tree's lock
// guards it).
type table[P keyed] struct {
	slots []P // len a power of two, or 0
	n     int
	seed  maphash.Seed
}

// minSlots is the size a table starts with and never shrinks below.
const minSlots = 8

// len returns the number of elements.
func (t *table[P]) len() int { return t.n }

// home returns the slot where an element with key k is first looked for.
func (t *table[P]) home(k string) int {
	return int(maphash.String(t.seed, k) & uint64(len(t.slots)-1))
}

// get returns the element with key k, or the zero P.
func (t *table[P]) get(k string) P {
	var zero P
	if t.n == 0 {
		return zero
	}
	mask := len(t.slots) - 1
	for i := t.home(k); ; i = (i + 1) & mask {
		p := t.slots[i]
		if p == zero || p.key() == k {
			return p
		}
	}
}

// put adds p, replacing the element with p's key if there is one.
func (t *table[P]) put(p P) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(max(minSlots, len(t.slots)*2))
	}
	var zero P
	k := p.key()
	mask := len(t.slots) - 1
	for i := t.home(k); ; i = (i + 1) & mask {
		q := t.slots[i]
		if q == zero {
			t.slots[i] = p
			t.n++
			return
		}
		if q.key() == k {
			t.slots[i] = p
			return
		}
	}
}

// del removes the element with key k, if there is one. The elements
// after it in its run move back (no tombstones), and a table left at
// most 1/8 full halves.
func (t *table[P]) del(k string) {
	var zero P
	if t.n == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(k)
	for {
		p := t.slots[i]
		if p == zero {
			return
		}
		if p.key() == k {
			break
		}
		i = (i + 1) & mask
	}
	// Backward shift: an element of the run after i moves to i unless
	// its home is cyclically in (i, j], where it is still found.
	for j := i; ; {
		t.slots[i] = zero
		for {
			j = (j + 1) & mask
			q := t.slots[j]
			if q == zero {
				t.n--
				if t.n*8 <= len(t.slots) && len(t.slots) > minSlots {
					t.resize(len(t.slots) / 2)
				}
				return
			}
			h := t.home(q.key())
			if i <= j && (h <= i || h > j) || i > j && h <= i && h > j {
				t.slots[i] = q
				i = j
				break
			}
		}
	}
}

// resize moves the elements to size slots.
func (t *table[P]) resize(size int) {
	old := t.slots
	if old == nil {
		t.seed = maphash.MakeSeed()
	}
	t.slots = make([]P, size)
	var zero P
	mask := size - 1
	for _, p := range old {
		if p == zero {
			continue
		}
		i := t.home(p.key())
		for t.slots[i] != zero {
			i = (i + 1) & mask
		}
		t.slots[i] = p
	}
}

// all yields the elements, in no order. The table must not change
// during the walk.
func (t *table[P]) all() iter.Seq[P] {
	return func(yield func(P) bool) {
		var zero P
		for _, p := range t.slots {
			if p != zero && !yield(p) {
				return
			}
		}
	}
}
