package channel

import "time"

// startLease makes n's entity run out after d unless a later PUT renews
// it. Called with the lock.
func (t *Tree) startLease(n *node, d time.Duration) {
	t.leaseN++
	n.leaseID = t.leaseN
	id, path := n.leaseID, n.path
	n.lease = time.AfterFunc(d, func() {
		if t.replicated() {
			// Every node proposes it; the first one applied deletes.
			t.proposeLater(entry{V: entryVersion, K: kindExpire, P: proposalID(), Path: path, Lease: id}, nil)
			return
		}
		t.expire(n, id)
	})
	t.leases[n] = struct{}{}
}

// expire deletes n's leased entity with notifications, unless the lease
// id was renewed, released or the tree closed meanwhile.
func (t *Tree) expire(n *node, id uint64) {
	var o op
	t.mu.Lock()
	if t.closed || n.lease == nil || n.leaseID != id || t.nodes[n.path] != n {
		t.mu.Unlock()
		return
	}
	t.removeEntity(n, "", &o)
	t.mu.Unlock()
	if o.b != nil {
		t.kickCommitter()
	}
}
