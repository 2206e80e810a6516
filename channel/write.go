package channel

import (
	"encoding/hex"
	"math/rand/v2"
	"time"
)

// defaultType is the media type of an entity given without one.
const defaultType = "application/json"

// prepared is an entity made ready outside the lock.
type prepared struct {
	full []byte // compact, private fields kept
	pub  []byte // without private fields
	obj  bool   // full is an object
}

// prepare compacts the entity of a message; a missing one is def. The
// entity was checked by parseMessage, and def is valid JSON: a compact
// one is taken as it is, without a second pass to check it.
func prepare(raw []byte, def string) (prepared, bool) {
	if raw == nil {
		raw = []byte(def)
	}
	full, err := compactValid(raw)
	if err != nil {
		return prepared{}, false
	}
	return prepared{full: full, pub: publicEntity(full), obj: full[0] == '{'}, true
}

// typeOf returns the media type a message gives, or "" when none.
func typeOf(m *message) string {
	if m.Type == nil {
		return ""
	}
	return *m.Type
}

// put runs PUT: create or replace /p, replace the field of /p[attr], or
// merge the top-level fields of a partial entity into the stored object
// (fields already there keep their place, new ones go last). On a
// resource without entity, /p[attr] creates {"attr": entity} and a
// partial PUT stores the entity as given. A type given replaces the
// stored one; without one a merge keeps it and a replace takes
// application/json.
func (t *Tree) put(cl *caller, m *message, r resource, lease time.Duration) ([]byte, string) {
	if r.path == "/" || r.hasQuery {
		return nil, reasonInvalidRes
	}
	var given prepared
	var ok bool
	merge := m.Partial || r.hasAttr
	if r.hasAttr {
		var v prepared
		if v, ok = prepare(m.Entity, "null"); ok {
			full := singleField(r.attr, v.full)
			given = prepared{full: full, pub: publicEntity(full), obj: true}
		}
	} else {
		given, ok = prepare(m.Entity, "{}")
	}
	if !ok || merge && !given.obj {
		return nil, reasonInvalidEntity
	}
	// Persistent unless a client wrote it without persistent:true (then
	// it is the client's) or a Call gave "expires" (then it is a lease).
	persist := !(cl.conn() != nil && !m.Persistent) && !(cl.conn() == nil && lease > 0)
	// Its notifications are encoded under the lock, and only when the
	// resource or its parent has subscribers (emitChange).
	return t.run(cl, func() outcome {
		if reason := t.usable(cl); reason != "" {
			return fail(reason)
		}
		if w := t.conflict(r.path, 0); w != nil {
			return outcome{wait: w}
		}
		n := t.lookup(r.path)
		exists := n != nil && n.entity() != nil
		op := OpCreate
		if exists {
			op = OpUpdate
		}
		ok, deepest := t.permitOf(cl.identity, op, r.path, n)
		if !ok {
			return fail(reasonForbidden)
		}
		e, typ := given, typeOf(m)
		if exists && merge {
			full, err := mergeEntity(n.entity(), e.full)
			if err != nil {
				return fail(reasonInvalidEntity)
			}
			e = prepared{full: full, pub: publicEntity(full), obj: true}
			if typ == "" {
				typ = n.typ()
			}
		}
		if typ == "" {
			typ = defaultType
		}
		// Only a resource that did not exist gets a creator: a node that
		// exists for its children keeps its own, so no one gains rights
		// over them by creating it (docs/channel.md#creators-and-owners).
		fresh := n == nil
		if n != nil && n.stored() && !persist { // it may remove records
			if w := t.conflict(r.path, touchRemove); w != nil {
				return outcome{wait: w}
			}
		}
		var recs journal
		// Records are planned for a store only (a tree of a fleet has
		// none), and planSet has none for a transient change of a node
		// not stored.
		if t.st != nil && (persist || n != nil && n.stored()) {
			next := node{path: r.path}
			if n != nil {
				next = *n
			}
			creator := next.creator()
			if fresh {
				creator = cl.identity
			}
			next.names = t.namesOf(typ, creator)
			next.setEnt(e.full)
			next.setPersist(persist)
			recs = t.planSet(r.path, n, &next)
		}
		pa := putApply{
			path: r.path, typ: typ, e: e, fresh: fresh, persist: persist,
			creator: cl.identity, from: cl.from, owner: cl.conn(), lease: lease,
		}
		if t.keeps(recs) {
			kept := pa // only a proposed change keeps its own copy
			return outcome{b: t.propose(r.path, recs, true, cl.c, func(seq uint64) { t.applyPut(&kept, seq) })}
		}
		// Applied at once, under this same hold of the lock: the node
		// looked up above is still the one at the path (a missing one is
		// created without a second lookup), and the change is made without
		// a closure to keep.
		if w := t.applyWait(r.path, cl.c); w != nil {
			return outcome{wait: w}
		}
		pa.found, pa.now = n, true
		if n == nil {
			if pp, _ := parentPath(r.path); deepest.path == pp {
				pa.parent = deepest
			}
		}
		t.applyPut(&pa, t.takeSeq())
		return outcome{}
	})
}

// putApply is what a PUT changes once it has its seq.
type putApply struct {
	path, typ     string
	e             prepared
	found         *node // the node at path when applied at once; nil: none
	parent        *node // with now and no found: the node at path's parent, or nil
	now           bool  // applied at once: found is the node at path
	fresh         bool  // no node was at path: it gets a creator
	persist       bool
	creator, from string
	owner         *connection
	lease         time.Duration
}

// applyPut applies a PUT with seq. Called with the lock.
func (t *Tree) applyPut(pa *putApply, seq uint64) {
	var n *node
	switch {
	case pa.now && pa.found != nil:
		n = pa.found
	case pa.now && pa.parent != nil:
		n = t.createUnder(pa.parent, pa.path, seq)
	case pa.now:
		n = t.create(pa.path, seq)
	default:
		n = t.ensure(pa.path, seq)
	}
	creator := n.creator()
	if pa.fresh {
		creator = pa.creator
	}
	t.setEntity(n, t.namesOf(pa.typ, creator), pa.e, pa.owner, pa.persist, pa.lease)
	t.emitChange(n, &noteChange{kind: verbPut, key: verbUpdate, from: pa.from}, seq)
}

// commitOrApply makes a change about path that notifies about path and
// its parent: it proposes it when it changes records, and applies it at
// once otherwise, with the next seq (or returns what to wait for first).
// Called with the lock.
func (t *Tree) commitOrApply(path string, recs journal, by *Client, apply func(seq uint64)) outcome {
	if t.keeps(recs) {
		return outcome{b: t.propose(path, recs, true, by, apply)}
	}
	if w := t.applyWait(path, by); w != nil {
		return outcome{wait: w}
	}
	apply(t.takeSeq())
	return outcome{}
}

// applyWait returns what a change about path (and its parent) that
// changes no records must wait for before it is applied at once, or nil:
// by's earlier change (see pipelining), a batch being saved that
// notifies about them, room for another seq. by may be nil. Called with
// the lock.
func (t *Tree) applyWait(path string, by *Client) <-chan struct{} {
	if by != nil && by.unapplied() { // its earlier change first (see pipelining)
		return by.pend.done
	}
	if w := t.behind(path, true); w != nil {
		return w
	}
	if !t.room() {
		return t.roomWait()
	}
	return nil
}

// keeps reports whether a change that changes recs goes through the
// store: a tree without store keeps nothing.
func (t *Tree) keeps(recs journal) bool { return recs != nil && t.st != nil }

// post runs POST: create a child of /p with a fresh id, or the id given.
func (t *Tree) post(cl *caller, m *message, r resource, lease time.Duration) ([]byte, string) {
	if r.hasAttr || r.hasQuery {
		return nil, reasonInvalidRes
	}
	if m.ID != nil && !validSegment(*m.ID) {
		return nil, reasonInvalidID
	}
	e, ok := prepare(m.Entity, "{}")
	if !ok {
		return nil, reasonInvalidEntity
	}
	typ := typeOf(m)
	if typ == "" {
		typ = defaultType
	}
	persist := !(cl.conn() != nil && !m.Persistent) && !(cl.conn() == nil && lease > 0)
	return t.run(cl, func() outcome {
		if reason := t.usable(cl); reason != "" {
			return fail(reason)
		}
		var id, path string
		if m.ID != nil {
			id, path = *m.ID, childPath(r.path, *m.ID)
			if !validPath(path) {
				return fail(reasonInvalidRes)
			}
			if w := t.conflict(path, 0); w != nil {
				return outcome{wait: w}
			}
			if !t.permit(cl.identity, OpCreate, path) {
				return fail(reasonForbidden)
			}
			if t.lookup(path) != nil {
				return fail(reasonExists)
			}
		} else {
			for i := 0; ; i++ {
				id = cl.freshID(i)
				if path = childPath(r.path, id); t.lookup(path) == nil {
					break
				}
			}
			if !validPath(path) {
				return fail(reasonInvalidRes)
			}
			if w := t.conflict(path, 0); w != nil {
				return outcome{wait: w}
			}
			if ok, _ := t.permitOf(cl.identity, OpCreate, path, nil); !ok {
				return fail(reasonForbidden)
			}
		}
		next := node{path: path, names: t.namesOf(typ, cl.identity)}
		next.setEnt(e.full)
		next.setPersist(persist)
		// The change keeps what it needs of cl, not cl: a caller that
		// does not escape is not allocated.
		identity, owner, from := cl.identity, cl.conn(), cl.from
		var recs journal
		if t.st != nil { // records are planned for a store only
			recs = t.planSet(path, nil, &next)
		}
		out := t.commitOrApply(path, recs, cl.c, func(seq uint64) {
			n := t.ensure(path, seq)
			t.setEntity(n, t.namesOf(typ, identity), e, owner, persist, lease)
			t.emitChange(n, &noteChange{kind: verbPost, key: verbCreate, from: from}, seq)
		})
		if out.wait == nil {
			b := replyStart(m.MsgID, len(id)+8)
			b = append(b, `,"id":`...)
			b = AppendString(b, id)
			out.reply = append(b, '}')
		}
		return out
	})
}

// freshID returns a random child id: 16 hex digits.
func freshID() string {
	var b [8]byte
	x := rand.Uint64()
	for i := range b {
		b[i] = byte(x >> (8 * i))
	}
	return hex.EncodeToString(b[:])
}

// delete runs DELETE: remove the entity of /p; its children stay.
func (t *Tree) delete(cl *caller, r resource) ([]byte, string) {
	if r.path == "/" || r.hasAttr || r.hasQuery {
		return nil, reasonInvalidRes
	}
	return t.run(cl, func() outcome {
		if reason := t.usable(cl); reason != "" {
			return fail(reason)
		}
		if w := t.conflict(r.path, touchRemove); w != nil {
			return outcome{wait: w}
		}
		n := t.lookup(r.path)
		if ok, _ := t.permitOf(cl.identity, OpDelete, r.path, n); !ok {
			return fail(reasonForbidden)
		}
		if n == nil || n.entity() == nil {
			return fail(reasonNotFound)
		}
		return t.remove(n, cl.from, cl.c)
	})
}

// remove removes n's entity with its notifications (from as their
// "from"): at once when no record changes, proposed otherwise. by is the
// client asking, nil for none. Called with the lock, after
// conflict(n.path, touchRemove).
func (t *Tree) remove(n *node, from string, by *Client) outcome {
	var recs journal
	if t.st != nil { // records are planned for a store only
		recs = t.planRemove(n)
	}
	return t.commitOrApply(n.path, recs, by, func(seq uint64) { t.removeEntity(n, from, seq) })
}

// usable returns why the caller may not change the tree now, or "".
// Called with the lock.
func (t *Tree) usable(cl *caller) string {
	switch {
	case t.closed:
		return reasonClosed
	case cl.c != nil && cl.c.ended:
		return reasonDisconnected
	}
	return ""
}

// setEntity gives n its new entity, its type and creator nm, and its
// lifetime: persistent, or owned by the client owner (not nil), or else
// leased for lease. Called with the lock.
func (t *Tree) setEntity(n *node, nm names, e prepared, owner *connection, persist bool, lease time.Duration) {
	n.names = nm
	n.setBytes(e.full, e.pub)
	// A transient replaced by its owner (a presence's every change) stays
	// in the owner's set as it is.
	kept := !persist && owner != nil && n.owner == owner
	if !kept {
		t.release(n)
	}
	switch {
	case persist:
		n.setPersist(true)
		t.store(n, nil)
	case owner != nil:
		if !kept {
			n.owner = owner
			t.own(owner, n)
		}
		n.setPersist(false)
		t.unstore(n, nil)
	default:
		if !t.closed {
			t.startLease(n, lease)
		}
		n.setPersist(false)
		t.unstore(n, nil)
	}
}

// release ends n's ownership by a client and its lease. Called with the
// lock.
func (t *Tree) release(n *node) {
	if n.owner != nil {
		t.disown(n.owner, n)
		n.owner = nil
	}
	if l := t.leases[n]; l != nil {
		l.timer.Stop()
		delete(t.leases, n)
	}
}

// removeEntity deletes n's entity with its notifications (from as their
// "from"), and n itself when it has no children. Called with the lock.
func (t *Tree) removeEntity(n *node, from string, seq uint64) {
	t.release(n)
	n.setTyp("")
	n.setPersist(false)
	n.setBytes(nil, nil)
	t.unstore(n, nil)
	t.emitChange(n, &noteChange{kind: verbDelete, key: verbDeleted, from: from}, seq)
	t.prune(n, nil)
}

// emitChange sends the notifications of ch, a change to n with seq: its
// kind to the subscribers of n, the UPDATE to those of its parent (see
// noteChange). Each is encoded only when it has subscribers; the
// history keeps one that has none as what encodes it, for a replay to
// encode (histEntry): a write that nobody listens to encodes nothing.
// Called with the lock.
func (t *Tree) emitChange(n *node, ch *noteChange, seq uint64) {
	p := n.parent
	at := t.now()
	// One access for both notifications, found only when someone listens;
	// each subscriber list looked up once.
	ls, lp := t.subs[n.path], t.subs[p.path]
	typ, pub, name := n.typ(), n.pub(), n.name()
	kind, key := ch.kind.String(), ch.key.String()
	noteLen := noteSize(kind, n.path, typ, pub, ch.from)
	upLen := upSize(key, p.path, name, typ, pub)
	var a access
	if ls != nil || lp != nil {
		t.accessAt(&a, n.path)
	}
	if ls == nil {
		t.hist.add(lazyEntry(seq, n.path, n.path, at, noteLen, ch.kind, n.names, pub, ch.from))
	} else {
		t.emitTo(ls, n.path, n.path, &a, noteBytes(kind, n.path, typ, pub, ch.from, seq), noteLen, seq, at)
	}
	if lp == nil {
		t.hist.add(lazyEntry(seq, p.path, n.path, at, upLen, ch.key, n.names, pub, ""))
	} else {
		t.emitTo(lp, p.path, n.path, &a, upBytes(key, p.path, name, typ, pub, seq), upLen, seq, at)
	}
}
