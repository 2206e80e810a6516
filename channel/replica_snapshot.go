package channel

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"sort"
	"strconv"
	"time"
)

// snapHeader is the first line of a snapshot (docs/fleet.md#6-entries-snapshot-trimming-format).
type snapHeader struct {
	V     int      `json:"v"`
	Pos   uint64   `json:"pos"`   // the last entry of the log it covers
	Seq   uint64   `json:"seq"`   // the tree's seq then
	Lease uint64   `json:"lease"` // the id of the last lease started
	Dead  []string `json:"dead,omitempty"`
	// The number of the last batch applied of each node.
	Batches map[string]uint64 `json:"batches,omitempty"`
	// The running hash of the batches applied (see chainHash).
	Hash uint64 `json:"hash,omitempty"`
}

// snapNode is one line of a snapshot: a node of the tree.
type snapNode struct {
	Path    string          `json:"path"`
	Type    string          `json:"type,omitempty"`
	Entity  json.RawMessage `json:"entity,omitempty"`
	Creator string          `json:"creator,omitempty"`
	Created uint64          `json:"created"`
	Rule    string          `json:"rule,omitempty"`
	Group   []string        `json:"group,omitempty"`
	HasGrp  bool            `json:"has_group,omitempty"`
	Persist bool            `json:"persist,omitempty"`
	Node    string          `json:"node,omitempty"` // the owner's node and connection
	Conn    string          `json:"conn,omitempty"`
	Lease   uint64          `json:"lease,omitempty"`
	Ends    int64           `json:"ends,omitempty"` // the lease's deadline, unix milliseconds
}

// Snapshot writes the whole state of a tree of a fleet, as of the last
// entry it applied, which it returns: every node in the order of the
// tree, its owner or lease, the seq. It is [Tree.Freeze] and then
// [Frozen.WriteTo]; see Freeze for when it is consistent.
func (t *Tree) Snapshot(w io.Writer) (uint64, error) {
	f := t.Freeze(nil)
	_, err := f.WriteTo(w)
	return f.Pos(), err
}

// Frozen is the state of a tree of a fleet as [Tree.Freeze] copied it,
// ready to be written as a snapshot while the tree goes on applying.
type Frozen struct {
	h     snapHeader
	items []snapItem
}

// PrepareFreeze returns room for the copy of [Tree.Freeze], sized for the
// tree as it is now, allocated and touched by the caller: a goroutine
// beside the one that applies makes it, so that Freeze spends no time of
// apply's on memory.
func (t *Tree) PrepareFreeze() *Frozen {
	t.mu.RLock()
	size := t.nodes.len()
	t.mu.RUnlock()
	items := make([]snapItem, size+size/8+16)
	clear(items) // the first writes to fresh pages cost page faults
	return &Frozen{items: items[:0]}
}

// Freeze copies the state of a tree of a fleet as of the last entry it
// applied, for a snapshot, into room (from [Tree.PrepareFreeze]; nil: new
// memory). Apply waits only for the copy: a walk of the tree taking a few
// words per node (the entity, the rule, the group and the owner are
// shared, since a change replaces them and never edits them); the
// encoding, [Frozen.WriteTo], runs without the lock. Call it between two
// calls of [Tree.Apply], from the goroutine that applies (the fleet's
// consumer does): an entry under way may have changed the tree but not
// yet its position.
func (t *Tree) Freeze(room *Frozen) *Frozen {
	if room == nil {
		room = &Frozen{}
	}
	room.h, room.items = t.snapCopy(room.items[:0])
	sort.Strings(room.h.Dead)
	return room
}

// Pos returns the position of the last entry of the log the state covers.
func (f *Frozen) Pos() uint64 { return f.h.Pos }

// WriteTo writes the snapshot
// (docs/fleet.md#6-entries-snapshot-trimming-format): a header line, then
// one line per node in the order of the tree.
func (f *Frozen) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f.h); err != nil {
		return cw.n, err
	}
	var line []byte
	for i := range f.items {
		line = f.items[i].appendLine(line[:0])
		if _, err := bw.Write(line); err != nil {
			return cw.n, err
		}
	}
	err := bw.Flush()
	return cw.n, err
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// snapItem is a node's state as a snapshot takes it under the lock. What
// it points to is never changed in place: a change of the tree replaces
// the entity, the rule, the group, the owner, so the copy stays the state
// at the snapshot's position while apply goes on.
type snapItem struct {
	path, typ, creator string
	entity             []byte
	created            uint64
	rule               *Rule
	group              *group
	node, conn         string // the owner's; "" for none
	leaseID            uint64 // 0: no lease
	leaseEnd           int64  // unix milliseconds
	persist            bool
}

// snapCopy returns the header and the nodes of a snapshot, in the order
// of the tree, appended to items, under the read lock.
func (t *Tree) snapCopy(items []snapItem) (snapHeader, []snapItem) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	h := snapHeader{V: entryVersion, Seq: t.seq, Lease: t.leaseN}
	if t.replica != nil {
		h.Pos, h.Batches, h.Hash = t.applied, maps.Clone(t.batches), t.hash
		for n := range t.dead {
			h.Dead = append(h.Dead, n)
		}
	}
	// A ghost does not name its node (connection.go): the peers' tables
	// do, once per snapshot.
	var ghostNode map[*connection]string
	if t.replica != nil {
		ghostNode = make(map[*connection]string)
		for _, p := range t.ghosts {
			for g := range p.conns.all() {
				ghostNode[g] = p.id
			}
		}
	}
	self := t.self.id
	// Depth first in creation order, without recursion: a node's next
	// sibling comes after its subtree.
	for n := t.root.first(); n != nil; {
		it := snapItem{
			path: n.path, typ: n.typ(), creator: n.creator(), entity: n.entity(), created: n.created,
			rule: n.rule(), group: n.group(), persist: n.persist(),
		}
		if n.owner != nil {
			it.node, it.conn = self, n.owner.id
			if g, ok := ghostNode[n.owner]; ok {
				it.node = g
			}
		}
		if n.entity() != nil && n.owner == nil && !n.persist() { // leased (one of the three)
			if l := t.leases[n]; l != nil {
				it.leaseID, it.leaseEnd = l.id, l.end.UnixMilli()
			}
		}
		items = append(items, it)
		if n.kids != nil {
			n = n.kids.first
			continue
		}
		for n != t.root && n.next == nil {
			n = n.parent
		}
		if n == t.root {
			break
		}
		n = n.next
	}
	return h, items
}

// line returns the snapshot line of the node it copied, as a value that
// encoding/json writes as appendLine does.
func (it *snapItem) line() snapNode {
	s := snapNode{Path: it.path, Creator: it.creator, Created: it.created, Persist: it.persist}
	if it.entity != nil {
		s.Type, s.Entity = it.typ, it.entity
	}
	if it.rule != nil {
		s.Rule = it.rule.String()
	}
	if it.group != nil {
		s.Group, s.HasGrp = it.group.members, true
	}
	s.Node, s.Conn = it.node, it.conn
	if it.leaseID != 0 {
		s.Lease, s.Ends = it.leaseID, it.leaseEnd
	}
	return s
}

// appendLine appends the snapshot line of the node it copied, newline
// included: the bytes encoding/json writes for line(), without its
// reflection (the entity is compact JSON already).
func (it *snapItem) appendLine(b []byte) []byte {
	b = append(b, `{"path":`...)
	b = AppendString(b, it.path)
	if it.entity != nil {
		if it.typ != "" {
			b = append(b, `,"type":`...)
			b = AppendString(b, it.typ)
		}
		if len(it.entity) > 0 {
			b = append(b, `,"entity":`...)
			b = append(b, it.entity...)
		}
	}
	if it.creator != "" {
		b = append(b, `,"creator":`...)
		b = AppendString(b, it.creator)
	}
	b = append(b, `,"created":`...)
	b = strconv.AppendUint(b, it.created, 10)
	if it.rule != nil {
		if r := it.rule.String(); r != "" {
			b = append(b, `,"rule":`...)
			b = AppendString(b, r)
		}
	}
	if it.group != nil {
		if len(it.group.members) > 0 {
			b = append(b, `,"group":[`...)
			for i, m := range it.group.members {
				if i > 0 {
					b = append(b, ',')
				}
				b = AppendString(b, m)
			}
			b = append(b, ']')
		}
		b = append(b, `,"has_group":true`...)
	}
	if it.persist {
		b = append(b, `,"persist":true`...)
	}
	if it.node != "" {
		b = append(b, `,"node":`...)
		b = AppendString(b, it.node)
	}
	if it.conn != "" {
		b = append(b, `,"conn":`...)
		b = AppendString(b, it.conn)
	}
	if it.leaseID != 0 {
		b = append(b, `,"lease":`...)
		b = strconv.AppendUint(b, it.leaseID, 10)
		if it.leaseEnd != 0 {
			b = append(b, `,"ends":`...)
			b = strconv.AppendInt(b, it.leaseEnd, 10)
		}
	}
	return append(b, '}', '\n')
}

// Restore builds the tree of a fleet from a snapshot written by
// [Tree.Snapshot] and returns the position of the log it covers: the
// backend applies the log from the next one. The tree must be new (no
// entry applied, no client).
func (t *Tree) Restore(r io.Reader) (uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.replicated() || t.applied != 0 || t.nodes.len() > 1 || len(t.clients) > 0 {
		return 0, errors.New("channel: restore: the tree is not a new tree of a fleet")
	}
	return t.restoreLocked(r)
}

// ErrRebuilding ends the clients of a node that rebuilds its tree from a
// snapshot ([Tree.Reset]): close code 1012 (service restart), as for a
// node the fleet took for dead; the client reconnects, to another node or
// to this one once it is ready again.
var ErrRebuilding error = &Gone{Code: 1012, Reason: "node rebuilding"}

// Reset replaces the whole state of a live tree of a fleet by a snapshot
// written by [Tree.Snapshot] and returns the position of the log it
// covers: the backend applies the log from the next one. The fleet calls
// it when the log lost entries this node had not applied
// (docs/fleet.md#6-entries-snapshot-trimming-format). Every client is
// ended with [ErrRebuilding]. A client that proposed entries stays known
// until the log applies its end, as on the other nodes, which hold it as
// a connection of this node: the resources the snapshot gives it are its
// own again, and its entries still in the log apply as they do there.
// Call it from the goroutine that applies, between two calls of
// [Tree.Apply]. On an error the tree is left empty or partly restored: call
// it again.
func (t *Tree) Reset(r io.Reader) (uint64, error) {
	t.mu.Lock()
	if !t.replicated() || t.closed {
		t.mu.Unlock()
		return 0, errors.New("channel: reset: the tree is not a live tree of a fleet")
	}
	cs := make([]*Client, 0, len(t.clients))
	keep := make(map[string]*Client)
	for id, c := range t.clients {
		cs = append(cs, c)
		c.subs = subSet{}
		t.disownAll(&c.connection)
		c.mu.Lock()
		proposed := c.proposed
		c.mu.Unlock()
		if proposed && !c.ended {
			keep[id] = c
		}
	}
	for _, l := range t.leases {
		l.timer.Stop()
	}
	t.root = &node{path: "/"}
	t.nodes = table[*node]{}
	t.nodes.put(t.root)
	t.subs = make(map[string]*subList)
	t.clients = keep
	t.leases = make(map[*node]*lease)
	t.hist = history{max: t.opt.HistoryCount, maxBytes: t.opt.HistoryBytes, age: t.opt.HistoryAge}
	t.ghosts = make(map[string]*peer)
	t.owns = nil // the kept clients own nothing now, and the ghosts are gone
	t.dead = make(map[string]bool)
	t.batches = make(map[string]uint64)
	t.seq, t.leaseN, t.applied, t.hash = 0, 0, 0, 0
	t.publishState()
	pos, err := t.restoreLocked(r)
	close(t.playWake)
	t.playWake = make(chan struct{})
	t.mu.Unlock()
	for _, c := range cs {
		c.end(ErrRebuilding)
	}
	return pos, err
}

// restoreLocked adds the state of a snapshot to an empty tree. Called
// with the lock.
func (t *Tree) restoreLocked(r io.Reader) (uint64, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	var h snapHeader
	if err := dec.Decode(&h); err != nil {
		return 0, fmt.Errorf("channel: restore: %w", err)
	}
	if h.V != entryVersion {
		return 0, fmt.Errorf("channel: restore: snapshot format %d; this reso reads %d", h.V, entryVersion)
	}
	for {
		var s snapNode
		err := dec.Decode(&s)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("channel: restore: %w", err)
		}
		if err := t.restoreNode(&s); err != nil {
			return 0, fmt.Errorf("channel: restore %q: %w", s.Path, err)
		}
	}
	t.seq, t.leaseN, t.applied, t.hash = h.Seq, h.Lease, h.Pos, h.Hash
	t.publishState()
	for _, n := range h.Dead {
		t.dead[n] = true
	}
	for n, b := range h.Batches {
		t.batches[n] = b
	}
	t.hist.lost = t.seq
	return h.Pos, nil
}

// restoreNode adds one node of a snapshot; its parent came before it.
// Called with the lock.
func (t *Tree) restoreNode(s *snapNode) error {
	if s.Path == "/" || !validPath(s.Path) || t.lookup(s.Path) != nil {
		return errors.New("invalid or repeated path")
	}
	pp, _ := parentPath(s.Path)
	if t.lookup(pp) == nil {
		return errors.New("parent missing")
	}
	n := t.ensure(s.Path, s.Created)
	n.setCreator(s.Creator)
	n.setPersist(s.Persist)
	if s.Rule != "" {
		rule, err := ParseRule(s.Rule)
		if err != nil {
			return err
		}
		n.setRule(&rule)
	}
	if s.HasGrp {
		n.setGroup(newGroup(s.Group))
	}
	if s.Entity != nil {
		e, err := compactJSON(s.Entity)
		if err != nil {
			return err
		}
		n.setTyp(s.Type)
		n.setBytes(e, publicEntity(e))
	}
	switch {
	case s.Conn != "":
		c := t.connOf(s.Node, s.Conn) // a connection of this node kept by Reset
		if c == nil {
			c = t.ghost(s.Node, s.Conn)
		}
		n.owner = c
		t.own(c, n)
	case s.Lease != 0:
		t.armLease(n, s.Lease, time.UnixMilli(s.Ends))
	}
	return nil
}

var _ io.WriterTo = (*Frozen)(nil)
