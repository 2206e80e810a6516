package channel

import (
	"sort"
	"time"
)

// Playing the log of a fleet (docs/fleet.md): a batch of entries, in
// the log's order, on every node alike; the connections of other nodes
// (ghosts) and their end. (Group commit's apply step, commit.go, is the
// single node's: a tree of a fleet has no store.)

// Apply makes the changes of the log's message at position pos, a batch
// of entries of one node, in a tree of a fleet. The backend of a fleet
// calls it for every message of the log, in order, from one goroutine;
// every tree of the fleet reaches the same state and hands out the same
// seqs. A batch whose number is not above the last one applied of its
// node is skipped (stored twice, or an older one), as is an entry of
// another format version; an empty batch only moves the position on.
// The entries are decoded first, then played under one hold of the
// lock, with one wake of those waiting for the position.
func (t *Tree) Apply(pos uint64, b Batch) { t.replica.play(pos, b) }

// play plays the batch b at position pos (see [Tree.Apply]).
func (rp *replica) play(pos uint64, b Batch) {
	t := rp.t
	// The messages of this node's entries were parsed by their proposers
	// (see playMsg); the others' are parsed here, outside the lock.
	self := rp.mem.Load().node
	es := make([]decoded, 0, len(b.Entries))
	for _, data := range b.Entries {
		var d decoded
		if err := decodeEntry(data, &d.e); err != nil || d.e.V != entryVersion {
			continue
		}
		if d.e.K == kindMsg && d.e.Node != self {
			d.m, d.reason = parseMessage(d.e.Msg)
		}
		es = append(es, d)
	}
	var after afterPlay
	t.mu.Lock()
	if b.Node != "" && b.N > rp.batches[b.Node] {
		rp.batches[b.Node] = b.N
		rp.hash = chainHash(rp.hash, b.Entries)
		for i := range es {
			rp.playEntry(&es[i], &after)
		}
	}
	rp.applied = pos
	rp.publishState()
	close(rp.playWake)
	rp.playWake = make(chan struct{})
	t.mu.Unlock()
	if len(after.counts) > 0 {
		rp.log().Report(b.Node, after.counts)
	}
	for _, c := range after.ended {
		c.end(ErrNodeLeft)
	}
}

// decoded is an entry of a batch and its client's message, parsed (m
// nil: not yet, an entry of this node's).
type decoded struct {
	e      entry
	m      *message
	reason string // why the message is invalid
}

// afterPlay is what playing a batch leaves to do once the lock is let
// go: the counts of the batch's NOTIFYs to report to their proposer, the
// local connections the log ended.
type afterPlay struct {
	counts []Count
	ended  []*Client
}

// playEntry makes the change of one entry. Called with the lock.
func (rp *replica) playEntry(d *decoded, after *afterPlay) {
	t := rp.t
	e := &d.e
	switch e.K {
	case kindMsg:
		rp.playMsg(d, after)
	case kindEnd:
		if !rp.dead[e.Node] {
			rp.endConn(e.Node, t.connOf(e.Node, e.Conn))
		}
	case kindDead:
		after.ended = append(after.ended, rp.playDead(e.Node)...)
	case kindExpire:
		if n := t.lookup(e.Path); n != nil && t.leases[n] != nil && t.leases[n].id == e.Lease {
			t.remove(n, "", nil) // a tree without store applies at once
		}
	}
}

// playMsg runs a client's message from the log and hands the result to
// its proposer when that is this node (under its id, or under an id it
// had before it rejoined: refused, since that id is dead). Called with
// the lock.
func (rp *replica) playMsg(d *decoded, after *afterPlay) {
	t := rp.t
	if d.m == nil {
		// An entry of this node: the message its proposer parsed, which
		// the entry holds (startWrite), unless the proposer gave up.
		if w := rp.waits[d.e.P]; w != nil {
			d.m = w.m
		} else {
			d.m, d.reason = parseMessage(d.e.Msg)
		}
	}
	e, m, reason := &d.e, d.m, d.reason
	mine := e.Node == t.nodeID() || rp.dead[e.Node] && rp.waits[e.P] != nil
	cl := &caller{from: e.From, identity: e.Who, fresh: e.ID, at: time.UnixMilli(e.At), held: true}
	switch {
	case reason != "":
	case rp.dead[e.Node]:
		reason = reasonUnavailable
	case e.Redo && rp.redoTaken(m):
		reason = reasonExists
	case e.Call:
	case mine:
		if c := t.clients[e.Conn]; c != nil && !c.ended {
			cl.c = c
		} else {
			reason = reasonDisconnected
		}
	default:
		cl.ghost = t.ghost(e.Node, e.Conn)
	}
	var reply []byte
	if reason == "" {
		reply, reason = t.dispatch(cl, m, e.Call)
	}
	notified := m.Method == "NOTIFY" && (reason == "" || reason == reasonNoSubscriber)
	if !mine {
		if notified && e.Count {
			after.counts = append(after.counts, Count{ID: e.P, N: cl.sent})
		}
		return
	}
	r := result{reply: reply, notify: notified, sent: cl.sent, msgID: m.MsgID}
	switch {
	case notified:
	case reason != "":
		r.reply = failedReply(m.MsgID, reason)
	case reply == nil:
		r.reply = successReply(m.MsgID)
	}
	if w := rp.waits[e.P]; w != nil {
		w.res <- r
	}
}

// endConn ends the connection o of the node nid (a client of this node's
// or a ghost) as the log says: its transient resources go, in the order of
// their paths so that every node hands out the same seqs. Called with the
// lock.
func (rp *replica) endConn(nid string, o *connection) {
	t := rp.t
	if o == nil {
		return
	}
	if nid == t.nodeID() {
		c := t.clients[o.id]
		if c == nil || &c.connection != o || c.ended {
			return
		}
		c.ended = true
		for p := range c.subs.all() {
			t.unsubscribe(c, p)
		}
		delete(t.clients, o.id)
	} else {
		p := t.ghosts[nid]
		if p == nil || p.conns.get(o.id) != o {
			return // ended already
		}
		t.endGhost(p, o)
	}
	ns := make([]*node, 0, t.ownedLen(o))
	for n := range t.ownedAll(o) {
		ns = append(ns, n)
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i].path < ns[j].path })
	for _, n := range ns {
		if n.owner == o {
			t.remove(n, o.id, nil) // a tree without store applies at once
		}
	}
	t.disownAll(o)
}

// playDead ends every connection of node, which the fleet took for dead,
// and refuses its later entries. It returns the local connections to
// end once the lock is let go (when node is this one). With
// Options.Rejoin, this node's connections that can be kept are kept
// instead (keepConn): their transient resources go all the same, in the
// same order. Called with the lock.
func (rp *replica) playDead(node string) []*Client {
	t := rp.t
	if rp.dead[node] {
		return nil
	}
	rp.dead[node] = true
	if node != t.nodeID() {
		var gs []*connection
		for g := range t.ghostsOf(node) {
			gs = append(gs, g)
		}
		sort.Slice(gs, func(i, j int) bool { return gs[i].id < gs[j].id })
		for _, g := range gs {
			rp.endConn(node, g)
		}
		return nil
	}
	var cs []*Client
	for _, c := range t.clients {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].id < cs[j].id })
	var ended []*Client
	for _, c := range cs {
		if t.opt.Rejoin && rp.keepConn(c) {
			continue
		}
		rp.endConn(node, &c.connection)
		ended = append(ended, c)
	}
	return ended
}
