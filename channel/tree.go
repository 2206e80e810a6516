package channel

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Options bound a [Tree]'s queues, subscriptions and history. A zero
// field takes its default.
type Options struct {
	QueueFrames   int              // most frames queued for one client (default 4096)
	QueueBytes    int              // most bytes queued for one client (default 4 MiB)
	Subscriptions int              // most subscriptions of one client (default 1024)
	HistoryCount  int              // notifications kept for replay (default 50000)
	HistoryBytes  int              // and the bytes they hold at most (default 64 MiB)
	HistoryAge    time.Duration    // and their greatest age (default 10m)
	Rules         *Rules           // rules of the top-level paths; nil: open to all
	Now           func() time.Time // clock for tests; default time.Now
	// Log makes the tree a node of a fleet (docs/fleet.md): its changes
	// go through the log, and the backend applies the log with
	// [Tree.Apply]. Node is this node's id. A tree with a log has no
	// store: the log is its store.
	Log  Log
	Node string
	// Rejoin keeps this node's connections when the log takes the node
	// for dead while it lives (docs/fleet.md#5-lifecycle-across-nodes):
	// their transient resources go as on every node, their subscriptions
	// stay, and the backend then gives the tree its next id with
	// [Tree.Rejoin], which makes those resources again. Off, the death
	// ends every connection of the node (close code 1012).
	Rejoin bool
	// Pipeline lets a connection's changes that the store keeps run
	// without waiting for the store: [Client.Exec] returns once such a
	// change joined a batch, and its reply is queued once the batch is
	// stored and applied, so that a connection has up to 64 of them under
	// way and a batch carries many of each connection. The connection's
	// replies keep the order of its messages, and a message other than
	// such a change waits for its earlier ones, as when they run one after
	// the other. Off, Exec returns once the reply is queued. A tree with a
	// Log pipelines its writes anyway.
	Pipeline bool
	// Epoch is the epoch of the tree's history
	// (docs/channel.md#replay-after-a-reconnect) when neither its store
	// nor its log has one ([Epocher]); "" draws a random one at New, so
	// that no since of an earlier tree is taken for one of this tree.
	Epoch string
}

// Defaults of [Options].
const (
	DefaultQueueFrames   = 4096
	DefaultQueueBytes    = 4 << 20
	DefaultSubscriptions = 1024
	DefaultHistoryCount  = 50000
	DefaultHistoryBytes  = 64 << 20
	DefaultHistoryAge    = 10 * time.Minute
)

// Tree is the resource tree of docs/channel.md: resources, their
// subscribers, transient owners, leases, seq and the history for replay.
// Its methods are safe for concurrent use. Create it with [New].
//
// One lock guards the tree; it is held only to change or read nodes, to
// hand out a seq and to append the notifications (serialized once) to the
// subscribers' queues, which never blocks. Parsing, entity work and the
// store run outside it.
type Tree struct {
	opt Options
	st  Store
	now func() time.Time
	// epoch is the identity of the history (see Epocher), fixed at New.
	epoch string

	mu      sync.RWMutex
	closed  bool
	seq     uint64 // the last seq handed out
	root    *node
	nodes   table[*node] // by path
	subs    map[string]*subList
	clients map[string]*Client
	self    *peer // this node (connection.go); its id is mem's node, read under the lock
	// owns are the entities of the connections that own more than one
	// (owned.go).
	owns map[*connection]*ownedSet
	// lastNames are the names of the last write (namesOf).
	lastNames names
	leases    map[*node]*lease // the entities leased by Call
	hist      history
	counts    counters
	leaseN    uint64 // the id of the last lease started

	// groupCommit is the state of the writes to the store (commit.go);
	// a tree without store leaves it idle.
	groupCommit
	// replica is the tree's part in a fleet (replica.go), nil on a
	// single node.
	*replica

	quit      chan struct{}
	closeOnce sync.Once
}

// New returns a tree holding the persistent resources of store. A nil
// store keeps nothing: every resource is lost with the tree.
func New(ctx context.Context, store Store, opt Options) (*Tree, error) {
	if opt.QueueFrames <= 0 {
		opt.QueueFrames = DefaultQueueFrames
	}
	if opt.QueueBytes <= 0 {
		opt.QueueBytes = DefaultQueueBytes
	}
	if opt.Subscriptions <= 0 {
		opt.Subscriptions = DefaultSubscriptions
	}
	if opt.HistoryCount <= 0 {
		opt.HistoryCount = DefaultHistoryCount
	}
	if opt.HistoryBytes <= 0 {
		opt.HistoryBytes = DefaultHistoryBytes
	}
	if opt.HistoryAge <= 0 {
		opt.HistoryAge = DefaultHistoryAge
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Log != nil && (store != nil || opt.Node == "") {
		return nil, errors.New("channel: a tree with a log needs a node id and no store")
	}
	epoch, err := epochOf(store, opt.Log, opt.Epoch)
	if err != nil {
		return nil, err
	}
	root := &node{path: "/"}
	t := &Tree{
		opt:     opt,
		st:      store,
		epoch:   epoch,
		now:     opt.Now,
		root:    root,
		subs:    make(map[string]*subList),
		clients: make(map[string]*Client),
		self:    &peer{id: opt.Node},
		leases:  make(map[*node]*lease),
		hist:    history{max: opt.HistoryCount, maxBytes: opt.HistoryBytes, age: opt.HistoryAge},
		quit:    make(chan struct{}),
		groupCommit: groupCommit{
			kick:      make(chan struct{}, 1),
			committed: make(chan struct{}),
		},
	}
	t.nodes.put(root)
	if opt.Log != nil {
		t.replica = newReplica(t, opt.Node, opt.Log)
	}
	if store != nil {
		if err := t.load(ctx); err != nil {
			return nil, err
		}
		go t.commitLoop()
	} else {
		close(t.committed)
	}
	return t, nil
}

// load builds the tree from the store's records.
func (t *Tree) load(ctx context.Context) error {
	recs, last, err := t.st.Load(ctx)
	if err != nil {
		return fmt.Errorf("channel: load: %w", err)
	}
	sort.SliceStable(recs, func(i, j int) bool {
		if recs[i].Created != recs[j].Created {
			return recs[i].Created < recs[j].Created
		}
		return strings.Count(recs[i].Path, "/") < strings.Count(recs[j].Path, "/")
	})
	t.seq = last
	for _, r := range recs {
		if r.Path == "/" || !validPath(r.Path) {
			return fmt.Errorf("channel: load: invalid path %q", r.Path)
		}
		n := t.ensure(r.Path, r.Created)
		n.created = r.Created
		n.setCreator(r.Creator)
		if r.Rule != "" {
			rule, err := ParseRule(r.Rule)
			if err != nil {
				return fmt.Errorf("channel: load: rule of %q: %w", r.Path, err)
			}
			n.setRule(&rule)
		}
		if r.Group != nil {
			n.setGroup(newGroup(r.Group))
		}
		if !n.stored() {
			n.setStored(true)
			n.parent.addStoredKid(1)
		}
		if r.Entity != nil {
			e, err := compactJSON(r.Entity)
			if err != nil {
				return fmt.Errorf("channel: load: entity of %q: %w", r.Path, err)
			}
			typ := r.Type
			if typ == "" {
				typ = defaultType
			}
			n.setTyp(typ)
			n.setPersist(true)
			n.setBytes(e, publicEntity(e))
		}
		t.seq = max(t.seq, r.Created)
	}
	// Ancestors the store did not list are stored from now on, and nodes
	// left with neither entity nor children go.
	j := journal{}
	for n := range t.nodes.all() {
		if n.stored() && n.parent != nil && n.parent != t.root && !n.parent.stored() {
			t.store(n.parent, j)
		}
	}
	ns := make([]*node, 0, t.nodes.len())
	for n := range t.nodes.all() {
		ns = append(ns, n)
	}
	for _, n := range ns {
		if t.lookup(n.path) == n {
			t.prune(n, j)
		}
	}
	t.hist.lost = t.seq
	// The first mark of seqs (see room), with the repairs.
	mark := t.seq + seqBlock
	puts, dels := j.split()
	if err := t.st.Save(ctx, mark, puts, dels); err != nil {
		return fmt.Errorf("channel: load: %w", err)
	}
	t.saved = mark
	return nil
}

// ErrClosed is returned by [Tree.Connect] after [Tree.Close].
var ErrClosed = errors.New("channel: tree closed")

// Close stops the leases' timers, disconnects every client, waits for
// the pending store writes and saves the last seq. It returns the store's
// error, if any. Close is idempotent.
func (t *Tree) Close() error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		for _, l := range t.leases {
			l.timer.Stop()
		}
		clear(t.leases)
		cs := make([]*Client, 0, len(t.clients))
		for _, c := range t.clients {
			cs = append(cs, c)
		}
		t.mu.Unlock()
		for _, c := range cs {
			c.end(&Gone{Code: 1001, Reason: "going away"})
		}
		if t.replicated() {
			t.leaveFleet()
		}
		close(t.quit)
	})
	<-t.committed
	if t.closeErr != nil {
		return fmt.Errorf("channel: close: %w", t.closeErr)
	}
	return nil
}

// Connect attaches a client with the unique id (it appears as "from" in
// its notifications) and identity ("" anonymous).
func (t *Tree) Connect(id, identity string) (*Client, error) {
	c := &Client{t: t, connection: connection{id: id}, identity: identity}
	if t.replicated() {
		c.slots = make(chan struct{}, pipelineDepth)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	if _, taken := t.clients[id]; taken {
		return nil, fmt.Errorf("channel: client id %q taken", id)
	}
	t.clients[id] = c
	return c, nil
}

// Disconnect ends the client with id as [Client.Disconnect] does; an
// unknown id is ignored.
func (t *Tree) Disconnect(id string) {
	t.mu.RLock()
	c := t.clients[id]
	t.mu.RUnlock()
	if c != nil {
		c.Disconnect()
	}
}

// EndIdentity ends every client of identity, as [Client.Disconnect] does
// but with [ErrSessionEnded]: the user was removed or its password changed
// (docs/channel.md#lifecycle). The anonymous identity "" ends nobody.
func (t *Tree) EndIdentity(identity string) {
	if identity == "" {
		return
	}
	t.mu.RLock()
	var cs []*Client
	for _, c := range t.clients {
		if c.identity == identity {
			cs = append(cs, c)
		}
	}
	t.mu.RUnlock()
	for _, c := range cs {
		c.end(ErrSessionEnded)
	}
}

// EndSession ends the client with id as [Tree.EndIdentity] ends a user's
// clients, with [ErrSessionEnded]: a client whose caller's sessions ended
// between the check of its credentials and its connection, which
// EndIdentity did not find yet. An unknown id is ignored.
func (t *Tree) EndSession(id string) {
	t.mu.RLock()
	c := t.clients[id]
	t.mu.RUnlock()
	if c != nil {
		c.end(ErrSessionEnded)
	}
}

// Call executes one message for a caller without a connection (the HTTP
// door) and returns its reply, always one, with or without msg_id. What
// it creates is persistent, unless the message has "expires" (seconds):
// then it is a lease kept in memory only, deleted with notifications when
// it runs out, renewed by a later PUT. from ("" none) is the "from" of
// the notifications it causes; identity ("" anonymous) its caller.
func (t *Tree) Call(ctx context.Context, from, identity string, msg []byte) []byte {
	if t.replicated() {
		return t.execFleet(ctx, &caller{from: from, identity: identity}, msg, true)
	}
	return t.exec(&caller{from: from, identity: identity}, msg, true)
}
