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
	n := t.lookup(r.path)
	if n == nil {
		return nil, reasonNotFound
	}
	if !t.permit(cl.identity, actRead, r.path, n.creator) {
		return nil, reasonForbidden
	}
	b := replyStart(m.MsgID, len(m.Resource)+len(n.pub)+32)
	b = append(b, `,"resource":`...)
	b = AppendString(b, m.Resource)
	switch {
	case r.hasAttr:
		if n.entity == nil || r.attr[0] == '_' {
			return nil, reasonNotFound
		}
		v, ok := entityField(n.entity, r.attr)
		if !ok {
			return nil, reasonNotFound
		}
		b = append(b, `,"entity":`...)
		b = append(b, v...)
	case r.hasQuery:
		b = append(b, `,"type":"`+defaultType+`","entity":`...)
		b = t.appendChildren(b, n, l)
	case n.entity != nil:
		b = append(b, `,"type":`...)
		b = AppendString(b, n.typ)
		b = append(b, `,"entity":`...)
		b = append(b, n.pub...)
	default:
		b = append(b, `,"type":"`+defaultType+`","entity":`...)
		b = appendChildIDs(b, n)
	}
	return append(b, '}'), ""
}

// appendChildIDs appends the ids of n's children, in creation order, as a
// JSON array.
func appendChildIDs(b []byte, n *node) []byte {
	b = append(b, '[')
	for c := n.first; c != nil; c = c.next {
		if c != n.first {
			b = append(b, ',')
		}
		b = AppendString(b, c.name)
	}
	return append(b, ']')
}

// appendChildren appends the children of n as listing l asks.
func (t *Tree) appendChildren(b []byte, n *node, l listing) []byte {
	first, step := n.first, func(c *node) *node { return c.next }
	if l.desc {
		first, step = n.last, func(c *node) *node { return c.prev }
	}
	if l.deep == 0 {
		count := 0
		for c := first; c != nil; c = step(c) {
			if l.like == "" || like(l.like, c.name) {
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
		if l.like != "" && !like(l.like, c.name) {
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
			b = AppendString(b, c.name)
			continue
		}
		b = append(b, `{"rid":`...)
		b = AppendString(b, c.name)
		b = append(b, `,"type":`...)
		if c.entity != nil {
			b = AppendString(b, c.typ)
			b = append(b, `,"entity":`...)
			b = append(b, c.pub...)
		} else {
			b = append(b, `"`+defaultType+`","entity":`...)
			b = appendChildIDs(b, c)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}
