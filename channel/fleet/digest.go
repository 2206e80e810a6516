package fleet

import (
	"fmt"
	"slices"
)

// Marks of the applied state that heartbeats carry, to compare nodes at
// the same position of the log.
const (
	markEvery = 64 // a node records its state at every position divisible by it
	marksKept = 8  // and keeps its last ones (and its heartbeats')
)

// mark is a node's state after it applied the entry at Pos: the tree's
// seq and the running hash of the batches applied.
type mark struct {
	Pos  uint64 `json:"pos"`
	Seq  uint64 `json:"seq"`
	Hash uint64 `json:"hash"`
}

// markApplied records the tree's state when the consumer applied the
// entry at pos, a position every node records.
func (f *Fleet) markApplied(pos uint64) {
	if pos%markEvery != 0 {
		return
	}
	applied, seq, hash := f.tree.State()
	f.record(mark{applied, seq, hash})
}

// record keeps m among this node's last marks.
func (f *Fleet) record(m mark) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.marks); n > 0 && f.marks[n-1].Pos >= m.Pos {
		return
	}
	f.marks = append(f.marks, m)
	if len(f.marks) > marksKept {
		f.marks = slices.Delete(f.marks, 0, len(f.marks)-marksKept)
	}
}

// compare checks the marks of another node's heartbeat against this
// node's at the newest position both recorded, and decides whether this
// node diverged: it disagrees with at least half of the live nodes it
// watches, itself included (with three nodes, a node that disagrees with
// both others; with two, both; in a larger fleet, with two of its three
// predecessors). A tree that diverged stays so: the hash chains every
// batch.
func (f *Fleet) compare(b beat) {
	if b.Node == f.node {
		return
	}
	f.mu.Lock()
	var theirs, ours *mark
	for i := len(b.Marks) - 1; i >= 0 && ours == nil; i-- {
		for j := range f.marks {
			if f.marks[j].Pos == b.Marks[i].Pos {
				theirs, ours = &b.Marks[i], &f.marks[j]
				break
			}
		}
	}
	if ours == nil {
		f.mu.Unlock()
		return
	}
	differs := *ours != *theirs
	was, known := f.differs[b.Node]
	f.differs[b.Node] = differs
	f.mu.Unlock()
	if differs && (!known || !was) {
		f.log.Error("fleet: another node's tree differs from this node's", "node", b.Node, "pos", ours.Pos,
			"seq", ours.Seq, "their_seq", theirs.Seq, "hash", fmt.Sprintf("%016x", ours.Hash), "their_hash", fmt.Sprintf("%016x", theirs.Hash))
	}
	live := f.Live()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.divergent != nil {
		return
	}
	var against []string
	judges := 1 // this node, and the live nodes it watches
	for _, n := range live {
		if n == f.node || f.sus[n] == nil {
			continue
		}
		judges++
		if f.differs[n] {
			against = append(against, n)
		}
	}
	if len(against) == 0 || 2*len(against) < judges {
		return
	}
	slices.Sort(against)
	f.divergent = fmt.Errorf("fleet: this node's tree diverged from the other nodes' (%v) at position %d: restart it", against, ours.Pos)
	f.log.Error("fleet: this node's tree diverged", "against", against, "pos", ours.Pos)
}

// Divergent reports whether this node found its tree differs from the
// other nodes' (see compare).
func (f *Fleet) Divergent() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.divergent != nil
}
