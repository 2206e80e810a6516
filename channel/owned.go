package channel

import "iter"

// The transient entities a connection owns. Most own one (a presence
// entry), which the connection's own pointer holds; the sets of the few
// that own more are kept by their node (peer.many), so that a connection
// is three words and every node of a fleet holds every connection's
// (issue 36, docs/fleet.md §13). All of it is guarded by the tree's lock.

// ownsMany is what connection.owned holds for a connection that owns more
// than one entity: its set is its peer's many[c].
var ownsMany = new(node)

// own adds n to the entities c owns; n must not be one of them.
func (c *connection) own(n *node) {
	switch c.owned {
	case nil:
		c.owned = n
	case ownsMany:
		c.peer.many[c][n] = struct{}{}
	default:
		if c.peer.many == nil {
			c.peer.many = make(map[*connection]map[*node]struct{})
		}
		c.peer.many[c] = map[*node]struct{}{c.owned: {}, n: {}}
		c.owned = ownsMany
	}
}

// disown takes n out of the entities c owns, if it is one of them.
func (c *connection) disown(n *node) {
	switch c.owned {
	case n:
		c.owned = nil
	case ownsMany:
		delete(c.peer.many[c], n)
	}
}

// ownedLen returns the number of entities c owns.
func (c *connection) ownedLen() int {
	switch c.owned {
	case nil:
		return 0
	case ownsMany:
		return len(c.peer.many[c])
	}
	return 1
}

// ownedAll yields the entities c owns. Disowning the one being yielded
// is allowed; other changes during the walk are not.
func (c *connection) ownedAll() iter.Seq[*node] {
	return func(yield func(*node) bool) {
		switch c.owned {
		case nil:
		case ownsMany:
			for n := range c.peer.many[c] {
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
func (c *connection) disownAll() {
	if c.owned == ownsMany {
		delete(c.peer.many, c)
	}
	c.owned = nil
}
