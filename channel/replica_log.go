package channel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// Log is the ordered log of a fleet (docs/fleet.md). A tree given one in
// [Options] proposes every change to it instead of making it, and makes
// the changes the backend hands to [Tree.Apply], in the log's order, so
// that every tree of the fleet goes through the same states.
type Log interface {
	// Propose queues entry for the end of the log, after every entry
	// this node proposed before, and returns at once. stored is called
	// once, from another goroutine, with nil when the log holds the
	// entry, or with an error when it could not be stored in time or ctx
	// ended first (the log then may or may not hold it); it must not
	// block. The backend may carry several entries in one message of the
	// log: a [Batch].
	Propose(ctx context.Context, entry []byte, stored func(error))
	// Barrier returns the position of the last entry the log holds now.
	Barrier(ctx context.Context) (uint64, error)
	// Report tells node how many subscribers this node delivered each of
	// node's NOTIFYs in counts to (those of one batch, whose proposers
	// wait for sent_count). It must not block.
	Report(node string, counts []Count)
	// Gather returns how many subscribers the other live nodes delivered
	// the NOTIFY with proposal id to, waiting (bounded) for their reports.
	Gather(ctx context.Context, id string) int
	// Reaches reports whether a subscriber on another live node would
	// receive a notification of path now: a read-only check on each node,
	// bounded in time (a node that does not answer in time counts as not
	// reaching). An offer is proposed only when some node reaches it.
	Reaches(ctx context.Context, path string) bool
}

// Count is how many subscribers a node delivered the NOTIFY with proposal
// id ID to.
type Count struct {
	ID string
	N  int
}

// Batch is one message of the log: the entries node proposed together,
// in their order. A node numbers its batches from 1 up; the tree applies
// a batch only when its number is above the last one it applied of that
// node, so a batch stored twice (a retry beyond the log's duplicate
// window) is applied once and an older batch never after a newer one.
type Batch struct {
	Node    string
	N       uint64
	Entries [][]byte
}

// ErrUnavailable is returned when the log of a fleet cannot be reached.
var ErrUnavailable = errors.New("channel: fleet log unavailable")

// result is what playing a client's entry gives its proposer.
type result struct {
	reply  []byte
	notify bool // a NOTIFY that passed its checks: sent is the local count
	sent   int
	msgID  []byte
}

// Bounds of a proposal.
const (
	proposeTimeout = 5 * time.Second  // for the log to store it
	playTimeout    = 10 * time.Second // for it to come back and be applied
)

// proposalID returns a fresh proposal id.
func proposalID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writes are the methods that change the tree or need a place in the
// log's order: they go through the log in a fleet.
var writes = map[string]bool{"PUT": true, "POST": true, "DELETE": true, "NOTIFY": true, "RULES": true}

// execFleet runs one message in a fleet: a write through the log, a
// read after the barrier. It returns the reply, if one is due.
func (rp *replica) execFleet(ctx context.Context, cl *caller, data []byte, call bool) []byte {
	m, reason := parseMessage(data)
	if reason != "" {
		return failedReply(m.MsgID, reason)
	}
	if writes[m.Method] {
		return rp.proposeMsg(ctx, cl, m, data, call)
	}
	return rp.readFleet(ctx, cl, m, data, call)
}

// readFleet runs a message that is no write: a read after the barrier.
func (rp *replica) readFleet(ctx context.Context, cl *caller, m *message, data []byte, call bool) []byte {
	t := rp.t
	if m.Method == "GET" || m.Method == "SUBSCRIBE" {
		if err := rp.barrier(ctx); err != nil {
			return failedReply(m.MsgID, reasonUnavailable)
		}
	}
	return t.exec(cl, data, call)
}

// pipelineDepth bounds the writes of one connection under way at once
// (of a fleet, or with Options.Pipeline): the next one waits (the door
// reads no further meanwhile).
const pipelineDepth = 64

// execConn runs a message of connection c in a fleet and queues its
// reply. A write is proposed at once and answered later, so that a
// connection has up to pipelineDepth writes under way; a read waits for
// the replies to the connection's earlier messages (its writes applied),
// then for the barrier. Replies come in the order of the messages, each
// after the notifications its message caused.
func (rp *replica) execConn(ctx context.Context, c *Client, data []byte) {
	cl := &caller{c: c, from: c.id, identity: c.identity}
	m, reason := parseMessage(data)
	// An offer is decided after the connection's earlier writes, one at
	// a time: its check (offerReaches) sees what they changed.
	offer := reason == "" && m.Method == "NOTIFY" && m.Offer
	if reason == "" && writes[m.Method] && !offer {
		c.slots <- struct{}{}
		prev, mine := c.nextTurn()
		w, reply := rp.startWrite(ctx, cl, m, data, false)
		ctx := context.WithoutCancel(ctx) // the caller's may end when Exec returns
		go func() {
			defer func() { <-c.slots }()
			if w != nil {
				reply = rp.finishWrite(ctx, cl, w)
			}
			<-prev
			if reply != nil && m.MsgID != nil {
				c.push(Frame{Data: reply})
			}
			close(mine)
		}()
		return
	}
	prev, mine := c.nextTurn()
	<-prev
	var reply []byte
	switch {
	case reason != "":
		reply = failedReply(m.MsgID, reason)
	case offer:
		reply = rp.proposeMsg(ctx, cl, m, data, false)
	default:
		reply = rp.readFleet(ctx, cl, m, data, false)
	}
	if reply != nil {
		c.push(Frame{Data: reply})
	}
	close(mine)
}

// barrier waits until the tree has applied every entry the log held when
// it was called: a read then sees every write acknowledged before it.
func (rp *replica) barrier(ctx context.Context) error {
	t := rp.t
	ctx, cancel := context.WithTimeout(ctx, playTimeout)
	defer cancel()
	pos, err := rp.log().Barrier(ctx)
	if err != nil {
		return err
	}
	return t.WaitApplied(ctx, pos)
}

// Applied returns the position of the last entry of the log the tree
// applied (0 before the first, and outside a fleet).
func (t *Tree) Applied() uint64 {
	if t.replica == nil {
		return 0
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.applied
}

// WaitApplied waits until the tree has applied the entry at pos; outside
// a fleet, it returns at once.
func (t *Tree) WaitApplied(ctx context.Context, pos uint64) error {
	if t.replica == nil {
		return nil
	}
	for {
		t.mu.RLock()
		a, w := t.applied, t.playWake
		t.mu.RUnlock()
		if a >= pos {
			return nil
		}
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// proposeMsg sends a client's write to the log and returns its reply
// once the tree applied it.
func (rp *replica) proposeMsg(ctx context.Context, cl *caller, m *message, raw []byte, call bool) []byte {
	w, reply := rp.startWrite(ctx, cl, m, raw, call)
	if w == nil {
		return reply
	}
	reply = rp.finishWrite(ctx, cl, w)
	if m.MsgID == nil && !call {
		return nil
	}
	return reply
}

// flight is a client's write under way in a fleet.
type flight struct {
	e      entry
	m      *message // the entry's message, parsed; it shares the entry's bytes
	call   bool
	cancel context.CancelFunc // of the proposal's bound
	ctx    context.Context
	stored chan error  // from the log
	res    chan result // from the play
}

// startWrite proposes a client's write to the log. It returns the write
// under way, or nil and the reply when it failed at once, or when it is
// an offer that no node would deliver.
func (rp *replica) startWrite(ctx context.Context, cl *caller, m *message, raw []byte, call bool) (*flight, []byte) {
	t := rp.t
	if m.Method == "NOTIFY" && m.Offer && !rp.offerReaches(ctx, m) {
		return nil, rp.refuseOffer(cl, raw, call)
	}
	mem := rp.mem.Load() // the id and the log of one membership
	e := entry{V: entryVersion, K: kindMsg, P: proposalID(), Node: mem.node, From: cl.from,
		Who: cl.identity, Call: call, At: t.now().UnixMilli(), Msg: raw}
	if cl.c != nil {
		e.Conn = cl.c.id
		if !cl.c.enter() {
			return nil, failedReply(m.MsgID, reasonDisconnected)
		}
	}
	if m.Method == "POST" && m.ID == nil {
		e.ID = freshID()
	}
	e.Count = m.Method == "NOTIFY" && (m.MsgID != nil || call)
	data := e.encode()
	// The entry holds a copy of the message; what m shares of raw moves
	// to it, so that this node plays the entry with m, parsed once (see
	// play), whatever the caller does with raw once Exec returns.
	e.Msg = data[len(data)-len(raw):]
	m.Data = rebase(m.Data, raw, e.Msg)
	w := &flight{e: e, m: m, call: call, stored: make(chan error, 1), res: make(chan result, 1)}
	t.mu.Lock()
	rp.waits[e.P] = w
	t.mu.Unlock()
	w.ctx, w.cancel = context.WithTimeout(context.WithoutCancel(ctx), proposeTimeout)
	mem.log.Propose(w.ctx, data, func(err error) { w.stored <- err })
	return w, nil
}

// rebase returns s, when it is a slice of old, as the same slice of cp,
// a copy of old; s itself otherwise.
func rebase(s, old, cp []byte) []byte {
	if len(s) == 0 || cap(s) > cap(old) {
		return s
	}
	i := cap(old) - cap(s)
	if i+len(s) > len(old) || &old[i] != &s[0] {
		return s
	}
	return cp[i : i+len(s) : i+len(s)]
}

// offerReaches reports whether a subscriber of this node or of another
// live one would receive the offer m now. An offer is decided fleet-wide
// before it takes a seq: one nobody would receive never enters the log,
// so it enters no history however often it is retried. (A subscriber
// that leaves between the check and the play makes the offer take its
// seq and fail after, as on one node an offer sent before it left.)
func (rp *replica) offerReaches(ctx context.Context, m *message) bool {
	t := rp.t
	r, ok := parseResource(m.Resource)
	if !ok || r.hasAttr || r.hasQuery {
		return false // refused below for what it is
	}
	if t.Reaches(r.path) {
		return true
	}
	return rp.log().Reaches(ctx, r.path)
}

// refuseOffer answers an offer that no node would deliver, as one node
// answers it: after the checks of a NOTIFY, without a seq.
func (rp *replica) refuseOffer(cl *caller, raw []byte, call bool) []byte {
	t := rp.t
	local := *cl
	local.unreached = true
	return t.exec(&local, raw, call)
}

// Reaches reports whether a subscriber of this node would receive a
// notification of path now (the check of an offer, see [Log]).
func (t *Tree) Reaches(path string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.reaches(path)
}

// finishWrite waits for the write w to be stored and applied and returns
// its reply.
func (rp *replica) finishWrite(ctx context.Context, cl *caller, w *flight) []byte {
	t := rp.t
	m := w.m
	defer func() {
		w.cancel()
		t.mu.Lock()
		delete(rp.waits, w.e.P)
		t.mu.Unlock()
		if cl.c != nil {
			cl.c.inflight.Done()
		}
	}()
	// The play's result says the log holds the entry (a node plays
	// only what the log stored), whatever the acknowledgement says, or
	// before it arrives.
	var r result
	var err error
	applied := false
	select {
	case err = <-w.stored:
	case r = <-w.res:
		applied = true
	case <-w.ctx.Done():
		err = w.ctx.Err()
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return failedReply(m.MsgID, reasonUnavailable)
	}
	if !applied {
		timer := time.NewTimer(playTimeout)
		defer timer.Stop()
		select {
		case r = <-w.res:
		case <-timer.C:
			return failedReply(m.MsgID, reasonUnavailable)
		case <-ctx.Done():
			return failedReply(m.MsgID, reasonUnavailable)
		}
	}
	if !r.notify {
		return r.reply
	}
	if !w.e.Count {
		return nil // nobody reads the count
	}
	sent := r.sent + rp.log().Gather(ctx, w.e.P)
	if sent == 0 {
		return failedReply(r.msgID, reasonNoSubscriber)
	}
	b := replyStart(r.msgID, 24)
	b = strconv.AppendInt(append(b, `,"sent_count":`...), int64(sent), 10)
	return append(b, '}')
}

// logStore proposes entry and waits until the log holds it.
func (rp *replica) logStore(ctx context.Context, entry []byte) error {
	done := make(chan error, 1)
	rp.log().Propose(ctx, entry, func(err error) { done <- err })
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrUnavailable, ctx.Err())
	}
}

// proposeLater stores a lifecycle entry in the background, retrying
// while the log is unreachable, until the tree closes.
func (rp *replica) proposeLater(e entry, before func()) {
	t := rp.t
	go func() {
		if before != nil {
			before()
		}
		data := e.encode()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), proposeTimeout)
			err := rp.logStore(ctx, data)
			cancel()
			if err == nil {
				return
			}
			select {
			case <-t.quit:
				return
			case <-time.After(time.Second):
			}
		}
	}()
}

// Dead reports whether the log took node for dead (never outside a
// fleet).
func (t *Tree) Dead(node string) bool {
	if t.replica == nil {
		return false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.dead[node]
}

// Nodes returns the ids of the other nodes that own connections in the
// tree, those whose death would change it (none outside a fleet).
func (t *Tree) Nodes() []string {
	if t.replica == nil {
		return nil
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	var ns []string
	for node := range t.ghosts { // a node whose ghosts all ended is not there
		ns = append(ns, node)
	}
	sort.Strings(ns)
	return ns
}

// ProposeDead proposes that node is dead. The first such entry applied
// ends its connections and deletes their transient resources; later ones
// change nothing.
func (t *Tree) ProposeDead(ctx context.Context, node string) error {
	e := entry{V: entryVersion, K: kindDead, P: proposalID(), Node: node}
	return t.logStore(ctx, e.encode())
}

// leaveFleet ends the local connections as the node stops and proposes
// its own death, so that the others delete its transient resources now
// rather than after the heartbeat timeout.
func (rp *replica) leaveFleet() {
	t := rp.t
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = t.ProposeDead(ctx, t.nodeID())
}
