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
// path, a ghost by its connection id): open addressing with linear
// probing, at most 3/4 full, in a slice of pointers and a slice of one
// byte a slot (empty, or seven bits of the key's hash) that a probe reads
// before it follows a pointer to compare keys. A slot is 9 bytes, where a
// map[string]*T spends 25 (the key's string header, the pointer, a
// control byte), its groups at most 7/8 full and often half: every node
// of a fleet indexes every connection's transient entity and its owner's
// ghost, and a smaller index is less to keep and less for the collector
// to scan (issue 36, docs/fleet.md §13). The key is not kept: the
// element gives it. The zero value is empty; it is not safe for
// concurrent use (the tree's lock guards it).
type table[P keyed] struct {
	slots []P     // len a power of two, or 0
	tags  []uint8 // per slot: 0 empty, else tagOf its key's hash
	n     int
	seed  maphash.Seed
}

// minSlots is the size a table starts with and never shrinks below.
const minSlots = 8

// len returns the number of elements.
func (t *table[P]) len() int { return t.n }

// hash returns the home slot of key k (where it is first looked for) and
// its tag.
func (t *table[P]) hash(k string) (int, uint8) {
	h := maphash.String(t.seed, k)
	return int(h & uint64(len(t.slots)-1)), uint8(h>>57) | 0x80
}

// find returns the slot of the element with key k, or the empty slot
// where it would go and false.
func (t *table[P]) find(k string) (int, bool) {
	mask := len(t.slots) - 1
	i, tag := t.hash(k)
	for ; ; i = (i + 1) & mask {
		switch t.tags[i] {
		case 0:
			return i, false
		case tag:
			if t.slots[i].key() == k {
				return i, true
			}
		}
	}
}

// get returns the element with key k, or the zero P.
func (t *table[P]) get(k string) P {
	if t.n == 0 {
		var zero P
		return zero
	}
	i, ok := t.find(k)
	if !ok {
		var zero P
		return zero
	}
	return t.slots[i]
}

// put adds p, replacing the element with p's key if there is one.
func (t *table[P]) put(p P) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(max(minSlots, len(t.slots)*2))
	}
	k := p.key()
	i, ok := t.find(k)
	if !ok {
		_, t.tags[i] = t.hash(k)
		t.n++
	}
	t.slots[i] = p
}

// del removes the element with key k, if there is one. The elements
// after it in its run move back (no tombstones), and a table left at
// most 1/8 full halves.
func (t *table[P]) del(k string) {
	if t.n == 0 {
		return
	}
	i, ok := t.find(k)
	if !ok {
		return
	}
	var zero P
	mask := len(t.slots) - 1
	// Backward shift: an element of the run after i moves to i unless
	// its home is cyclically in (i, j], where it is still found.
	for j := i; ; {
		t.slots[i], t.tags[i] = zero, 0
		for {
			j = (j + 1) & mask
			if t.tags[j] == 0 {
				t.n--
				if t.n*8 <= len(t.slots) && len(t.slots) > minSlots {
					t.resize(len(t.slots) / 2)
				}
				return
			}
			h, _ := t.hash(t.slots[j].key())
			if i <= j && (h <= i || h > j) || i > j && h <= i && h > j {
				t.slots[i], t.tags[i] = t.slots[j], t.tags[j]
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
	t.slots, t.tags = make([]P, size), make([]uint8, size)
	mask := size - 1
	var zero P
	for _, p := range old {
		if p == zero {
			continue
		}
		i, tag := t.hash(p.key())
		for t.tags[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i], t.tags[i] = p, tag
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
