package channel

import (
	"hash/maphash"
	"iter"
	"math/bits"
)

// keyed is what a [table] holds: a pointer that gives its own key.
type keyed interface {
	comparable
	key() string
}

// table is a set of pointers found by the key each gives (a node by its
// path, a ghost by its connection id): open addressing with linear
// probing, at most 3/4 full, in a slice of pointers and a slice of the
// keys' hashes (32 bits, 0 for an empty slot). A probe compares hashes
// before it follows a pointer to compare keys, and a resize or a
// deletion moves elements by their hashes without reading them, which a
// table of hundreds of thousands of nodes would pay in cache misses. An
// element's first slot is given by the high bits of its hash, so the
// elements lie in the order of their hashes (but for runs that wrap
// around the end): a resize reads the old slices and writes the new ones
// from start to end instead of at random, which for a table of a million
// nodes (bench/channel-writes.sh) was most of a growing table's cost. A
// slot is 12 bytes, where a map[string]*T spends 25 (the key's string
// header, the pointer, a control byte), its groups at most 7/8 full and
// often half: every node of a fleet indexes every connection's transient
// entity and its owner's ghost, and a smaller index is less to keep and
// less for the collector to scan, one pointer a slot instead of two
// (issue 36, docs/fleet.md §13). The key is not kept: the element gives
// it. The zero value is empty; it is not safe for concurrent use (the
// tree's lock guards it).
type table[P keyed] struct {
	slots  []P      // len a power of two, or 0
	hashes []uint32 // per slot: 0 empty, else the hash of its key
	n      int
	shift  uint8 // 32 - log2(len(slots)): a hash's home is h >> shift
	seed   maphash.Seed
}

// minSlots is the size a table starts with and never shrinks below.
const minSlots = 8

// len returns the number of elements.
func (t *table[P]) len() int { return t.n }

// hash returns the hash of key k as the table keeps it, never 0; its
// high bits are the slot where k is first looked for (home).
func (t *table[P]) hash(k string) uint32 {
	return max(uint32(maphash.String(t.seed, k)), 1)
}

// home returns the slot where an element whose hash is h is first looked
// for.
func (t *table[P]) home(h uint32) int { return int(h >> t.shift) }

// find returns the slot of the element with key k, whose hash is h, or
// the empty slot where it would go and false.
func (t *table[P]) find(k string, h uint32) (int, bool) {
	mask := len(t.slots) - 1
	for i := t.home(h); ; i = (i + 1) & mask {
		// The slot is read with its hash, whichever is needed: in a
		// large table both are cache misses, which overlap this way,
		// and a put after a find that failed writes the slot next.
		p := t.slots[i]
		switch t.hashes[i] {
		case 0:
			return i, false
		case h:
			if p.key() == k {
				return i, true
			}
		}
	}
}

// get returns the element with key k, or the zero P.
func (t *table[P]) get(k string) P {
	var zero P
	if t.n == 0 {
		return zero
	}
	i, ok := t.find(k, t.hash(k))
	if !ok {
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
	h := t.hash(k)
	i, ok := t.find(k, h)
	if !ok {
		t.hashes[i] = h
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
	i, ok := t.find(k, t.hash(k))
	if !ok {
		return
	}
	var zero P
	mask := len(t.slots) - 1
	// Backward shift: an element of the run after i moves to i unless
	// its home is cyclically in (i, j], where it is still found.
	for j := i; ; {
		t.slots[i], t.hashes[i] = zero, 0
		for {
			j = (j + 1) & mask
			hj := t.hashes[j]
			if hj == 0 {
				t.n--
				if t.n*8 <= len(t.slots) && len(t.slots) > minSlots {
					t.resize(len(t.slots) / 2)
				}
				return
			}
			h := t.home(hj)
			if i <= j && (h <= i || h > j) || i > j && h <= i && h > j {
				t.slots[i], t.hashes[i] = t.slots[j], hj
				i = j
				break
			}
		}
	}
}

// resize moves the elements to size slots.
func (t *table[P]) resize(size int) {
	old, oldHashes := t.slots, t.hashes
	if old == nil {
		t.seed = maphash.MakeSeed()
	}
	t.slots, t.hashes = make([]P, size), make([]uint32, size)
	t.shift = uint8(32 - bits.TrailingZeros(uint(size)))
	mask := size - 1
	for j, h := range oldHashes {
		if h == 0 {
			continue
		}
		i := t.home(h)
		for t.hashes[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i], t.hashes[i] = old[j], h
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
