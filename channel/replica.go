package channel

import "sync/atomic"

// The fleet's part of a tree (docs/fleet.md) is in the replica*.go
// files. A single node runs a message at once: exec (exec.go) parses it,
// dispatch hands it to the handler of its method (read.go, write.go,
// subscribe.go, permission_rulesmsg.go), and a change that the store
// keeps goes through group commit (commit.go). A tree given a [Log] is a
// replica of the fleet's tree, and the log plugs in before dispatch:
// [Client.Exec] and [Tree.Call] propose a write to the log
// (replica_log.go) as an entry (replica_entry.go), and every node plays
// the log in its order (replica_play.go), each entry's message through
// the same dispatch and handlers, under one hold of the lock per batch,
// with no store. Beside them: the running hash and State
// (replica_digest.go), the snapshots (replica_snapshot.go) and a node's
// rejoin under a new id (replica_rejoin.go).

// replica is the state a tree holds as a node of a fleet; a tree of a
// single node has none ([Tree].replica nil). Its fields are guarded by
// the tree's lock, except mem and state, read without it.
type replica struct {
	t *Tree

	// mem is the node's id and log (replaced by Rejoin, under the lock).
	mem atomic.Pointer[membership]
	// state is (applied, seq, hash) as the last play or restore left
	// them, for State to read without the lock (replica_digest.go).
	state atomic.Pointer[appliedState]

	applied  uint64        // the position of the last batch played
	playWake chan struct{} // closed, and replaced, at each play
	hash     uint64        // the running hash of the batches played (chainHash)
	// waits are the writes this node proposed that wait for their entry
	// to be played, by proposal id.
	waits map[string]*flight
	// ghosts are the other nodes whose connections sent entries, by id,
	// each with those connections (connection.go).
	ghosts  map[string]*peer
	dead    map[string]bool   // the nodes the log took for dead
	batches map[string]uint64 // the number of the last batch played of each node (see [Batch])
}

// membership is the tree's place in its fleet: its node id and the log it
// proposes to.
type membership struct {
	node string
	log  Log
}

// newReplica returns the fleet's state of t, node node of the fleet of
// log.
func newReplica(t *Tree, node string, log Log) *replica {
	r := &replica{
		t:        t,
		playWake: make(chan struct{}),
		waits:    make(map[string]*flight),
		ghosts:   make(map[string]*peer),
		dead:     make(map[string]bool),
		batches:  make(map[string]uint64),
	}
	r.mem.Store(&membership{node: node, log: log})
	return r
}

// replicated reports whether the tree belongs to a fleet.
func (t *Tree) replicated() bool { return t.replica != nil }

// nodeID returns the tree's node id in its fleet ("" outside one).
func (t *Tree) nodeID() string {
	if t.replica == nil {
		return ""
	}
	return t.mem.Load().node
}

// log returns the log the tree proposes to.
func (rp *replica) log() Log { return rp.mem.Load().log }

// Node returns the tree's node id in its fleet: [Options.Node], or the
// last id given by [Tree.Rejoin]; "" outside a fleet.
func (t *Tree) Node() string { return t.nodeID() }
