package channel

import (
	"iter"
	"slices"
)

// maxFewSubs is how many paths a subSet keeps in a slice before it moves
// them to a map.
const maxFewSubs = 8

// subSet is the paths a client subscribes to. Most clients subscribe to a
// few, which a slice holds in 16 bytes each where a map of one path takes
// about 250 (an idle subscribed WebSocket's); past maxFewSubs a map keeps
// the lookups of SUBSCRIBE constant. The zero value is empty.
type subSet struct {
	few  []string
	many map[string]struct{}
}

// has reports whether p is in the set.
func (s *subSet) has(p string) bool {
	if s.many != nil {
		_, ok := s.many[p]
		return ok
	}
	return slices.Contains(s.few, p)
}

// add puts p in the set; p must not be in it.
func (s *subSet) add(p string) {
	if s.many != nil {
		s.many[p] = struct{}{}
		return
	}
	if len(s.few) < maxFewSubs {
		s.few = append(s.few, p)
		return
	}
	s.many = make(map[string]struct{}, 2*maxFewSubs)
	for _, q := range s.few {
		s.many[q] = struct{}{}
	}
	s.many[p] = struct{}{}
	s.few = nil
}

// remove takes p out of the set and reports whether it was in it.
func (s *subSet) remove(p string) bool {
	if s.many != nil {
		if _, ok := s.many[p]; !ok {
			return false
		}
		delete(s.many, p)
		return true
	}
	i := slices.Index(s.few, p)
	if i < 0 {
		return false
	}
	last := len(s.few) - 1
	s.few[i] = s.few[last]
	s.few[last] = ""
	s.few = s.few[:last]
	if last == 0 {
		s.few = nil // an idle client that unsubscribed holds nothing
	}
	return true
}

// len is the number of paths in the set.
func (s *subSet) len() int {
	if s.many != nil {
		return len(s.many)
	}
	return len(s.few)
}

// all yields the paths of the set. Removing the path being yielded is
// allowed (the slice is walked from its end, and remove moves only the
// last path); other changes during the walk are not.
func (s *subSet) all() iter.Seq[string] {
	return func(yield func(string) bool) {
		if s.many != nil {
			for p := range s.many {
				if !yield(p) {
					return
				}
			}
			return
		}
		for i := len(s.few) - 1; i >= 0; i-- {
			if i >= len(s.few) {
				continue
			}
			if !yield(s.few[i]) {
				return
			}
		}
	}
}
