package channel

import "iter"

// ownedSet is the transient entities a connection owns. Most own one (a
// presence entry), which a pointer holds where a map of one takes about
// 200 bytes; every node of a fleet holds the set of every connection
// (issue 36, docs/fleet.md §13). The zero value is empty.
type ownedSet struct {
	one  *node
	many map[*node]struct{}
}

// add puts n in the set; n must not be in it.
func (s *ownedSet) add(n *node) {
	switch {
	case s.many != nil:
		s.many[n] = struct{}{}
	case s.one == nil:
		s.one = n
	default:
		s.many = map[*node]struct{}{s.one: {}, n: {}}
		s.one = nil
	}
}

// remove takes n out of the set, if it is in it.
func (s *ownedSet) remove(n *node) {
	if s.many != nil {
		delete(s.many, n)
		return
	}
	if s.one == n {
		s.one = nil
	}
}

// len is the number of entities in the set.
func (s *ownedSet) len() int {
	if s.many != nil {
		return len(s.many)
	}
	if s.one != nil {
		return 1
	}
	return 0
}

// all yields the entities of the set. Removing the one being yielded is
// allowed; other changes during the walk are not.
func (s *ownedSet) all() iter.Seq[*node] {
	return func(yield func(*node) bool) {
		if s.many != nil {
			for n := range s.many {
				if !yield(n) {
					return
				}
			}
			return
		}
		if s.one != nil {
			yield(s.one)
		}
	}
}
