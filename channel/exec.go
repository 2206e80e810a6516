package channel

import (
	"strconv"
	"time"
)

// caller is who sends a message: a connected client, the connection of
// another node of a fleet, or a Call (c and ghost nil).
type caller struct {
	c *Client
	// ghost is the connection of another node of a fleet whose entry is
	// applied (c is then nil).
	ghost    *connection
	from     string // the "from" of the notifications it causes
	identity string // "" anonymous
	// From the log of a fleet: the id a POST without one takes, and the
	// time of the proposal, from which a lease counts.
	fresh string
	at    time.Time
	// sent is set by a NOTIFY: the subscribers it reached on this node.
	sent int
	// held: the caller holds the tree's lock (a fleet applying a batch).
	held bool
	// unreached: an offer of a fleet that no node would deliver, refused
	// on the proposing node without entering the log.
	unreached bool
	// pipe: a connection's PUT, POST or DELETE, whose change may join a
	// batch without waiting for it (see pipelining), msgID its msg_id;
	// deferred is set when it did, and its reply is queued with the batch.
	pipe     bool
	msgID    []byte
	deferred bool
}

// conn returns the connection the caller writes for, a client's or a
// ghost, whose transient entities it creates; nil for a Call.
func (cl *caller) conn() *connection {
	if cl.c != nil {
		return &cl.c.connection
	}
	return cl.ghost
}

// freshID returns the i-th candidate for the id of a POST without one:
// random alone, derived from the proposer's choice in a fleet so that
// every node takes the same one.
func (cl *caller) freshID(i int) string {
	switch {
	case cl.fresh == "":
		return freshID()
	case i == 0:
		return cl.fresh
	}
	return cl.fresh + "-" + strconv.Itoa(i)
}

// maxLease bounds the "expires" of a Call.
const maxLease = 365 * 24 * time.Hour

// exec runs one message. It returns the reply to send: always one for a Call (call set), for
// a client only when the message has a msg_id or is a bad frame. A change
// to a persistent resource returns once it is stored and applied (see
// propose), so the reply follows the notifications it caused.
func (t *Tree) exec(cl *caller, data []byte, call bool) []byte {
	var msg message
	m := &msg
	reason := m.parse(data)
	if t.opt.Pipeline && cl.c != nil && !call && !cl.held && t.st != nil {
		// See pipelining: only a change that joins a batch runs before
		// the connection's earlier changes are applied.
		switch m.Method {
		case "PUT", "POST", "DELETE":
			cl.pipe, cl.msgID = reason == "", m.MsgID
		}
		if !cl.pipe {
			t.settle(cl.c)
		}
	}
	if reason != "" {
		return failedReply(m.MsgID, reason)
	}
	reply, reason := t.dispatch(cl, m, call)
	if cl.deferred {
		return nil
	}
	if cl.pipe {
		t.settle(cl.c)
	}
	if m.MsgID == nil && !call {
		return nil
	}
	if reason != "" {
		return failedReply(m.MsgID, reason)
	}
	if reply == nil {
		reply = successReply(m.MsgID)
	}
	return reply
}

// dispatch runs a parsed message by its method; it returns the success
// reply, or the reason of the failure.
func (t *Tree) dispatch(cl *caller, m *message, call bool) ([]byte, string) {
	r, ok := parseResource(m.Resource)
	if !ok {
		return nil, reasonInvalidRes
	}
	var lease time.Duration
	if call && m.Expires != nil {
		s := *m.Expires
		if !(s > 0) || s > maxLease.Seconds() {
			return nil, reasonInvalidExpires
		}
		lease = time.Duration(s * float64(time.Second))
		if !cl.at.IsZero() {
			lease = cl.at.Add(lease).Sub(t.now())
		}
		lease = max(lease, time.Millisecond)
	}
	switch m.Method {
	case "GET":
		return t.get(cl, m, r)
	case "PUT":
		return t.put(cl, m, r, lease)
	case "POST":
		return t.post(cl, m, r, lease)
	case "DELETE":
		return t.delete(cl, r)
	case "SUBSCRIBE":
		return t.subscribeMsg(cl, m, r)
	case "UNSUBSCRIBE":
		return t.unsubscribeMsg(cl, m, r)
	case "NOTIFY":
		return t.notify(cl, m, r)
	case "RULES":
		return t.rulesMsg(cl, m, r)
	}
	return nil, reasonUnknownMethod
}
