package channel

import "time"

// node is one resource of the tree. Every field is guarded by the tree's
// lock. A node without entity exists only while it has children (or is
// the root).
type node struct {
	path    string
	name    string // last segment; "" for the root
	parent  *node
	typ     string
	entity  []byte // compact JSON, private fields included; nil: none
	pub     []byte // entity without private fields, sent to clients
	creator string
	created uint64
	rule    *Rule  // its own rule (docs/channel.md#permissions); nil: none
	group   *group // the group of its subtree; nil: the one above

	owner    *Client     // the connection a transient entity belongs to
	lease    *time.Timer // the expiry of an entity leased by Call
	leaseID  uint64      // which lease the running timer belongs to (unique in the tree)
	leaseEnd time.Time   // when it runs out
	persist  bool        // the entity is persistent

	stored     bool // the store holds a record of this node
	storedKids int  // children with stored set

	first, last *node // children in creation order
	prev, next  *node // siblings
	kids        int
}

// lookup returns the node at path, or nil.
func (t *Tree) lookup(path string) *node { return t.nodes[path] }

// ensure returns the node at path, creating it and its missing ancestors
// (without entity) with creation seq seq.
func (t *Tree) ensure(path string, seq uint64) *node {
	if n := t.nodes[path]; n != nil {
		return n
	}
	pp, name := parentPath(path)
	p := t.ensure(pp, seq)
	n := &node{path: path, name: name, parent: p, created: seq}
	p.link(n)
	t.nodes[path] = n
	return n
}

// link appends child c at the end of n's children.
func (n *node) link(c *node) {
	c.prev, c.next = n.last, nil
	if n.last != nil {
		n.last.next = c
	} else {
		n.first = c
	}
	n.last = c
	n.kids++
}

// unlink removes child c from n's children.
func (n *node) unlink(c *node) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		n.first = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		n.last = c.prev
	}
	c.prev, c.next = nil, nil
	n.kids--
}

// prune removes n and then its ancestors while they have neither entity
// nor children.
func (t *Tree) prune(n *node, o *op) {
	for n != t.root && n.entity == nil && n.first == nil {
		if n.stored {
			t.unstore(n, o)
		}
		p := n.parent
		p.unlink(n)
		delete(t.nodes, n.path)
		n = p
	}
}

// record returns the store's record of n.
func (n *node) record() Record {
	r := Record{Path: n.path, Creator: n.creator, Created: n.created}
	if n.rule != nil {
		r.Rule = n.rule.String()
	}
	if n.group != nil {
		r.Group = n.group.members
		if r.Group == nil {
			r.Group = []string{}
		}
	}
	if n.persist {
		r.Type, r.Entity = n.typ, n.entity
	}
	return r
}

// store records n and its ancestors not yet stored; n holds a persistent
// entity.
func (t *Tree) store(n *node, o *op) {
	t.savePut(n.record(), o)
	for a := n; a != t.root && !a.stored; a = a.parent {
		a.stored = true
		a.parent.storedKids++
		if a != n {
			t.savePut(a.record(), o)
		}
	}
}

// unstore updates the store when n no longer holds a persistent entity:
// a record without entity while stored children need it, none otherwise
// (and then maybe none for its ancestors either).
func (t *Tree) unstore(n *node, o *op) {
	for n != t.root && n.stored && !n.persist {
		if n.storedKids > 0 {
			t.savePut(n.record(), o)
			return
		}
		t.saveDelete(n.path, o)
		n.stored = false
		n.parent.storedKids--
		n = n.parent
	}
}
