package jepsen

// Env is a system under test: reso nodes that clients reach over HTTP and
// WebSocket, and the faults it can suffer. The history recorder (run.go)
// sees only this interface; the fleet of processes (fleet.go) and the
// single node (single.go) implement it.
type Env interface {
	// Nodes returns how many reso nodes serve.
	Nodes() int
	// URL returns the base URL of node i ("http://127.0.0.1:PORT"): the
	// same for the whole run, also while the node is down or after it was
	// started again (a gate in front of it forwards to its current port).
	URL(i int) string
	// Faults returns the faults this Env can inject, of the kinds asked
	// (all of its kinds when none are named).
	Faults(kinds ...Kind) []Fault
	// Heal ends every fault still in force and waits until every node
	// answers /readyz with 200 (bounded).
	Heal() error
}

// Kind names a kind of fault.
type Kind string

// The kinds of faults (issue 35).
const (
	KillNode         Kind = "kill-node"          // kill -9 of a reso node, started again on heal
	KillNATSLeader   Kind = "kill-nats-leader"   // kill -9 of the log stream's leader nats-server, started again on heal
	KillNATSFollower Kind = "kill-nats-follower" // kill -9 of a nats-server that is not the leader
	CutNodeDrop      Kind = "cut-node-drop"      // a node's NATS connections cut, new ones refused
	CutNodeStall     Kind = "cut-node-stall"     // a node's NATS connections stay open and carry nothing
	CutNATSDrop      Kind = "cut-nats-drop"      // a nats-server's routes to the others cut, new ones refused
	CutNATSStall     Kind = "cut-nats-stall"     // a nats-server's routes stay open and carry nothing
	PauseNode        Kind = "pause-node"         // SIGSTOP of a reso node, SIGCONT on heal
	PauseNATSLeader  Kind = "pause-nats-leader"  // SIGSTOP of the leader nats-server, SIGCONT on heal
	MoveLeader       Kind = "move-leader"        // the log stream's leader asked to step down
	KillSingle       Kind = "kill-single"        // kill -9 of a single reso node on SQLite, started again on heal
)

// Fault is one fault an Env can inject. Inject starts it (on a target
// it picks then, such as the stream's leader of the moment) and Heal ends
// it; a fault that ends by itself (MoveLeader) heals with nothing to do.
// Both return once the action is done (a process killed has exited, a
// process started again listens), bounded in time.
type Fault interface {
	Kind() Kind
	Inject() error
	Heal() error
	// Target says what the last Inject hit ("node 2", "nats-1"), for the
	// campaign's report.
	Target() string
}
