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

// prepare compacts the entity of a message; a missing one is def.
func prepare(raw []byte, def string) (prepared, bool) {
	if raw == nil {
		raw = []byte(def)
	}
	full, err := compactJSON(raw)
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
func (t *Tree) put(cl *caller, m *message, r resource, lease time.Duration, o *op) ([]byte, string) {
	if r.path == "/" || r.hasQuery {
		return nil, reasonInvalidRes
	}
	var e prepared
	var ok bool
	merge := m.Partial || r.hasAttr
	if r.hasAttr {
		var v prepared
		if v, ok = prepare(m.Entity, "null"); ok {
			full := singleField(r.attr, v.full)
			e = prepared{full: full, pub: publicEntity(full), obj: true}
		}
	} else {
		e, ok = prepare(m.Entity, "{}")
	}
	if !ok || merge && !e.obj {
		return nil, reasonInvalidEntity
	}
	typ := typeOf(m)

	t.mu.Lock()
	defer t.mu.Unlock()
	if reason := t.usable(cl); reason != "" {
		return nil, reason
	}
	n := t.lookup(r.path)
	exists := n != nil && n.entity != nil
	op := OpCreate
	if exists {
		op = OpUpdate
	}
	if !t.permit(cl.identity, op, r.path) {
		return nil, reasonForbidden
	}
	if exists {
		if merge {
			full, err := mergeEntity(n.entity, e.full)
			if err != nil {
				return nil, reasonInvalidEntity
			}
			e = prepared{full: full, pub: publicEntity(full), obj: true}
			if typ == "" {
				typ = n.typ
			}
		}
	}
	if typ == "" {
		typ = defaultType
	}
	seq := t.nextSeq()
	fresh := n == nil
	n = t.ensure(r.path, seq)
	if fresh {
		// Only a resource that did not exist gets a creator: a node that
		// exists for its children keeps its own, so no one gains rights
		// over them by creating it (docs/channel.md#creators-and-owners).
		n.creator = cl.identity
	}
	t.setEntity(n, typ, e, cl, m.Persistent, lease, o)
	t.emitChange(n, "PUT", "update", cl.from, seq)
	return nil, ""
}

// post runs POST: create a child of /p with a fresh id, or the id given.
func (t *Tree) post(cl *caller, m *message, r resource, lease time.Duration, o *op) ([]byte, string) {
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

	t.mu.Lock()
	defer t.mu.Unlock()
	if reason := t.usable(cl); reason != "" {
		return nil, reason
	}
	var id, path string
	if m.ID != nil {
		id, path = *m.ID, childPath(r.path, *m.ID)
		if !validPath(path) {
			return nil, reasonInvalidRes
		}
		if !t.permit(cl.identity, OpCreate, path) {
			return nil, reasonForbidden
		}
		if t.lookup(path) != nil {
			return nil, reasonExists
		}
	} else {
		for {
			id = freshID()
			if path = childPath(r.path, id); t.lookup(path) == nil {
				break
			}
		}
	}
	if !validPath(path) {
		return nil, reasonInvalidRes
	}
	if !t.permit(cl.identity, OpCreate, path) {
		return nil, reasonForbidden
	}
	seq := t.nextSeq()
	n := t.ensure(path, seq)
	n.creator = cl.identity
	t.setEntity(n, typ, e, cl, m.Persistent, lease, o)
	t.emitChange(n, "POST", "create", cl.from, seq)
	b := replyStart(m.MsgID, len(id)+8)
	b = append(b, `,"id":`...)
	b = AppendString(b, id)
	return append(b, '}'), ""
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
func (t *Tree) delete(cl *caller, m *message, r resource, o *op) ([]byte, string) {
	if r.path == "/" || r.hasAttr || r.hasQuery {
		return nil, reasonInvalidRes
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if reason := t.usable(cl); reason != "" {
		return nil, reason
	}
	if !t.permit(cl.identity, OpDelete, r.path) {
		return nil, reasonForbidden
	}
	n := t.lookup(r.path)
	if n == nil || n.entity == nil {
		return nil, reasonNotFound
	}
	t.removeEntity(n, cl.from, o)
	return nil, ""
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

// seqBlock is how many seqs the tree reserves in the store at a time.
const seqBlock = 1 << 16

// nextSeq hands out the next seq. Called with the lock.
//
// Seqs must keep increasing across a crash, or a client that saw seqs of
// transient changes (which are never stored) would be told after a
// restart that its "since" was recovered. So the store keeps a
// reservation rather than the last seq: a restart resumes after it. The
// committer renews it in the background when half of it is used, so that
// no operation waits for it; only a store that took longer than 32,768
// changes to save one batch could let seq pass the reservation.
func (t *Tree) nextSeq() uint64 {
	t.seq++
	if t.st != nil && t.seq+seqBlock/2 > t.reserved {
		t.reserved = t.seq + seqBlock
		t.kickCommitter()
	}
	return t.seq
}

// setEntity gives n its new entity and decides its lifetime: owned by the
// client that wrote it without persistent:true, leased when a Call gave
// "expires", persistent otherwise. Called with the lock.
func (t *Tree) setEntity(n *node, typ string, e prepared, cl *caller, persistent bool, lease time.Duration, o *op) {
	n.typ, n.entity, n.pub = typ, e.full, e.pub
	t.release(n)
	switch {
	case cl.c != nil && !persistent:
		n.owner = cl.c
		if cl.c.owned == nil {
			cl.c.owned = make(map[*node]struct{})
		}
		cl.c.owned[n] = struct{}{}
		n.persist = false
		t.unstore(n, o)
	case cl.c == nil && lease > 0:
		t.startLease(n, lease)
		n.persist = false
		t.unstore(n, o)
	default:
		n.persist = true
		t.store(n, o)
	}
}

// release ends n's ownership by a client and its lease. Called with the
// lock.
func (t *Tree) release(n *node) {
	if n.owner != nil {
		delete(n.owner.owned, n)
		n.owner = nil
	}
	if n.lease != nil {
		n.lease.Stop()
		n.lease = nil
		delete(t.leases, n)
	}
}

// removeEntity deletes n's entity with its notifications (from as their
// "from"), and n itself when it has no children. Called with the lock.
func (t *Tree) removeEntity(n *node, from string, o *op) {
	seq := t.nextSeq()
	t.release(n)
	n.typ, n.entity, n.pub, n.persist = "", nil, nil, false
	t.unstore(n, o)
	t.emitChange(n, "DELETE", "delete", from, seq)
	t.prune(n, o)
}

// emitChange sends the notifications of a change to n: kind ("PUT",
// "POST", "DELETE") to the subscribers of n, UPDATE with key ("update",
// "create", "delete") to those of its parent. Called with the lock.
func (t *Tree) emitChange(n *node, kind, key, from string, seq uint64) {
	p := n.parent
	// One access for both notifications, found only when someone listens.
	var found access
	var a *access
	if t.subs[n.path] != nil || t.subs[p.path] != nil {
		a = &found
		t.accessAt(a, n.path)
	}
	t.emit(n.path, n.path, a, changeNote(kind, n.path, n.typ, n.pub, from, seq), seq)
	t.emit(p.path, n.path, a, updateNote(p.path, key, n.name, n.typ, n.pub, seq), seq)
}
