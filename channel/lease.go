package channel

import "time"

// startLease makes n's entity run out after d unless a later PUT renews
// it. Called with the lock.
func (t *Tree) startLease(n *node, d time.Duration) {
	t.leaseN++
	t.armLease(n, t.leaseN, t.now().Add(d))
}

// armLease runs the timer of n's lease id, which ends at end. Called with
// the lock.
func (t *Tree) armLease(n *node, id uint64, end time.Time) {
	path := n.path
	l := &lease{id: id, end: end}
	l.timer = time.AfterFunc(max(end.Sub(t.now()), 0), func() {
		if t.replicated() {
			// Every node proposes it; the first one applied deletes.
			t.proposeLater(entry{V: entryVersion, K: kindExpire, P: proposalID(), Path: path, Lease: id}, nil)
			return
		}
		t.expire(n, id)
	})
	t.leases[n] = l
}

// expire deletes n's leased entity with notifications, unless the lease
// id was renewed, released or the tree closed meanwhile.
func (t *Tree) expire(n *node, id uint64) {
	for {
		t.mu.Lock()
		if t.closed || t.leases[n] == nil || t.leases[n].id != id || t.lookup(n.path) != n {
			t.mu.Unlock()
			return
		}
		w := t.conflict(n.path, touchRemove)
		if w == nil {
			out := t.remove(n, "", nil)
			w = out.wait
			if out.b != nil {
				t.kickCommitter()
			}
		}
		t.mu.Unlock()
		if w == nil {
			return
		}
		<-w
	}
}
