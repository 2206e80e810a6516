package channel

// Frame is one message the tree sends a client: a reply or a
// notification, one JSON object. The Data of a notification is serialized
// once and shared by every client that receives it: never modify it.
type Frame struct {
	Seq  uint64 // the seq of the change a notification reports; 0 for a reply
	Data []byte
}

// Gone is why the tree disconnected a client, as [Client.Next] reports it
// once the frames queued before have been returned: a close code (as
// WebSocket numbers them) and a short reason.
type Gone struct {
	Code   int
	Reason string
}

// Error returns "channel: disconnected: REASON".
func (g *Gone) Error() string { return "channel: disconnected: " + g.Reason }

// ErrSlowConsumer disconnects a client whose queue of frames is full: it
// does not read fast enough, and the tree never waits for it.
var ErrSlowConsumer error = &Gone{Code: 1008, Reason: "slow consumer"}

// ErrSessionEnded disconnects the clients of a user whose sessions ended
// (see [Tree.EndIdentity]).
var ErrSessionEnded error = &Gone{Code: 1008, Reason: "session ended"}

// ErrNodeLeft disconnects the clients of a node of a fleet that the log
// took for dead and that could not keep them for its rejoin
// (docs/fleet.md#5-lifecycle-across-nodes): clients reconnect, to this
// node or another.
var ErrNodeLeft error = &Gone{Code: 1012, Reason: "node left the fleet"}
