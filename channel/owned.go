package channel

import "iter"

// The transient entities a connection owns. Most own one (a presence
// entry), which the connection's own pointer holds; the sets of the few
// that own more are kept by the tree (Tree.owns), so that a connection
// is three words and every node of a fleet holds every connection's
// (issue 36, docs/fleet.md §13). All of it is guarded by the tree's lock.

// ownsMany is what connection.owned holds for a connection that owns more
// than one entity: its set is the tree's owns[c].
var ownsMany = new(node)

// own adds n to the entities c owns; n must not be one of them.
func (t *Tree) own(c *connection, n *node) {
	switch c.owned {
	case nil:
		c.owned = n
	case ownsMany:
		t.owns[c][n] = struct{}{}
	default:
		if t.owns == nil {
			t.owns = make(map[*connection]map[*node]struct{})
		}
		t.owns[c] = map[*node]struct{}{c.owned: {}, n: {}}
		c.owned = ownsMany
	}
}

// disown takes n out of the entities c owns, if it is one of them.
func (t *Tree) disown(c *connection, n *node) {
	switch c.owned {
	case n:
		c.owned = nil
	case ownsMany:
		delete(t.owns[c], n)
	}
}

// ownedLen returns the number of entities c owns.
func (t *Tree) ownedLen(c *connection) int {
	switch c.owned {
	case nil:
		return 0
	case ownsMany:
		return len(t.owns[c])
	}
	return 1
}

// ownedAll yields the entities c owns. Disowning the one being yielded
// is allowed; other changes during the walk are not.
func (t *Tree) ownedAll(c *connection) iter.Seq[*node] {
	return func(yield func(*node) bool) {
		switch c.owned {
		case nil:
		case ownsMany:
			for n := range t.owns[c] {
				if !yield(n) {
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
	if c.owned == ownsMany {
		delete(t.owns, c)
	}
	c.owned = nil
}
