package channel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
)

// A node of a fleet that the log took for dead while it lived, and that
// rejoins under a new id without ending its connections
// (docs/fleet.md#5-lifecycle-across-nodes, Options.Rejoin): its death
// deletes its connections' transient resources as on every node, keeps
// the connections and their subscriptions, and records what was deleted;
// Rejoin gives the tree its next id and makes those resources again, each
// as a PUT of its connection that only creates.

// lost is a transient resource of a kept connection that its node's death
// deleted: what a PUT needs to make it again.
type lost struct {
	path, typ string
	entity    []byte
}

// keepConn keeps c, a connection of this node, when the log takes the
// node for dead: its transient resources go as on every other node (the
// same removals in the same order, so the same seqs), recorded in c.lost;
// its subscriptions stay. It reports false, changing nothing, when c
// cannot be kept: it is ending already, or one of its resources has a
// rule or a group of its own, which a PUT cannot make again. Called with
// the lock.
func (rp *replica) keepConn(c *Client) bool {
	t := rp.t
	if c.ended {
		return false
	}
	c.mu.Lock()
	leaving := c.leaving
	c.mu.Unlock()
	if leaving {
		return false
	}
	ns := make([]*node, 0, t.ownedLen(&c.connection))
	for n := range t.ownedAll(&c.connection) {
		if n.owner != &c.connection {
			continue
		}
		if n.rule() != nil || n.group() != nil {
			return false
		}
		ns = append(ns, n)
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i].path < ns[j].path })
	for _, n := range ns {
		c.lost = append(c.lost, lost{path: n.path, typ: n.typ(), entity: n.entity()})
		t.remove(n, c.id, nil) // a tree without store applies at once
	}
	t.disownAll(&c.connection)
	return true
}

// Rejoin gives the tree of a node that the log took for dead ([Tree.Dead]
// of [Tree.Node]) its next id, node, and the log to propose to under it
// (docs/fleet.md#5-lifecycle-across-nodes). The backend calls it once it
// stopped applying the log as the dead node and before it applies the log
// further as node. The connections the death kept ([Options.Rejoin]) stay
// attached with their subscriptions; each transient resource the death
// deleted is proposed again, as a PUT of its connection that only creates
// (it fails with "exists" when the path has an entity again), before
// anything else the node proposes under node. A connection one of whose
// resources cannot be made again (the path taken, the PUT forbidden now,
// the log unreachable) ends with close code 1012 "node left the fleet",
// as the death ends a connection without Options.Rejoin.
func (t *Tree) Rejoin(node string, log Log) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.replica == nil || t.closed {
		return errors.New("channel: rejoin: the tree is not a live tree of a fleet")
	}
	old := t.mem.Load()
	switch {
	case !t.dead[old.node]:
		return fmt.Errorf("channel: rejoin: node %s was not taken for dead", old.node)
	case node == "" || log == nil || t.dead[node]:
		return fmt.Errorf("channel: rejoin: id %q unusable", node)
	}
	t.mem.Store(&membership{node: node, log: log})
	t.self.id = node
	cs := make([]*Client, 0, len(t.clients))
	for _, c := range t.clients {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].id < cs[j].id })
	for _, c := range cs {
		if len(c.lost) > 0 {
			ls := c.lost
			c.lost = nil
			t.redo(c, ls)
		}
	}
	return nil
}

// redo proposes ls, the resources of c that its node's death deleted, as
// PUTs of c that only create, and ends c when one of them fails. Called
// with the lock: the proposals come before any later one of the node.
func (rp *replica) redo(c *Client, ls []lost) {
	t := rp.t
	m := rp.mem.Load()
	cl := &caller{c: c, from: c.id, identity: c.identity}
	var ws []*flight
	for _, l := range ls {
		if !c.enter() {
			break // leaving: its end removes nothing
		}
		raw := redoMessage(l)
		msg, _ := parseMessage(raw)
		e := entry{V: entryVersion, K: kindMsg, P: proposalID(), Node: m.node, Conn: c.id, From: c.id,
			Who: c.identity, At: t.now().UnixMilli(), Redo: true, Msg: raw}
		w := &flight{e: e, m: msg, stored: make(chan error, 1), res: make(chan result, 1)}
		rp.waits[e.P] = w
		w.ctx, w.cancel = context.WithTimeout(context.Background(), proposeTimeout)
		m.log.Propose(w.ctx, e.encode(), func(err error) { w.stored <- err })
		ws = append(ws, w)
	}
	if len(ws) == 0 {
		return
	}
	go func() {
		ok := true
		for _, w := range ws {
			// finishWrite counts the proposal done and forgets its wait.
			if !bytes.Equal(rp.finishWrite(context.Background(), cl, w), successReply(nil)) {
				ok = false
			}
		}
		if !ok {
			c.end(ErrNodeLeft)
		}
	}()
}

// redoMessage returns the PUT that makes l again.
func redoMessage(l lost) []byte {
	b := make([]byte, 0, 64+len(l.path)+len(l.typ)+len(l.entity))
	b = append(b, `{"method":"PUT","resource":`...)
	b = AppendString(b, l.path)
	if l.typ != "" {
		b = AppendString(append(b, `,"type":`...), l.typ)
	}
	if l.entity != nil {
		b = append(append(b, `,"entity":`...), l.entity...)
	}
	return append(b, '}')
}

// redoTaken reports whether the resource of m, a PUT that only creates,
// has an entity already. Called with the lock.
func (rp *replica) redoTaken(m *message) bool {
	t := rp.t
	r, ok := parseResource(m.Resource)
	if !ok {
		return false // refused below for what it is
	}
	n := t.lookup(r.path)
	return n != nil && n.entity() != nil
}
