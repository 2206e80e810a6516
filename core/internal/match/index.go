package match

import (
	"slices"
	"sort"
	"strings"
)

// Index finds the routes whose literal prefix starts a target, in table
// order, so that a table of hundreds of routes costs a walk along the target
// rather than a pattern match per route. Build it with [NewIndex]; the zero
// Index holds no routes. It is safe for concurrent use.
//
// It is a radix tree over the routes' literal prefixes: each node lists, in
// ascending order, the routes whose prefix ends at it. Walking the target
// down the tree meets exactly the routes whose prefix starts the target (the
// root holds the routes with an empty prefix); merging their lists yields
// the candidates in table order.
type Index struct {
	prefixes []string     // per route, for the slow path
	nodes    []prefixNode // nodes[0] is the root
	// merged is set when every node holds its path's routes merged
	// (prefixNode.path), so that a walk takes them from the last node it
	// reaches instead of merging the lists it meets.
	merged bool
}

// prefixNode is a node of the radix tree.
type prefixNode struct {
	label  string  // text of the edge from the parent; empty at the root
	keys   string  // first byte of each child's label, sorted
	kids   []int32 // the children, parallel to keys
	routes []int32 // routes whose prefix ends here, ascending
	// path holds the routes of this node and of every node above it,
	// ascending: those whose prefix starts any target that reaches this
	// node. Filled in when the table is small enough (Index.merged).
	path []int32
}

// maxMergedFactor bounds the merged lists NewIndex keeps: at most this many
// entries per route in all (a route with a short prefix appears in the list
// of every node below it), else walks merge the lists they meet.
const maxMergedFactor = 8

// maxPrefixLists is the number of non-empty route lists a walk merges
// without allocating; a walk meeting more uses a linear scan.
const maxPrefixLists = 32

// NewIndex builds the index of a table whose route i has the literal prefix
// prefixes[i], usually a [Matcher]'s Prefix. Routes are numbered from 0 in
// the order of prefixes.
func NewIndex(prefixes []string) Index {
	p := Index{prefixes: slices.Clone(prefixes)}
	// A plain byte trie first, then compressed.
	type trieNode struct {
		kids   map[byte]int
		routes []int32
	}
	trie := []trieNode{{}}
	for i, pre := range prefixes {
		n := 0
		for j := 0; j < len(pre); j++ {
			k, ok := trie[n].kids[pre[j]]
			if !ok {
				if trie[n].kids == nil {
					trie[n].kids = make(map[byte]int)
				}
				k = len(trie)
				trie[n].kids[pre[j]] = k
				trie = append(trie, trieNode{})
			}
			n = k
		}
		trie[n].routes = append(trie[n].routes, int32(i))
	}
	// add appends the node for trie node n, reached by label, and its
	// subtree, and returns its index. A node that ends no prefix and has a
	// single child merges with it, except at the root.
	var add func(n int, label string) int32
	add = func(n int, label string) int32 {
		for n != 0 && len(trie[n].routes) == 0 && len(trie[n].kids) == 1 {
			for c, k := range trie[n].kids {
				label += string([]byte{c}) // the byte, not the rune U+00XX
				n = k
			}
		}
		idx := int32(len(p.nodes))
		p.nodes = append(p.nodes, prefixNode{label: label, routes: trie[n].routes})
		keys := make([]byte, 0, len(trie[n].kids))
		for c := range trie[n].kids {
			keys = append(keys, c)
		}
		sort.Slice(keys, func(a, b int) bool { return keys[a] < keys[b] })
		kids := make([]int32, len(keys))
		for j, c := range keys {
			kids[j] = add(trie[n].kids[c], string([]byte{c}))
		}
		p.nodes[idx].keys = string(keys)
		p.nodes[idx].kids = kids
		return idx
	}
	add(0, "")
	p.mergePaths(len(prefixes))
	return p
}

// mergePaths fills in every node's path list, unless they would hold more
// than maxMergedFactor entries per route in all (plus a few), in which case
// it fills in none and walks merge as they go.
func (p *Index) mergePaths(routes int) {
	budget := maxMergedFactor*routes + 64
	var fill func(ni int32, above []int32) bool
	fill = func(ni int32, above []int32) bool {
		node := &p.nodes[ni]
		path := make([]int32, 0, len(above)+len(node.routes))
		path = append(path, above...)
		path = append(path, node.routes...)
		slices.Sort(path)
		if budget -= len(path); budget < 0 {
			return false
		}
		node.path = path
		for _, k := range node.kids {
			if !fill(k, path) {
				return false
			}
		}
		return true
	}
	if p.merged = fill(0, nil); !p.merged {
		for i := range p.nodes {
			p.nodes[i].path = nil
		}
	}
}

// walk returns the last node of the walk along target: the deepest node
// whose path from the root spells a prefix of target.
func (p *Index) walk(target string) *prefixNode {
	node := &p.nodes[0]
	for pos := 0; pos < len(target); {
		k := indexByte(node.keys, target[pos])
		if k < 0 {
			break
		}
		child := &p.nodes[node.kids[k]]
		if len(target)-pos < len(child.label) || target[pos:pos+len(child.label)] != child.label {
			break
		}
		pos += len(child.label)
		node = child
	}
	return node
}

// indexByte is strings.IndexByte for the few keys of a node, without the
// call.
func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// Each calls try for every route index from start whose prefix starts
// target, in ascending order, and returns the first index for which try
// reports true, or -1. It does not allocate or retain try. A walk along
// target that meets more than 32 nodes ending routes at or after start falls
// back to a linear scan of the prefixes, with the same result.
func (p *Index) Each(start int, target string, try func(int) bool) int {
	if len(p.nodes) == 0 {
		return -1
	}
	if p.merged {
		path := p.walk(target).path
		for _, i := range path[searchInt32(path, start):] {
			if try(int(i)) {
				return int(i)
			}
		}
		return -1
	}
	return p.eachMerging(start, target, try)
}

// eachMerging is Each for an index without merged paths: it merges the
// lists of the nodes it meets.
func (p *Index) eachMerging(start int, target string, try func(int) bool) int {
	// The lists met along the target, each as its node and the position of
	// its first index >= start: 256 bytes of stack, not slices.
	var lists [maxPrefixLists]listCursor
	n := 0
	ni := int32(0)
	node := &p.nodes[0]
	pos := 0
	for {
		if rs := node.routes; len(rs) > 0 && int(rs[len(rs)-1]) >= start {
			if n == maxPrefixLists {
				return p.scan(start, target, try)
			}
			lists[n] = listCursor{node: ni, at: int32(searchInt32(rs, start))}
			n++
		}
		if pos >= len(target) {
			break
		}
		k := strings.IndexByte(node.keys, target[pos])
		if k < 0 {
			break
		}
		ci := node.kids[k]
		child := &p.nodes[ci]
		if len(target)-pos < len(child.label) || target[pos:pos+len(child.label)] != child.label {
			break
		}
		pos += len(child.label)
		node, ni = child, ci
	}
	if n == 1 {
		for _, i := range p.nodes[lists[0].node].routes[lists[0].at:] {
			if try(int(i)) {
				return int(i)
			}
		}
		return -1
	}
	// Merge: try the smallest head of the lists each time.
	for {
		best, bestIdx := -1, int32(0)
		for j := range lists[:n] {
			l := &lists[j]
			rs := p.nodes[l.node].routes
			if int(l.at) < len(rs) && (best < 0 || rs[l.at] < bestIdx) {
				best, bestIdx = j, rs[l.at]
			}
		}
		if best < 0 {
			return -1
		}
		lists[best].at++
		if try(int(bestIdx)) {
			return int(bestIdx)
		}
	}
}

// listCursor is a list of routes met by Each: those of nodes[node], from
// position at.
type listCursor struct {
	node, at int32
}

// scan is Each by a linear scan of the prefixes.
func (p *Index) scan(start int, target string, try func(int) bool) int {
	for i := max(start, 0); i < len(p.prefixes); i++ { // a start below 0 is 0, as in Each's walk
		pre := p.prefixes[i]
		if len(target) >= len(pre) && target[:len(pre)] == pre && try(i) {
			return i
		}
	}
	return -1
}

// searchInt32 returns the first position of the ascending a holding a value
// >= x, or len(a).
func searchInt32(a []int32, x int) int {
	lo, hi := 0, len(a)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int(a[m]) < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
