package channel

import (
	"strings"
	"time"
	"unique"
	"unsafe"
)

// node is one resource of the tree. Every field is guarded by the tree's
// lock. A node without entity exists only while it has children (or is
// the root). Every node of a fleet holds every connection's transient
// entities, so a node is kept to 96 bytes, a size class of Go's
// allocator (docs/fleet.md §13, issue 36): what few nodes have (a lease,
// a rule, a group, an entity with private fields, children) is kept
// apart, what the path gives (the name) is not kept twice, what many
// nodes share (the type and the creator) is a pointer to one copy of the
// pair, the entity, never changed in place, has no capacity and a 32-bit
// length, and the store's bookkeeping is one word of bits.
type node struct {
	path   string
	parent *node
	names  names // its type ("" when it has no entity) and creator
	// entP and entN are its entity, compact JSON with private fields
	// (see entity): never changed in place, so no capacity is kept.
	entP    *byte
	entN    uint32
	bits    uint32 // stored, persist and storedKids (see store.go's accessors)
	created uint64
	x       *nodeExtra // nil: none of what it holds

	// owner is the connection a transient entity belongs to; an entity
	// leased by Call has its lease in Tree.leases.
	owner *connection

	kids       *kids // its children; nil: none yet
	prev, next *node // siblings, in creation order
}

// kids are a node's children in creation order: most nodes (a
// connection's presence, an entry of a list) have none, so a node keeps
// one pointer to them, not two.
type kids struct{ first, last *node }

// first returns n's first child, nil when it has none.
func (n *node) first() *node {
	if n.kids == nil {
		return nil
	}
	return n.kids.first
}

// last returns n's last child, nil when it has none.
func (n *node) last() *node {
	if n.kids == nil {
		return nil
	}
	return n.kids.last
}

// setEnt sets n's entity to b, nil for none; b is never changed after.
func (n *node) setEnt(b []byte) {
	if b == nil {
		n.entP, n.entN = nil, 0
		return
	}
	n.entP, n.entN = unsafe.SliceData(b), uint32(len(b))
}

// entity returns n's entity, compact JSON with its private fields, nil
// for none. Its capacity is its length: an append copies.
func (n *node) entity() []byte {
	if n.entP == nil {
		return nil
	}
	return unsafe.Slice(n.entP, n.entN)
}

// names is a node's media type and creator's identity, kept once however
// many nodes hold the same pair (unique.Handle): a node holds one pointer
// where two strings take four words. Most nodes share few pairs (the
// entities of one creator have one or two types). The zero value is two
// empty strings.
type names struct{ h unique.Handle[namePair] }

// namePair is what a names holds.
type namePair struct{ typ, creator string }

// mkNames returns typ and creator as names.
func mkNames(typ, creator string) names {
	if typ == "" && creator == "" {
		return names{}
	}
	return names{unique.Make(namePair{typ, creator})}
}

// namesOf is mkNames for a write, under the lock: the tree keeps the
// names of the last write, which the next one mostly gives again (a
// connection's writes, a door's anonymous callers), and those of any
// other are interned afresh.
func (t *Tree) namesOf(typ, creator string) names {
	if p := t.lastNames.pair(); p.typ == typ && p.creator == creator {
		return t.lastNames
	}
	t.lastNames = mkNames(typ, creator)
	return t.lastNames
}

// pair returns the two strings.
func (s names) pair() namePair {
	if s == (names{}) {
		return namePair{}
	}
	return s.h.Value()
}

// typ returns n's media type, "" when it has no entity.
func (n *node) typ() string { return n.names.pair().typ }

// creator returns the identity that created n, "" for none.
func (n *node) creator() string { return n.names.pair().creator }

// setTyp sets n's media type ("" for none), its creator kept.
func (n *node) setTyp(typ string) { n.names = mkNames(typ, n.creator()) }

// setCreator sets n's creator ("" for none), its type kept.
func (n *node) setCreator(creator string) { n.names = mkNames(n.typ(), creator) }

// lease is the expiry of an entity leased by Call.
type lease struct {
	timer *time.Timer
	id    uint64    // which lease the timer belongs to (unique in the tree)
	end   time.Time // when it runs out
}

// nodeExtra is what few nodes have. It is never changed once made (a
// change makes another), so that a copy of a node (a change planned) and
// the node share it safely.
type nodeExtra struct {
	rule  *Rule  // its own rule (docs/channel.md#permissions); nil: none
	group *group // the group of its subtree; nil: the one above
	// stripped is the entity without its private fields when it has
	// some; nil when it has none (see pub).
	stripped []byte
}

// setExtra gives n what few nodes have: rule, g and stripped (each nil
// for none).
func (n *node) setExtra(rule *Rule, g *group, stripped []byte) {
	if rule == nil && g == nil && stripped == nil {
		n.x = nil
		return
	}
	n.x = &nodeExtra{rule: rule, group: g, stripped: stripped}
}

// rule returns n's own rule, nil for none.
func (n *node) rule() *Rule {
	if n.x == nil {
		return nil
	}
	return n.x.rule
}

// group returns the group of n's subtree, nil for the one above.
func (n *node) group() *group {
	if n.x == nil {
		return nil
	}
	return n.x.group
}

// stripped returns n's entity without its private fields when it has
// some, else nil.
func (n *node) stripped() []byte {
	if n.x == nil {
		return nil
	}
	return n.x.stripped
}

// setRule sets n's own rule (nil: none).
func (n *node) setRule(r *Rule) { n.setExtra(r, n.group(), n.stripped()) }

// setGroup sets the group of n's subtree (nil: the one above).
func (n *node) setGroup(g *group) { n.setExtra(n.rule(), g, n.stripped()) }

// pub returns n's entity without private fields, as clients see it.
func (n *node) pub() []byte {
	if s := n.stripped(); s != nil {
		return s
	}
	return n.entity()
}

// setBytes sets n's entity to full, whose public part (publicEntity) is
// pub: full itself when it has no private fields; nil removes it.
func (n *node) setBytes(full, pub []byte) {
	n.setEnt(full)
	var stripped []byte
	if len(pub) != len(full) || len(pub) > 0 && &pub[0] != &full[0] {
		stripped = pub
	}
	if stripped != nil || n.stripped() != nil {
		n.setExtra(n.rule(), n.group(), stripped)
	}
}

// key returns n's path, its key in the tree's index.
func (n *node) key() string { return n.path }

// name returns n's last segment; "" for the root.
func (n *node) name() string { return n.path[strings.LastIndexByte(n.path, '/')+1:] }

// lookup returns the node at path, or nil.
func (t *Tree) lookup(path string) *node { return t.nodes.get(path) }

// ensure returns the node at path, creating it and its missing ancestors
// (without entity) with creation seq seq.
func (t *Tree) ensure(path string, seq uint64) *node {
	if n := t.nodes.get(path); n != nil {
		return n
	}
	return t.create(path, seq)
}

// create is ensure for a path that has no node: it creates the node and
// its missing ancestors with creation seq seq. Called with the lock.
func (t *Tree) create(path string, seq uint64) *node {
	pp, _ := parentPath(path)
	return t.createUnder(t.ensure(pp, seq), path, seq)
}

// createUnder is create where p, the node at path's parent, exists.
func (t *Tree) createUnder(p *node, path string, seq uint64) *node {
	n := &node{path: path, parent: p, created: seq}
	p.link(n)
	t.nodes.put(n)
	return n
}

// link appends child c at the end of n's children.
func (n *node) link(c *node) {
	if n.kids == nil {
		n.kids = &kids{first: c, last: c}
		c.prev, c.next = nil, nil
		return
	}
	c.prev, c.next = n.kids.last, nil
	n.kids.last.next = c
	n.kids.last = c
}

// unlink removes child c from n's children; n keeps no kids once its
// last child goes.
func (n *node) unlink(c *node) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		n.kids.first = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		n.kids.last = c.prev
	}
	if n.kids.first == nil {
		n.kids = nil
	}
	c.prev, c.next = nil, nil
}

// prune removes n and then its ancestors while they have neither entity
// nor children.
func (t *Tree) prune(n *node, j journal) {
	for n != t.root && n.entity() == nil && n.kids == nil {
		if n.stored() {
			t.unstore(n, j)
		}
		p := n.parent
		p.unlink(n)
		t.nodes.del(n.path)
		n = p
	}
}
