package channel

import "time"

// startLease makes n's entity run out after d unless a later PUT renews
// it. Called with the lock.
func (t *Tree) startLease(n *node, d time.Duration) {
	n.leaseID++
	id := n.leaseID
	n.lease = time.AfterFunc(d, func() { t.expire(n, id) })
	t.leases[n] = struct{}{}
}

// expire deletes n's leased entity with notifications, unless the lease
// id was renewed, released or the tree closed meanwhile.
func (t *Tree) expire(n *node, id uint64) {
	for {
		t.mu.Lock()
		if t.closed || n.lease == nil || n.leaseID != id || t.nodes[n.path] != n {
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
