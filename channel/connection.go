package channel

// connection is what the tree holds of a connection for the transient
// entities it owns: a [Client] of this node holds one, and every node of
// a fleet holds one for each connection of another node that sent an
// entry (a ghost, docs/fleet.md), ended by its end entry or its node's
// death. Every node holds every connection's ghost, so a ghost is only
// this, not a Client (issue 36, docs/fleet.md §13). Guarded by the tree's
// lock.
type connection struct {
	id    string
	node  string // the node it is connected to (docs/fleet.md)
	ended bool
	owned ownedSet // the transient entities it owns
}

// connKey names a connection of the fleet.
type connKey struct{ node, conn string }

// ghost returns the record of a connection of another node, made at its
// first entry. Called with the lock.
func (t *Tree) ghost(node, conn string) *connection {
	k := connKey{node, conn}
	g := t.ghosts[k]
	if g == nil {
		k.node = t.nodeID(node) // one string for all its connections
		g = &connection{id: conn, node: k.node}
		t.ghosts[k] = g
	}
	return g
}

// nodeID returns id as the tree keeps it: one string per node of the
// fleet however many of its connections the tree holds. Called with the
// lock.
func (t *Tree) nodeID(id string) string {
	if s, ok := t.nodeIDs[id]; ok {
		return s
	}
	t.nodeIDs[id] = id
	return id
}

// connOf returns the connection node/conn, local or ghost, or nil.
// Called with the lock.
func (t *Tree) connOf(node, conn string) *connection {
	if node == t.opt.Node {
		if c := t.clients[conn]; c != nil {
			return &c.connection
		}
		return nil
	}
	return t.ghosts[connKey{node, conn}]
}
