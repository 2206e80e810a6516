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
// it applied (kept in its snapshots too).
func (t *Tree) State() (applied, seq, hash uint64) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.applied, t.seq, t.hash
}
