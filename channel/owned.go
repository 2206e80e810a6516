package channel

import (
	"iter"
	"slices"
)

// The transient entities a connection owns. Most own one (a presence
// entry), which the connection's own pointer holds; the sets of the few
// that own more are kept by the tree (Tree.owns), so that a connection
// is three words and every node of a fleet holds every connection's
// (issue 36, docs/fleet.md §13). All of it is guarded by the tree's lock.
//
// A node is in its owner's set while its bitOwned is set. A set of
// several is a slice, not a map: taking an entity appends it, and
// letting one go only clears its bit, leaving its entry behind until the
// entries left behind are as many as the set's (then the slice is
// compacted). A connection that creates hundreds of thousands of
// entities (bench/channel-writes.sh) paid a growing map's rehashing and
// a cache miss a PUT, about a twelfth of the server's time a transient
// PUT (issue 38).

// ownsMany is what connection.owned holds for a connection that owns more
// than one entity: its set is the tree's owns[c].
var ownsMany = new(node)

// ownedSet holds the entities of a connection that owns several.
type ownedSet struct {
	// nodes are the entities in the order they were taken, and entries
	// of entities let go since: an entry is current while its node has
	// bitOwned and the connection for owner. An entity let go and taken
	// again may have two entries, one of them left behind.
	nodes []*node
	n     int // current entries; the other len(nodes)-n are left behind
}

// compact keeps only the current entries of c's set in a new slice (a
// walk of the old one, ownedAll, is not disturbed), each entity once
// where it was taken last.
func (s *ownedSet) compact(c *connection) {
	kept := make([]*node, 0, 2*s.n+4)
	for _, n := range slices.Backward(s.nodes) {
		if n.bits&bitOwned != 0 && n.owner == c {
			n.bits &^= bitOwned // an earlier entry of n is not current
			kept = append(kept, n)
		}
	}
	for _, n := range kept {
		n.bits |= bitOwned
	}
	slices.Reverse(kept)
	s.nodes, s.n = kept, len(kept)
}

// tidy compacts s once the entries left behind outnumber the current
// ones (and a few more): a set takes at most about twice the room of
// what it holds, and compacting costs each change O(1) in the long run.
func (s *ownedSet) tidy(c *connection) {
	if len(s.nodes)-s.n > s.n+16 {
		s.compact(c)
	}
}

// own adds n, whose owner is now c, to the entities c owns; n must not
// be one of them.
func (t *Tree) own(c *connection, n *node) {
	n.bits |= bitOwned
	switch c.owned {
	case nil:
		c.owned = n
	case ownsMany:
		s := t.owns[c]
		if len(s.nodes) == cap(s.nodes) {
			// Doubled, where append grows a large slice by a quarter:
			// a set of 100,000s copied and left for the collector
			// twice in all rather than five times.
			s.nodes = slices.Grow(s.nodes, len(s.nodes))
		}
		s.nodes = append(s.nodes, n)
		s.n++
		s.tidy(c)
	default:
		if t.owns == nil {
			t.owns = make(map[*connection]*ownedSet)
		}
		t.owns[c] = &ownedSet{nodes: []*node{c.owned, n}, n: 2}
		c.owned = ownsMany
	}
}

// disown takes n out of the entities c (its owner) owns, if it is one of
// them.
func (t *Tree) disown(c *connection, n *node) {
	if n.bits&bitOwned == 0 {
		return
	}
	switch c.owned {
	case n:
		c.owned = nil
	case ownsMany:
		s := t.owns[c]
		s.n--
		n.bits &^= bitOwned
		s.tidy(c)
		return
	default:
		return // not c's (n.owner is someone else)
	}
	n.bits &^= bitOwned
}

// ownedLen returns the number of entities c owns.
func (t *Tree) ownedLen(c *connection) int {
	switch c.owned {
	case nil:
		return 0
	case ownsMany:
		return t.owns[c].n
	}
	return 1
}

// ownedAll yields the entities c owns, in the order c took them.
// Disowning the one being yielded is allowed; other changes during the
// walk are not.
func (t *Tree) ownedAll(c *connection) iter.Seq[*node] {
	return func(yield func(*node) bool) {
		switch c.owned {
		case nil:
		case ownsMany:
			s := t.owns[c]
			if len(s.nodes) > s.n {
				s.compact(c)
			}
			for _, n := range s.nodes {
				if n.bits&bitOwned != 0 && n.owner == c && !yield(n) {
					return
				}
			}
		default:
			yield(c.owned)
		}
	}
}

// disownAll forgets every entity c owns (they were removed or the tree
// was reset).
func (t *Tree) disownAll(c *connection) {
	switch c.owned {
	case nil:
	case ownsMany:
		for _, n := range t.owns[c].nodes {
			if n.owner == c {
				n.bits &^= bitOwned
			}
		}
		delete(t.owns, c)
	default:
		c.owned.bits &^= bitOwned
	}
	c.owned = nil
}
