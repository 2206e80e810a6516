package channel

import "iter"

// connection is what the tree holds of a connection for the transient
// entities it owns: a [Client] of this node holds one, and every node of
// a fleet holds one for each connection of another node that sent an
// entry (a ghost, docs/fleet.md), forgotten at its end entry or its
// node's death. Every node holds every connection's ghost, so a ghost is
// only this, 48 bytes, not a Client (issue 36, docs/fleet.md §13).
type connection struct {
	id    string
	node  string   // the node it is connected to (docs/fleet.md)
	owned ownedSet // the transient entities it owns; guarded by the tree's lock
}

// key returns c's id, its key in the ghosts' tables.
func (c *connection) key() string { return c.id }

// ghost returns the record of a connection of another node, made at its
// first entry. The ghosts are indexed by node, then by connection (a
// table keyed by the ghost's own id, 8 bytes a ghost): a connection's
// entry holds its id alone, and its node's id is one string for all its
// connections. Called with the lock.
func (t *Tree) ghost(node, conn string) *connection {
	gs := t.ghosts[node]
	if gs == nil {
		gs = new(table[*connection])
		t.ghosts[node] = gs
	}
	g := gs.get(conn)
	if g == nil {
		g = &connection{id: conn, node: t.internNode(node)}
		gs.put(g)
	}
	return g
}

// ghostOf returns the ghost of connection conn of node, or nil. Called
// with the lock.
func (t *Tree) ghostOf(node, conn string) *connection {
	if gs := t.ghosts[node]; gs != nil {
		return gs.get(conn)
	}
	return nil
}

// ghostsOf yields the ghosts of node, in no order; the ghosts must not
// change during the walk. Called with the lock.
func (t *Tree) ghostsOf(node string) iter.Seq[*connection] {
	return func(yield func(*connection) bool) {
		if gs := t.ghosts[node]; gs != nil {
			for g := range gs.all() {
				if !yield(g) {
					return
				}
			}
		}
	}
}

// endGhost forgets the ghost g, which ended. Called with the lock.
func (t *Tree) endGhost(g *connection) {
	gs := t.ghosts[g.node]
	if gs == nil {
		return
	}
	gs.del(g.id)
	if gs.len() == 0 {
		delete(t.ghosts, g.node) // see Nodes
	}
}

// internNode returns id as the tree keeps it: one string per node of the
// fleet however many of its connections the tree holds. Called with the
// lock.
func (t *Tree) internNode(id string) string {
	if s, ok := t.nodeIDs[id]; ok {
		return s
	}
	t.nodeIDs[id] = id
	return id
}

// connOf returns the connection node/conn, local or ghost, or nil.
// Called with the lock.
func (t *Tree) connOf(node, conn string) *connection {
	if node == t.nodeID() {
		if c := t.clients[conn]; c != nil {
			return &c.connection
		}
		return nil
	}
	return t.ghostOf(node, conn)
}
