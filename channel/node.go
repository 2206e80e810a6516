package channel

import (
	"bytes"
	"slices"
	"strings"
	"time"
	"unique"
	"unsafe"
)

// node is one resource of the tree. Every field is guarded by the tree's
// lock. A node without entity exists only while it has children (or is
// the root). Every node of a fleet holds every connection's transient
// entities, so a node is kept to 112 bytes (docs/fleet.md §13, issue 36):
// what few nodes have (a lease, a rule, a group, an entity with private
// fields, children) is kept apart, what the path gives (the name) is not
// kept twice, what many nodes share (the type, the creator) is a pointer
// to one copy, and the entity, never changed in place, has no capacity.
type node struct {
	path    string
	parent  *node
	typ     str // "" when it has no entity
	ent     ent // compact JSON, private fields included (see entity)
	creator str
	created uint64
	x       *nodeExtra // nil: none of what it holds

	// owner is the connection a transient entity belongs to; an entity
	// leased by Call has its lease in Tree.leases.
	owner *connection

	storedKids int32 // children with stored set
	stored     bool  // the store holds a record of this node
	persist    bool  // the entity is persistent

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

// ent is an entity's bytes in two words where a slice takes three: the
// bytes are never changed once set (a change sets others), so a node
// needs no capacity. The zero value is no entity.
type ent struct {
	p *byte
	n int
}

// mkEnt returns b as an ent; nil for no entity.
func mkEnt(b []byte) ent {
	if b == nil {
		return ent{}
	}
	return ent{p: unsafe.SliceData(b), n: len(b)}
}

// entity returns n's entity, compact JSON with its private fields, nil
// for none. Its capacity is its length: an append copies.
func (n *node) entity() []byte {
	if n.ent.p == nil {
		return nil
	}
	return unsafe.Slice(n.ent.p, n.ent.n)
}

// str is a string that many nodes hold, a media type or a creator's
// identity, kept once however many hold it (unique.Handle): a node holds
// one pointer where a string takes two words. The zero value is "".
type str struct{ h unique.Handle[string] }

// mkStr returns s as a str.
func mkStr(s string) str {
	if s == "" {
		return str{}
	}
	return str{unique.Make(s)}
}

// String returns the string.
func (s str) String() string {
	if s == (str{}) {
		return ""
	}
	return s.h.Value()
}

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
	n.ent = mkEnt(full)
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
	p := t.ensure(pp, seq)
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
		if n.stored {
			t.unstore(n, j)
		}
		p := n.parent
		p.unlink(n)
		t.nodes.del(n.path)
		n = p
	}
}

// record returns the store's record of n.
func (n *node) record() StoredResource {
	r := StoredResource{Path: n.path, Creator: n.creator.String(), Created: n.created}
	if n.rule() != nil {
		r.Rule = n.rule().String()
	}
	if n.group() != nil {
		r.Group = n.group().members
		if r.Group == nil {
			r.Group = []string{}
		}
	}
	if n.persist {
		r.Type, r.Entity = n.typ.String(), n.entity()
	}
	return r
}

// journal collects the store changes of the tree's bookkeeping (store,
// unstore): load saves them as its repairs. A change to the tree plans
// its records before it is applied (planSet, planRemove, planRecord) and
// applies itself with a nil journal.
type journal map[string]*StoredResource

// put records that r is to be kept.
func (j journal) put(r StoredResource) {
	if j != nil {
		j[r.Path] = &r
	}
}

// putNode records that the record of n is to be kept; a nil journal
// does not build it.
func (j journal) putNode(n *node) {
	if j != nil {
		j.put(n.record())
	}
}

// del records that the record at path is to be removed.
func (j journal) del(path string) {
	if j != nil {
		j[path] = nil
	}
}

// store records n and its ancestors not yet stored; n holds a persistent
// entity.
func (t *Tree) store(n *node, j journal) {
	j.putNode(n)
	for a := n; a != t.root && !a.stored; a = a.parent {
		a.stored = true
		a.parent.storedKids++
		if a != n {
			j.putNode(a)
		}
	}
}

// unstore updates the store when n no longer holds a persistent entity:
// a record without entity while stored children need it, none otherwise
// (and then maybe none for its ancestors either).
func (t *Tree) unstore(n *node, j journal) {
	for n != t.root && n.stored && !n.persist {
		if n.storedKids > 0 {
			j.putNode(n)
			return
		}
		j.del(n.path)
		n.stored = false
		n.parent.storedKids--
		n = n.parent
	}
}

// planSet returns the records that giving a node an entity changes, as
// store and unstore will once it is applied: cur is the node now (nil
// when there is none at path), next the node as it will be (its entity,
// creator and persist set). The records of the nodes it creates have
// Created 0: the committer gives them the change's seq. nil means no
// record changes. Called with the lock.
func (t *Tree) planSet(path string, cur, next *node) journal {
	if next.persist {
		j := journal{}
		j.put(next.record())
		for p := path; ; {
			p, _ = parentPath(p)
			if p == "/" {
				break
			}
			a := t.nodes.get(p)
			if a == nil {
				j.put(StoredResource{Path: p}) // as ensure creates it
				continue
			}
			if a.stored {
				break
			}
			j.put(a.record())
		}
		return j
	}
	if cur == nil || !cur.stored {
		return nil
	}
	return t.planUnstore(cur, next)
}

// planRemove returns the records that removing n's entity changes, as
// removeEntity will; nil means none. Called with the lock.
func (t *Tree) planRemove(n *node) journal {
	if !n.stored {
		return nil
	}
	next := *n
	next.typ, next.persist = str{}, false
	next.setBytes(nil, nil)
	return t.planUnstore(n, &next)
}

// planUnstore returns the records unstore changes when the stored node
// cur becomes next, which holds no persistent entity: a record without
// entity when it has stored children and the record differs, otherwise
// the removal of its record and of those of its ancestors that it leaves
// without stored children or entity.
func (t *Tree) planUnstore(cur, next *node) journal {
	if cur.storedKids > 0 {
		r := next.record()
		if sameRecord(r, cur.record()) {
			return nil
		}
		return journal{r.Path: &r}
	}
	j := journal{cur.path: nil}
	for a := cur.parent; a != t.root && a.storedKids == 1 && !a.persist; a = a.parent {
		j.del(a.path)
	}
	return j
}

// planRecord returns the record of next, the node n will be once its
// rules, group or owner change, when n is stored and the record differs;
// nil otherwise.
func planRecord(n, next *node) journal {
	if !n.stored {
		return nil
	}
	r := next.record()
	if sameRecord(r, n.record()) {
		return nil
	}
	return journal{r.Path: &r}
}

// sameRecord reports whether a and b hold the same.
func sameRecord(a, b StoredResource) bool {
	return a.Path == b.Path && a.Type == b.Type && bytes.Equal(a.Entity, b.Entity) &&
		(a.Entity == nil) == (b.Entity == nil) && a.Creator == b.Creator && a.Rule == b.Rule &&
		slices.Equal(a.Group, b.Group) && (a.Group == nil) == (b.Group == nil) && a.Created == b.Created
}
