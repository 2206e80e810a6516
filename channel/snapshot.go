package channel

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
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
// tree, its owner or lease, the seq. Apply waits meanwhile.
func (t *Tree) Snapshot(w io.Writer) (uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	h := snapHeader{V: entryVersion, Pos: t.applied, Seq: t.seq, Lease: t.leaseN, Batches: t.batches}
	for n := range t.dead {
		h.Dead = append(h.Dead, n)
	}
	sort.Strings(h.Dead)
	if err := enc.Encode(h); err != nil {
		return 0, err
	}
	var walk func(n *node) error
	walk = func(n *node) error {
		for c := n.first; c != nil; c = c.next {
			if err := enc.Encode(t.snapOf(c)); err != nil {
				return err
			}
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(t.root); err != nil {
		return 0, err
	}
	return t.applied, bw.Flush()
}

// snapOf returns the snapshot line of n. Called with the lock.
func (t *Tree) snapOf(n *node) snapNode {
	s := snapNode{Path: n.path, Creator: n.creator, Created: n.created, Persist: n.persist}
	if n.entity != nil {
		s.Type, s.Entity = n.typ, n.entity
	}
	if n.rule != nil {
		s.Rule = n.rule.String()
	}
	if n.group != nil {
		s.Group, s.HasGrp = n.group.members, true
	}
	if n.owner != nil {
		s.Node, s.Conn = n.owner.node, n.owner.id
	}
	if n.lease != nil {
		s.Lease, s.Ends = n.leaseID, n.leaseEnd.UnixMilli()
	}
	return s
}

// Restore builds the tree of a fleet from a snapshot written by
// [Tree.Snapshot] and returns the position of the log it covers: the
// backend applies the log from the next one. The tree must be new (no
// entry applied, no client).
func (t *Tree) Restore(r io.Reader) (uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.replicated() || t.applied != 0 || len(t.nodes) > 1 || len(t.clients) > 0 {
		return 0, errors.New("channel: restore: the tree is not a new tree of a fleet")
	}
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
	t.seq, t.leaseN, t.applied = h.Seq, h.Lease, h.Pos
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
	if s.Path == "/" || !validPath(s.Path) || t.nodes[s.Path] != nil {
		return errors.New("invalid or repeated path")
	}
	pp, _ := parentPath(s.Path)
	if t.nodes[pp] == nil {
		return errors.New("parent missing")
	}
	n := t.ensure(s.Path, s.Created)
	n.creator, n.persist = s.Creator, s.Persist
	if s.Rule != "" {
		rule, err := ParseRule(s.Rule)
		if err != nil {
			return err
		}
		n.rule = &rule
	}
	if s.HasGrp {
		n.group = newGroup(s.Group)
	}
	if s.Entity != nil {
		e, err := compactJSON(s.Entity)
		if err != nil {
			return err
		}
		n.typ, n.entity, n.pub = s.Type, e, publicEntity(e)
	}
	switch {
	case s.Conn != "":
		c := t.ghost(s.Node, s.Conn)
		n.owner = c
		if c.owned == nil {
			c.owned = make(map[*node]struct{})
		}
		c.owned[n] = struct{}{}
	case s.Lease != 0:
		t.armLease(n, s.Lease, time.UnixMilli(s.Ends))
	}
	return nil
}
