package channel

import "iter"

// connection is what the tree holds of a connection for the transient
// entities it owns: a [Client] of this node holds one, and every node of
// a fleet holds one for each connection of another node that sent an
// entry (a ghost, docs/fleet.md), forgotten at its end entry or its
// node's death. Every node holds every connection's ghost, so a ghost is
// only this, 24 bytes, not a Client (issue 36, docs/fleet.md §13): its
// node is the peer whose table holds it, or this one for a Client.
type connection struct {
	id    string
	owned *node // the entity it owns, nil for none, ownsMany (owned.go)
}

// key returns c's id, its key in its peer's table.
func (c *connection) key() string { return c.id }

// peer is a node of the fleet as the tree knows it: this one (the tree's
// self, whose id Rejoin changes), or another whose connections sent
// entries, whose id is one string however many of its connections the
// tree holds.
type peer struct {
	id string
	// conns are its ghosts, by id (another node's only: this node's
	// clients are Tree.clients).
	conns table[*connection]
}

// ghost returns the record of a connection of another node, made at its
// first entry. Called with the lock.
func (t *Tree) ghost(node, conn string) *connection {
	p := t.ghosts[node]
	if p == nil {
		p = &peer{id: node}
		t.ghosts[node] = p
	}
	g := p.conns.get(conn)
	if g == nil {
		g = &connection{id: conn}
		p.conns.put(g)
	}
	return g
}

// ghostOf returns the ghost of connection conn of node, or nil. Called
// with the lock.
func (t *Tree) ghostOf(node, conn string) *connection {
	if p := t.ghosts[node]; p != nil {
		return p.conns.get(conn)
	}
	return nil
}

// ghostsOf yields the ghosts of node, in no order; the ghosts must not
// change during the walk. Called with the lock.
func (t *Tree) ghostsOf(node string) iter.Seq[*connection] {
	return func(yield func(*connection) bool) {
		if p := t.ghosts[node]; p != nil {
			for g := range p.conns.all() {
				if !yield(g) {
					return
				}
			}
		}
	}
}

// endGhost forgets the ghost g of p, which ended. Called with the lock.
func (t *Tree) endGhost(p *peer, g *connection) {
	p.conns.del(g.id)
	if p.conns.len() == 0 && t.ghosts[p.id] == p {
		delete(t.ghosts, p.id) // see Nodes
	}
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
