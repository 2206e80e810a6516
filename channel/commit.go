package channel

import (
	"context"
	"sort"
	"time"
)

// A change to the tree takes three steps, the shape a replicated log
// needs too (a node applies a change once the log has it):
//
//  1. propose: under the lock, the message is checked against the tree
//     as every client sees it, and the records the store must keep are
//     computed (plan*, node.go). The tree does not change yet.
//  2. store: the committer gives each change of the batch proposed
//     meanwhile its seq, in the order proposed, and saves their records
//     in one [Store.Save] (group commit), with a mark past those seqs.
//  3. apply: under the lock, the changes of the saved batch are made in
//     that order and send their notifications. The replies of their
//     callers come after.
//
// A change that touches no record (a transient one) skips the store: it
// is applied at once, when proposed. A batch whose Save fails is
// dropped: none of its changes is applied, and their callers get "store
// failed"; their seqs are never used.
//
// A change waiting in a batch marks what it read and what it will write
// (batch.hot, kids, below). An operation that would read or write a
// marked part of the tree waits until that batch is applied or dropped,
// then starts over: every change applies to the tree it was checked
// against, and a failed batch invalidates no other change. A change
// applied at once also waits while the batch being saved, whose seqs are
// lower, notifies about the same resources (batch.notes), so that every
// subscriber gets the notifications of a resource in the order of their
// seq.

// groupCommit is the state of a tree's writes to its store: the mark the
// store keeps, the batches, the committer's signals. Its fields are
// guarded by the tree's lock, except those only the committer touches.
type groupCommit struct {
	// saved is the mark the store keeps, which no seq handed out passes
	// (see room).
	saved uint64
	// batchSize is the size of the last batch saved, which the next
	// one's maps start with.
	batchSize batchSize
	// pend gathers the changes proposed while saving is being saved (see
	// propose); roomCh is closed when the committer has tried to save a
	// new mark.
	pend, saving *batch
	roomCh       chan struct{}

	kick      chan struct{} // wakes the committer
	committed chan struct{} // closed when the committer ends
	closeErr  error         // of the last Save, set before committed closes
}

// change is one proposed change: the records it changes (a record with
// Created 0 is of a node it creates, and gets its seq) and how to apply
// it, given its seq (0 for a change that sends no notification).
type change struct {
	recs  journal
	emits bool
	seq   uint64
	apply func(seq uint64)
}

// batch is one group commit: changes proposed while the previous batch
// was being saved, saved in one Store.Save and then applied. done is
// closed once the batch is applied, or dropped with err set.
type batch struct {
	changes []change
	// hot are the paths whose node the changes create, change or remove;
	// kids the parents of those (their children change); below the
	// ancestors of the paths the changes are about (their rules were
	// judged); notes the resources the changes notify about.
	hot, kids, below, notes map[string]struct{}
	// replies are those of the changes of connections that did not wait
	// for the batch (see pipelining), queued once it is applied or
	// dropped; finished is set then, under the lock.
	replies  []pendingReply
	finished bool
	done     chan struct{}
	err      error
}

// batchSize is how many changes and marks a batch had, up to
// maxBatchSize each (see propose).
type batchSize struct{ changes, hot, kids, below, notes int }

// maxBatchSize bounds the changes that pipelined connections add to a
// batch (a connection that waits for its change adds one more at most),
// and the sizes a batch starts with: one after a burst does not take its
// size.
const maxBatchSize = 4096

// propose adds a change about path to the pending batch: recs are
// stored, then apply runs under the lock; emits tells whether it sends
// notifications (about path and its parent), and so takes a seq. by is
// the client that proposed it (nil: none), whose end waits for the
// batch. Called with the lock.
func (t *Tree) propose(path string, recs journal, emits bool, by *Client, apply func(seq uint64)) *batch {
	b := t.pend
	if b == nil {
		// Sized as the last batch's, so that a steady load does not grow
		// them change by change.
		sz := &t.batchSize
		b = &batch{
			hot: make(map[string]struct{}, sz.hot), kids: make(map[string]struct{}, sz.kids),
			below: make(map[string]struct{}, sz.below), notes: make(map[string]struct{}, sz.notes),
			changes: make([]change, 0, sz.changes),
			done:    make(chan struct{}),
		}
		t.pend = b
	}
	b.changes = append(b.changes, change{recs: recs, emits: emits, apply: apply})
	mark := func(p string) {
		b.hot[p] = struct{}{}
		if p != "/" {
			pp, _ := parentPath(p)
			b.kids[pp] = struct{}{}
		}
	}
	mark(path)
	for p := range recs {
		mark(p)
	}
	for p := path; p != "/"; {
		p, _ = parentPath(p)
		b.below[p] = struct{}{}
	}
	if emits {
		b.notes[path] = struct{}{}
		pp, _ := parentPath(path)
		b.notes[pp] = struct{}{}
	}
	if by != nil {
		by.pend = b
	}
	return b
}

// Kinds of access an operation checks against the waiting changes.
const (
	// touchRemove: the operation may remove nodes or records at or above
	// its path, which depends on their children.
	touchRemove = 1 << iota
	// touchRules: the operation changes the rules, group or owner of its
	// path, on which the changes below it were judged.
	touchRules
)

// conflict returns what an operation on path must wait for before it
// runs: the done channel of a waiting batch that marked what it reads or
// writes, or nil. touch is a set of touch* bits. Called with the lock.
func (t *Tree) conflict(path string, touch int) <-chan struct{} {
	for _, b := range [2]*batch{t.saving, t.pend} {
		if b == nil {
			continue
		}
		for p := path; ; p, _ = parentPath(p) {
			if _, ok := b.hot[p]; ok {
				return b.done
			}
			if _, ok := b.kids[p]; ok && touch&touchRemove != 0 {
				return b.done
			}
			if p == "/" {
				break
			}
		}
		if _, ok := b.below[path]; ok && touch&touchRules != 0 {
			return b.done
		}
	}
	return nil
}

// behind returns what a change applied at once must wait for so as not
// to notify before changes with lower seqs: the done channel of the batch
// being saved when it notifies about path (or, with parent set, about
// path's parent), nil otherwise. Called with the lock.
func (t *Tree) behind(path string, parent bool) <-chan struct{} {
	b := t.saving
	if b == nil || len(b.notes) == 0 {
		return nil
	}
	if _, ok := b.notes[path]; ok {
		return b.done
	}
	if parent && path != "/" {
		pp, _ := parentPath(path)
		if _, ok := b.notes[pp]; ok {
			return b.done
		}
	}
	return nil
}

// kickCommitter wakes the committer after a batch got changes.
func (t *Tree) kickCommitter() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// seqBlock is how many seqs the store's mark reaches past those handed
// out (see takeSeq).
const seqBlock = 1 << 16

// retryPause is the pause of the committer after a failed Save that
// operations wait for, before it tries again.
const retryPause = 100 * time.Millisecond

// room reports whether a seq may be handed out now; when not, the
// operation waits for roomWait. Seqs must keep increasing across a crash,
// or a client that saw seqs of changes never stored would be told after
// a restart that its "since" was recovered, and given the same numbers
// for other changes. So a seq is handed out only once the store keeps a
// mark (its lastSeq) at or past it. The committer renews the mark in the
// background when half of the block is used, so that no operation waits
// for it while the store keeps up. Called with the lock.
func (t *Tree) room() bool {
	// A closed tree still removes the resources of the clients it ends,
	// whatever becomes of the store: its final Save keeps its last seq.
	return t.st == nil || t.seq < t.saved || t.closed
}

// roomWait returns a channel closed when the committer has tried to save
// a new mark, and wakes it. Called with the lock.
func (t *Tree) roomWait() <-chan struct{} {
	if t.roomCh == nil {
		t.roomCh = make(chan struct{})
	}
	t.kickCommitter()
	return t.roomCh
}

// takeSeq hands out the next seq to a change applied at once; room must
// hold. Called with the lock.
func (t *Tree) takeSeq() uint64 {
	t.seq++
	if t.st != nil && t.seq+seqBlock/2 > t.saved {
		t.kickCommitter()
	}
	return t.seq
}

// commitLoop is the one goroutine that saves batches: while one Save
// runs, the changes of every operation that comes meanwhile gather in the
// next batch, so one transaction carries many of them (group commit).
func (t *Tree) commitLoop() {
	defer close(t.committed)
	for {
		select {
		case <-t.kick:
		case <-t.quit:
			t.commit(true)
			return
		}
		if !t.commit(false) {
			// Operations wait for a mark: try again after a pause.
			select {
			case <-time.After(retryPause):
				t.kickCommitter()
			case <-t.quit:
			}
		}
	}
}

// commit gives the changes of the pending batch their seqs, saves their
// records with a mark past the seqs handed out, then applies them; final
// saves the last seq itself, so that seq continues without a gap after a
// clean restart. It reports false when a Save failed that operations
// wait for.
func (t *Tree) commit(final bool) bool {
	t.mu.Lock()
	b := t.pend
	t.pend, t.saving = nil, b
	if b != nil {
		c := func(n int) int { return min(n, maxBatchSize) }
		t.batchSize = batchSize{c(len(b.changes)), c(len(b.hot)), c(len(b.kids)), c(len(b.below)), c(len(b.notes))}
	}
	var recs journal
	first := t.seq
	if b != nil {
		n := 0
		for i := range b.changes {
			n += len(b.changes[i].recs)
		}
		recs = make(journal, n)
		for i := range b.changes {
			ch := &b.changes[i]
			if ch.emits {
				t.seq++
				ch.seq = t.seq
			}
			for p, r := range ch.recs {
				if r != nil && r.Created == 0 {
					r.Created = ch.seq
				}
				recs[p] = r
			}
		}
	}
	assigned := t.seq
	mark := t.seq + seqBlock
	if final {
		mark = t.seq
	}
	renew := t.seq+seqBlock/2 > t.saved || t.roomCh != nil
	t.mu.Unlock()
	if b == nil && !final && !renew {
		return true
	}
	puts, dels := recs.split()
	err := t.st.Save(context.Background(), mark, puts, dels)

	t.mu.Lock()
	if err == nil {
		t.saved = max(t.saved, mark)
	}
	if b != nil {
		if err == nil {
			for _, ch := range b.changes {
				ch.apply(ch.seq)
			}
		} else if t.seq == assigned {
			t.seq = first // none handed out since: as if the batch never came
		}
		t.saving = nil
		b.finished = true
		for _, r := range b.replies {
			r.c.pipelined.Add(-1)
			switch {
			case r.msgID == nil:
			case err == nil:
				r.c.push(Frame{Data: r.ok})
			default:
				r.c.push(Frame{Data: failedReply(r.msgID, reasonStore)})
			}
		}
		// Only done, err and finished are read from now on (a client
		// keeps its last batch until its end): let go of the rest.
		b.changes, b.hot, b.kids, b.below, b.notes, b.replies = nil, nil, nil, nil, nil, nil
	}
	waited := t.roomCh != nil
	if waited {
		close(t.roomCh)
		t.roomCh = nil
	}
	t.mu.Unlock()
	if b != nil {
		b.err = err
		close(b.done)
	}
	if final {
		t.closeErr = err
	}
	return err == nil || !waited
}

// split returns the records of j to put and the paths to delete, parents
// before children in a stable order, for stores that care.
func (j journal) split() ([]StoredResource, []string) {
	paths := make([]string, 0, len(j))
	for p := range j {
		paths = append(paths, p)
	}
	sort.Strings(paths) // the paths, not the records: less to move
	var puts []StoredResource
	var dels []string
	for _, p := range paths {
		if r := j[p]; r == nil {
			dels = append(dels, p)
		} else {
			if puts == nil {
				puts = make([]StoredResource, 0, len(paths))
			}
			puts = append(puts, *r)
		}
	}
	return puts, dels
}
