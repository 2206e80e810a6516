package channel

import (
	"slices"
	"strings"
)

// Admin is the identity of the administrator, who may do everything
// everywhere (docs/channel.md#operations-and-callers). A door must give it
// to the administrator alone: reso's authenticator refuses a login record
// with that e-mail.
const Admin = "admin"

// maxDepth is the most segments of a path (see validPath).
const maxDepth = 32

// group is the group of a subtree: e-mails, in the order given.
type group struct {
	members []string
	set     map[string]struct{} // for long groups
}

// groupIndexAt is the length from which a group keeps a set.
const groupIndexAt = 8

// maxGroup bounds the members of one group.
const maxGroup = 1024

// newGroup returns the group of members; nil members give an empty group.
func newGroup(members []string) *group {
	g := &group{members: members}
	if len(members) >= groupIndexAt {
		g.set = make(map[string]struct{}, len(members))
		for _, m := range members {
			g.set[m] = struct{}{}
		}
	}
	return g
}

// has reports whether identity is a member.
func (g *group) has(identity string) bool {
	if g.set != nil {
		_, ok := g.set[identity]
		return ok
	}
	for _, m := range g.members {
		if m == identity {
			return true
		}
	}
	return false
}

// access is what the rules in force at one path give: the rights of each
// kind of caller, who counts as self there and the group in force.
type access struct {
	rule    Rule
	owners  [maxDepth]string // creators on the way, below the top level
	nOwners int
	group   *group
}

// accessAt fills a with the access at path, whether or not a resource is
// there: the rule of its top-level path narrowed by the rule of every
// existing node on the way down; a missing node passes on what its parent
// has. Called with the lock.
func (t *Tree) accessAt(a *access, path string) { t.accessOf(a, path, t.lookup(path)) }

// accessOf is accessAt where n is the node at path, nil when there is
// none, and returns the deepest node that exists on the way to path (path's
// own, or the root). The nodes on the way are found from that one up its
// parents (a node's ancestors all exist), not by looking up each path on
// the way down: a write to a path that exists, or to a new child of one
// that does, looks up no path but those.
func (t *Tree) accessOf(a *access, path string, n *node) (deepest *node) {
	*a = access{rule: *t.opt.Rules.of("")}
	if path == "/" {
		return t.root
	}
	for p := path; n == nil; {
		p, _ = parentPath(p)
		n = t.lookup(p)
	}
	if n == t.root {
		// Not even the top-level path exists: its rule.
		top, _, _ := strings.Cut(path[1:], "/")
		a.rule = *t.opt.Rules.of(top)
		return n
	}
	var stack [maxDepth]*node
	way := stack[:0]
	for m := n; m != t.root; m = m.parent {
		way = append(way, m)
	}
	for _, m := range slices.Backward(way) {
		t.descend(a, m)
	}
	return n
}

// descend turns a, the access at n's parent, into the access at n.
func (t *Tree) descend(a *access, n *node) {
	if n.parent == t.root {
		a.rule = *t.opt.Rules.of(n.name())
	} else if n.creator() != "" && a.nOwners < maxDepth {
		a.owners[a.nOwners] = n.creator()
		a.nOwners++
	}
	if x := n.x; x != nil {
		if x.rule != nil {
			a.rule.narrow(x.rule)
		}
		if x.group != nil {
			a.group = x.group
		}
	}
}

// kind returns the kind of caller identity is at a (the first that
// applies: self, group, auth, anon).
func (a *access) kind(identity string) Kind {
	if identity == "" {
		return Anon
	}
	for _, o := range a.owners[:a.nOwners] {
		if o == identity {
			return Self
		}
	}
	if a.group != nil && a.group.has(identity) {
		return Group
	}
	return Auth
}

// allows reports whether identity may do ops at a.
func (a *access) allows(identity string, ops Ops) bool {
	return identity == Admin || a.rule.Allows(a.kind(identity), ops)
}

// delivers reports whether c may read at a, as allows does, with c's
// memo of its group membership: the check of each subscriber at a
// fan-out. Called with the tree's write lock held.
func (a *access) delivers(c *Client) bool {
	id := c.identity
	if id == Admin {
		return true
	}
	k := Anon
	if id != "" {
		k = Auth
		for _, o := range a.owners[:a.nOwners] {
			if o == id {
				k = Self
				break
			}
		}
		if k == Auth && a.group != nil {
			if c.memo.group != a.group {
				c.memo.group, c.memo.member = a.group, a.group.has(id)
			}
			if c.memo.member {
				k = Group
			}
		}
	}
	return a.rule.Allows(k, OpRead)
}

// everyone reports whether every kind of caller may do ops at a, so that
// no caller needs to be judged.
func (a *access) everyone(ops Ops) bool {
	for k := range numKinds {
		if !a.rule.Allows(k, ops) {
			return false
		}
	}
	return true
}

// permit reports whether identity ("" anonymous) may do ops at path: the
// one check every operation of every door passes through. Called with the
// lock.
func (t *Tree) permit(identity string, ops Ops, path string) bool {
	if identity == Admin {
		return true
	}
	ok, _ := t.permitOf(identity, ops, path, t.lookup(path))
	return ok
}

// permitOf is permit where n is the node at path, nil when there is none;
// it also returns the deepest node that exists on the way to path (see
// accessOf), which a write creating a resource creates it under.
func (t *Tree) permitOf(identity string, ops Ops, path string, n *node) (bool, *node) {
	var a access
	deepest := t.accessOf(&a, path, n)
	return identity == Admin || a.allows(identity, ops), deepest
}

// seen fills a with the access a caller is judged by at path for what
// would tell whether a resource exists (docs/channel.md#hidden-resources),
// and reports whether identity may read there. It is the access at path
// when identity may read there. Otherwise it is the access at path as if
// the first resource on the way that identity may not read were missing,
// and everything below it with it (which is what a missing resource
// implies): the access at that resource's parent. Called with the lock.
func (t *Tree) seen(a *access, identity, path string) bool {
	t.accessAt(a, path)
	if a.allows(identity, OpRead) {
		return true
	}
	*a = access{rule: *t.opt.Rules.of("")}
	if path == "/" {
		return false
	}
	var b access
	for i, top := 1, true; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		if top {
			// The top-level path as if it did not exist.
			a.rule = *t.opt.Rules.of(path[1:i])
			top = false
		}
		n := t.lookup(path[:i])
		if n == nil {
			return false
		}
		b = *a
		t.descend(&b, n)
		if !b.allows(identity, OpRead) {
			return false
		}
		*a = b
	}
	return false
}

// readDenied returns the failure of a read of path that identity may not
// do, or "" when it may: "not found" when the read would be allowed were
// the resources identity may not read missing, which is what a read of a
// missing resource answers, and "forbidden" when it would be denied
// anyway. So a denied read never tells whether a resource the caller may
// not read exists. Called with the lock.
func (t *Tree) readDenied(identity, path string) string {
	if identity == Admin {
		return ""
	}
	var a access
	switch {
	case t.seen(&a, identity, path):
		return ""
	case a.allows(identity, OpRead):
		return reasonNotFound
	}
	return reasonForbidden
}

// shows reports whether n, which identity may read with access a there,
// shows to it as a resource: a node with an entity does, and one without
// only when one of its children shows. A node that exists only for
// children the caller may not read is missing to it. Called with the
// lock.
func (t *Tree) shows(identity string, n *node, a *access) bool {
	if n.entity() != nil || n == t.root || identity == Admin {
		return true
	}
	var ca access
	for c := n.first(); c != nil; c = c.next {
		ca = *a
		t.descend(&ca, c)
		if ca.allows(identity, OpRead) && t.shows(identity, c, &ca) {
			return true
		}
	}
	return false
}
