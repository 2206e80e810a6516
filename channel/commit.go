package channel

import (
	"context"
	"sort"
)

// batch is one group commit: the changes to persistent resources made
// since the previous one, saved in one Store.Save. done is closed once it
// is saved (or failed, err then set).
type batch struct {
	changes map[string]*Record // path -> record; nil record: delete
	done    chan struct{}
	err     error
}

// op is what an operation carries while it runs under the tree's lock:
// the batch its persistent changes joined, if any.
type op struct {
	b    *batch
	sent int // the subscribers a NOTIFY reached
}

// pending returns the batch that changes join now. Called with the lock.
func (t *Tree) pending() *batch {
	if t.pend == nil {
		t.pend = &batch{changes: make(map[string]*Record), done: make(chan struct{})}
	}
	return t.pend
}

// savePut schedules r to be stored with the next group commit.
func (t *Tree) savePut(r Record, o *op) {
	if t.st == nil {
		return
	}
	b := t.pending()
	b.changes[r.Path] = &r
	o.b = b
}

// saveDelete schedules the removal of the record at path.
func (t *Tree) saveDelete(path string, o *op) {
	if t.st == nil {
		return
	}
	b := t.pending()
	b.changes[path] = nil
	o.b = b
}

// kickCommitter wakes the committer after a batch got changes.
func (t *Tree) kickCommitter() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
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
		t.commit(false)
	}
}

// commit saves the pending batch and the seq reservation (see nextSeq);
// final saves the last seq itself, so that seq continues without a gap
// after a clean restart.
func (t *Tree) commit(final bool) {
	t.mu.Lock()
	b, seq := t.pend, t.reserved
	if final {
		seq = t.seq
	}
	t.pend = nil
	renew := seq > t.saved
	t.mu.Unlock()
	if b == nil && !final && !renew {
		return
	}
	var puts []Record
	var dels []string
	if b != nil {
		for p, r := range b.changes {
			if r == nil {
				dels = append(dels, p)
			} else {
				puts = append(puts, *r)
			}
		}
	}
	// Parents before children, in a stable order, for stores that care.
	sort.Slice(puts, func(i, j int) bool { return puts[i].Path < puts[j].Path })
	sort.Strings(dels)
	err := t.st.Save(context.Background(), seq, puts, dels)
	if err == nil && !final {
		t.mu.Lock()
		t.saved = max(t.saved, seq)
		t.mu.Unlock()
	}
	if b != nil {
		b.err = err
		close(b.done)
	}
	if final {
		t.closeErr = err
	}
}
