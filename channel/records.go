package channel

import (
	"bytes"
	"slices"
)

// The store's bookkeeping of the tree: which nodes have a record, and the
// records a change plans before it is applied.

// The bits of node.bits: whether the store holds a record of the node,
// whether its entity is persistent, whether it is in its owner's set
// (owned.go), and how many of its children have a record (below 2^29:
// half a billion stored children of one node would take fifty GiB of
// nodes before they took the bits).
const (
	bitStored      = 1 << 31
	bitPersist     = 1 << 30
	bitOwned       = 1 << 29
	storedKidsMask = bitOwned - 1
)

// stored reports whether the store holds a record of n.
func (n *node) stored() bool { return n.bits&bitStored != 0 }

// setStored sets whether the store holds a record of n.
func (n *node) setStored(b bool) { n.bits = setBit(n.bits, bitStored, b) }

// persist reports whether n's entity is persistent.
func (n *node) persist() bool { return n.bits&bitPersist != 0 }

// setPersist sets whether n's entity is persistent.
func (n *node) setPersist(b bool) { n.bits = setBit(n.bits, bitPersist, b) }

// storedKids returns how many of n's children have a record.
func (n *node) storedKids() int { return int(n.bits & storedKidsMask) }

// addStoredKid counts one more (d 1) or one fewer (d -1) of n's children
// with a record.
func (n *node) addStoredKid(d int) {
	n.bits = n.bits&^storedKidsMask | uint32(n.storedKids()+d)&storedKidsMask
}

// setBit returns bits with bit set or cleared.
func setBit(bits, bit uint32, on bool) uint32 {
	if on {
		return bits | bit
	}
	return bits &^ bit
}

// record returns the store's record of n.
func (n *node) record() StoredResource {
	r := StoredResource{Path: n.path, Creator: n.creator(), Created: n.created}
	if n.rule() != nil {
		r.Rule = n.rule().String()
	}
	if n.group() != nil {
		r.Group = n.group().members
		if r.Group == nil {
			r.Group = []string{}
		}
	}
	if n.persist() {
		r.Type, r.Entity = n.typ(), n.entity()
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
	for a := n; a != t.root && !a.stored(); a = a.parent {
		a.setStored(true)
		a.parent.addStoredKid(1)
		if a != n {
			j.putNode(a)
		}
	}
}

// unstore updates the store when n no longer holds a persistent entity:
// a record without entity while stored children need it, none otherwise
// (and then maybe none for its ancestors either).
func (t *Tree) unstore(n *node, j journal) {
	for n != t.root && n.stored() && !n.persist() {
		if n.storedKids() > 0 {
			j.putNode(n)
			return
		}
		j.del(n.path)
		n.setStored(false)
		n.parent.addStoredKid(-1)
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
	if next.persist() {
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
			if a.stored() {
				break
			}
			j.put(a.record())
		}
		return j
	}
	if cur == nil || !cur.stored() {
		return nil
	}
	return t.planUnstore(cur, next)
}

// planRemove returns the records that removing n's entity changes, as
// removeEntity will; nil means none. Called with the lock.
func (t *Tree) planRemove(n *node) journal {
	if !n.stored() {
		return nil
	}
	next := *n
	next.setTyp("")
	next.setPersist(false)
	next.setBytes(nil, nil)
	return t.planUnstore(n, &next)
}

// planUnstore returns the records unstore changes when the stored node
// cur becomes next, which holds no persistent entity: a record without
// entity when it has stored children and the record differs, otherwise
// the removal of its record and of those of its ancestors that it leaves
// without stored children or entity.
func (t *Tree) planUnstore(cur, next *node) journal {
	if cur.storedKids() > 0 {
		r := next.record()
		if sameRecord(r, cur.record()) {
			return nil
		}
		return journal{r.Path: &r}
	}
	j := journal{cur.path: nil}
	for a := cur.parent; a != t.root && a.storedKids() == 1 && !a.persist(); a = a.parent {
		j.del(a.path)
	}
	return j
}

// planRecord returns the record of next, the node n will be once its
// rules, group or owner change, when n is stored and the record differs;
// nil otherwise.
func planRecord(n, next *node) journal {
	if !n.stored() {
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
