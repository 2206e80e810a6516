package channel

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

// ghost returns the record of a connection of another node, made at its
// first entry. The ghosts are indexed by node, then by connection: a
// connection's entry holds its id alone, and its node's id is one string
// for all its connections. Called with the lock.
func (t *Tree) ghost(node, conn string) *connection {
	gs := t.ghosts[node]
	if gs == nil {
		gs = make(map[string]*connection)
		t.ghosts[node] = gs
	}
	g := gs[conn]
	if g == nil {
		g = &connection{id: conn, node: t.internNode(node)}
		gs[conn] = g
	}
	return g
}

// endGhost forgets the ghost g, which ended. Called with the lock.
func (t *Tree) endGhost(g *connection) {
	gs := t.ghosts[g.node]
	delete(gs, g.id)
	if len(gs) == 0 {
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
	return t.ghosts[node][conn]
}
