package channel

import (
	"encoding/binary"
	"hash/fnv"
)

// chainHash returns the running hash of a tree of a fleet after it
// applied a batch with entries, from the hash h before: FNV-64a over h and
// each entry's length and bytes, in order. Every node that applied the
// same batches in the same order has the same hash, which the fleet's
// heartbeats compare (docs/fleet.md#5-lifecycle-across-nodes).
func chainHash(h uint64, entries [][]byte) uint64 {
	d := fnv.New64a()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], h)
	d.Write(b[:])
	for _, e := range entries {
		binary.BigEndian.PutUint64(b[:], uint64(len(e)))
		d.Write(b[:])
		d.Write(e)
	}
	return d.Sum64()
}

// State returns, at once, the position of the last entry of the log the
// tree applied, the tree's seq then and the running hash of the batches
// it applied (kept in its snapshots too). It takes no lock: a heartbeat
// reads it, and must not wait behind an apply that holds the lock while
// it queues a notification to thousands of subscribers (issue 36: the
// heartbeats of loaded nodes timed out there, and their nodes were taken
// for dead). Outside a fleet, applied and hash are 0.
func (t *Tree) State() (applied, seq, hash uint64) {
	if t.replica == nil {
		t.mu.RLock()
		defer t.mu.RUnlock()
		return 0, t.seq, 0
	}
	if s := t.state.Load(); s != nil {
		return s.applied, s.seq, s.hash
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.applied, t.seq, t.hash
}

// appliedState is what State returns, as one value.
type appliedState struct{ applied, seq, hash uint64 }

// publishState makes the tree's applied position, seq and hash State's.
// Called with the lock, where they change together: at the end of an
// apply, a restore or a reset.
func (rp *replica) publishState() {
	t := rp.t
	rp.state.Store(&appliedState{rp.applied, t.seq, rp.hash})
}
