// Package fleet is the JetStream backend of a fleet of reso nodes
// (docs/fleet.md): one stream is the ordered log of the channel's
// changes, which every node applies to its own copy of the tree; a
// key-value bucket holds the fleet's format and the nodes' heartbeats.
// It implements [channel.Log]; app wires it as it wires the SQLite
// store of a single node.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/channel"
)

// Format is the version of the fleet's data this package reads and
// writes.
const Format = 2

// Defaults of [Config].
const (
	DefaultName      = "reso"
	DefaultReplicas  = 3
	DefaultHeartbeat = 10 * time.Second
	DefaultSnapshot  = 10000
	DefaultKeep      = 50000
	// DefaultSnapshotInterval is the least time between two snapshots.
	DefaultSnapshotInterval = time.Minute
	// DefaultMaxLag is how long a node may know of a position of the log
	// without applying it before it is behind (lag.go): twice the second
	// a node's readiness allowed before, so that a garbage collection or
	// a snapshot's freeze on a loaded machine does not count, and a fifth
	// of nats-server's default write deadline.
	DefaultMaxLag = 2 * time.Second
)

// Bounds of one request to JetStream and of waiting for counts.
const (
	attemptTimeout = 2 * time.Second
	barrierTimeout = 5 * time.Second
	gatherTimeout  = time.Second
)

// Config configures a [Fleet]. A zero field takes its default.
type Config struct {
	Name      string        // the fleet's name: several fleets may share one NATS
	Replicas  int           // replicas of the stream and buckets (1 for a single NATS server)
	Heartbeat time.Duration // silence after which a node is taken for dead
	// SnapshotEvery is the least number of entries of the log, and
	// SnapshotInterval the least time (-1: none), between two snapshots of
	// the tree; Keep how many entries the log keeps below the snapshot
	// when it is trimmed (-1: none).
	SnapshotEvery    int
	SnapshotInterval time.Duration
	Keep             int
	// RulesHash is the SHA-256 (hex) of the channel rules this node
	// applies (channel.Rules.Canonical): the first node records it, and a
	// node with another one is refused while the fleet runs. "": no check.
	RulesHash string
	Logger    *slog.Logger
	// Observer is told of each message applied and each batch stored
	// (nil: nobody).
	Observer Observer
	// MaxLag is how long the node may know of a position of the log
	// without applying it; past it the node is behind ([Fleet.Behind]):
	// not ready, and app refuses new connections.
	MaxLag time.Duration
	// Rejoined, when not nil, is called by a [Member] each time the node
	// rejoined under the id node; was is the id the others took for dead.
	Rejoined func(node, was string)
}

// Fleet is this node's membership of a fleet. Create it with [Open],
// start it with [Fleet.Run].
type Fleet struct {
	cfg     Config
	node    string
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  jetstream.Stream
	nodes   jetstream.KeyValue // the heartbeats
	members jetstream.KeyValue // a key per member (members.go)
	snaps   jetstream.ObjectStore
	meta    jetstream.KeyValue // the format, the newest snapshot's position
	subject string             // of the log
	epoch   string             // of the log stream (see Epoch)
	log     *slog.Logger
	started time.Time

	counts  *nats.Subscription
	reaches *nats.Subscription // answers the others' checks of offers; set by Run
	tree    *channel.Tree

	mu        sync.Mutex
	tallies   map[string]*tally    // counts of this node's NOTIFYs, by proposal id
	seen      map[string]time.Time // last heartbeat seen of each node, on this node's clock
	applied   map[string]uint64    // the position each node said it applied
	snapping  bool                 // a snapshot of this node is under way
	preparing bool                 // room for the next snapshot is being made
	room      *channel.Frozen      // the room made, for the next snapshot
	accused   map[string]time.Time // when this node proposed a node's death
	gap       error                // the log lost entries this node had not applied
	marks     []mark               // this node's last recorded states (see digest.go)
	differs   map[string]bool      // whether each node's last compared mark differed
	divergent error                // this node's tree diverged from the others'
	// watching: the watch of heartbeats is live, since watchSince, of
	// every node's (watchAll) or of this node's and its predecessors'.
	watching   bool
	watchSince time.Time
	watchAll   bool
	member     map[string]bool       // the keys of the members bucket
	sus        map[string]*suspicion // of each node watched (suspicion.go)
	ownHeard   time.Time             // when this node's own heartbeat came back
	prevTick   time.Time             // the watch's last judgement
	lateSaid   time.Time             // when this node last logged it was too late
	swept      time.Time             // when the members' old purge markers were dropped

	ring       chan struct{} // signalled when the members change
	joined     chan struct{} // closed when the members are first known
	joinedOnce sync.Once

	// The last snapshot this node took or started from, and when (its
	// start without one); the consumer's alone.
	snapPos uint64
	snapAt  time.Time

	out        outbox             // the proposals waiting for their batch
	life       context.Context    // ends at Close
	cancelLife context.CancelFunc // ends life

	// Used by watch only: this node lost NATS; when it came back.
	offline bool
	back    time.Time

	bmu      sync.Mutex
	bnext    *barrierCall  // the read mark the reads coming now wait for
	marking  chan struct{} // a token per read mark in flight (barrier.go)
	readMark []byte        // this node's read mark: readMagic, its id, "\n"

	// held, while set, stops the consumer until the channel closes: a
	// seam for the tests, which make a node fall behind the log with it.
	held atomic.Pointer[chan struct{}]

	// last is the stream's last position as this node last knew it, and
	// delivered when (Unix nanoseconds) the consumer last delivered a
	// message (position.go).
	last      atomic.Uint64
	delivered atomic.Int64
	// lag: when this node first knew of the positions it has not
	// applied (lag.go).
	lag lagClock
	// leaderless: the last answer about the log said it has no leader.
	leaderless atomic.Bool

	stop chan struct{}
	done sync.WaitGroup
}

// Epoch returns the epoch of the fleet's history ([channel.Epocher]):
// fixed when its log stream was created, the same on every node, and
// another one when the stream is deleted and created anew.
func (f *Fleet) Epoch() string { return f.epoch }

// Node returns this node's id.
func (f *Fleet) Node() string { return f.node }

// TakenForDead reports whether the log took this node for dead while it
// lived (cut off from NATS for longer than the heartbeat timeout): its
// tree applied the entry, deleted the transient resources of this node's
// connections and refuses whatever this node proposes from then on. A
// [Member] then rejoins as another node: a new Fleet (a new id) that goes
// on applying the log to the same tree
// (docs/fleet.md#5-lifecycle-across-nodes).
func (f *Fleet) TakenForDead() bool {
	return f.tree != nil && f.tree.Dead(f.node)
}

// Name returns the fleet's name.
func (f *Fleet) Name() string { return f.cfg.Name }

// Run applies the log to tree, which must be new and created with this
// fleet as its Log and Node: from the newest snapshot, if any, and the
// entries after it. It returns once the
// tree has caught up with the log as it was when Run was called, and
// keeps applying in the background; it also starts the heartbeats and
// the watch for dead nodes. ctx bounds Run, except the time the
// snapshot's download takes: that goes on, past ctx's deadline, while
// its chunks come.
func (f *Fleet) Run(ctx context.Context, tree *channel.Tree) error {
	f.tree = tree
	start := time.Now()
	if _, err := f.restore(ctx); err != nil {
		return fmt.Errorf("fleet: snapshot: %w", err)
	}
	// The snapshot's download is bounded by its progress (download.go):
	// the time it took does not count against ctx.
	ctx, cancel := shifted(ctx, time.Since(start))
	defer cancel()
	return f.start(ctx, nil)
}

// start applies the log to f.tree from the entry after the last one it
// applied, as Run describes. switchOver, when not nil, is called once the
// node's first heartbeat is stored and before the log is applied: a
// failure before it or of it leaves the tree as it was (see takeOver).
func (f *Fleet) start(ctx context.Context, switchOver func() error) error {
	var last uint64
	if err := retry(ctx, func(ctx context.Context) error {
		info, err := f.stream.Info(ctx)
		if err == nil {
			last = info.State.LastSeq
		}
		return err
	}); err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	f.sawLast(last)
	sub, err := f.nc.Subscribe(f.reachSubject(), f.onReaches)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	f.mu.Lock()
	f.reaches = sub
	f.mu.Unlock()
	if err := f.beat(ctx); err != nil {
		return fmt.Errorf("fleet: heartbeat: %w", err)
	}
	if err := retry(ctx, f.enlist); err != nil {
		return fmt.Errorf("fleet: member key: %w", err)
	}
	if switchOver != nil {
		if err := switchOver(); err != nil {
			return err
		}
	}
	f.done.Add(4)
	go f.watch()
	select { // the members known before anything asks for them
	case <-f.joined:
	case <-ctx.Done():
		f.done.Add(-3)
		return fmt.Errorf("fleet: watching the members: %w", ctx.Err())
	}
	go f.consume()
	go f.heartbeats()
	go f.refreshLast()
	if err := f.tree.WaitApplied(ctx, last); err != nil {
		return fmt.Errorf("fleet: catching up with the log: %w", err)
	}
	f.log.Info("fleet joined", "fleet", f.cfg.Name, "node", f.node, "applied", last)
	return nil
}

// shifted returns ctx with its deadline, if any, moved later by d; it is
// canceled when ctx is.
func shifted(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	c, cancel := context.WithDeadline(context.WithoutCancel(ctx), dl.Add(d))
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel()
		}
	})
	return c, func() {
		stop()
		cancel()
	}
}

// Close stops applying, heartbeating and watching. It does not close the
// NATS connection.
func (f *Fleet) Close() {
	select {
	case <-f.stop:
		return
	default:
	}
	close(f.stop)
	f.cancelLife()
	f.done.Wait()
	_ = f.counts.Unsubscribe()
	f.mu.Lock()
	sub := f.reaches
	f.mu.Unlock()
	if sub != nil {
		_ = sub.Unsubscribe()
	}
	ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
	defer cancel()
	_ = f.nodes.Delete(ctx, f.node)
	_ = f.dismiss(ctx, f.node)
}
