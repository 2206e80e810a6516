package channel

import "strconv"

// get runs GET: the entity of /p (private fields removed), one field of
// /p[attr], or the children of /p?deep=...; a node without entity gives
// the ids of its children.
func (t *Tree) get(cl *caller, m *message, r resource) ([]byte, string) {
	var l listing
	if r.hasQuery {
		var ok bool
		if l, ok = parseListing(r.query); !ok {
			return nil, reasonInvalidQuery
		}
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if reason := t.readDenied(cl.identity, r.path); reason != "" {
		return nil, reason
	}
	n := t.lookup(r.path)
	if n == nil {
		return nil, reasonNotFound
	}
	var ls *lister
	if n.entity() == nil || r.hasQuery {
		ls = t.lister(cl.identity, n)
		if n.entity() == nil && !t.shows(cl.identity, n, &ls.a) {
			return nil, reasonNotFound
		}
	}
	b := replyStart(m.MsgID, len(m.Resource)+len(n.pub())+32)
	b = append(b, `,"resource":`...)
	b = AppendString(b, m.Resource)
	switch {
	case r.hasAttr:
		if n.entity() == nil || r.attr[0] == '_' {
			return nil, reasonNotFound
		}
		v, ok := entityField(n.pub(), r.attr)
		if !ok {
			return nil, reasonNotFound
		}
		b = append(b, `,"entity":`...)
		b = append(b, v...)
	case r.hasQuery:
		b = append(b, `,"type":"`+defaultType+`","entity":`...)
		b = t.appendChildren(b, ls, l)
	case n.entity() != nil:
		b = append(b, `,"type":`...)
		b = AppendString(b, n.typ())
		b = append(b, `,"entity":`...)
		b = append(b, n.pub()...)
	default:
		b = append(b, `,"type":"`+defaultType+`","entity":`...)
		b = appendChildIDs(b, ls)
	}
	return append(b, '}'), ""
}

// lister lists the children of one node that a caller may read
// (docs/channel.md#denials).
type lister struct {
	t        *Tree
	n        *node
	identity string
	a        access // at n
}

// lister returns the lister of n's children for identity. Called with the
// lock.
func (t *Tree) lister(identity string, n *node) *lister {
	l := &lister{t: t, n: n, identity: identity}
	t.accessAt(&l.a, n.path)
	return l
}

// sees reports whether the caller may read c, a child of l.n, and c
// shows to it (a node without entity only for children it may read).
func (l *lister) sees(c *node) bool {
	if l.identity == Admin {
		return true
	}
	a := l.a
	l.t.descend(&a, c)
	return a.allows(l.identity, OpRead) && l.t.shows(l.identity, c, &a)
}

// child returns the lister of c, a child of l.n.
func (l *lister) child(c *node) *lister {
	cl := &lister{t: l.t, n: c, identity: l.identity, a: l.a}
	l.t.descend(&cl.a, c)
	return cl
}

// appendChildIDs appends the ids of the children of l.n the caller may
// read, in creation order, as a JSON array.
func appendChildIDs(b []byte, l *lister) []byte {
	b = append(b, '[')
	first := true
	for c := l.n.first(); c != nil; c = c.next {
		if !l.sees(c) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = AppendString(b, c.name())
	}
	return append(b, ']')
}

// appendChildren appends the children of ls.n the caller may read, as
// listing l asks.
func (t *Tree) appendChildren(b []byte, ls *lister, l listing) []byte {
	n := ls.n
	first, step := n.first(), func(c *node) *node { return c.next }
	if l.desc {
		first, step = n.last(), func(c *node) *node { return c.prev }
	}
	if l.deep == 0 {
		count := 0
		for c := first; c != nil; c = step(c) {
			if (l.like == "" || like(l.like, c.name())) && ls.sees(c) {
				count++
			}
		}
		b = append(b, `{"count":`...)
		b = strconv.AppendInt(b, int64(count), 10)
		return append(b, '}')
	}
	b = append(b, '[')
	skip, taken := l.offset, 0
	for c := first; c != nil && (l.limit < 0 || taken < l.limit); c = step(c) {
		if l.like != "" && !like(l.like, c.name()) || !ls.sees(c) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		if taken > 0 {
			b = append(b, ',')
		}
		taken++
		if l.deep == 1 {
			b = AppendString(b, c.name())
			continue
		}
		b = append(b, `{"rid":`...)
		b = AppendString(b, c.name())
		b = append(b, `,"type":`...)
		if c.entity() != nil {
			b = AppendString(b, c.typ())
			b = append(b, `,"entity":`...)
			b = append(b, c.pub()...)
		} else {
			b = append(b, `"`+defaultType+`","entity":`...)
			b = appendChildIDs(b, ls.child(c))
		}
		b = append(b, '}')
	}
	return append(b, ']')
}
