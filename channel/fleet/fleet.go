// Package fleet is the JetStream backend of a fleet of reso nodes
// (docs/fleet.md): one stream is the ordered log of the channel's
// changes, which every node applies to its own copy of the tree; a
// key-value bucket holds the fleet's format and the nodes' heartbeats.
// It implements [channel.Log]; cmd/reso wires it as it wires the SQLite
// store of a single node.
package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/channel"
)

// Format is the version of the fleet's data this package reads and
// writes.
const Format = 1

// Defaults of [Config].
const (
	DefaultName      = "reso"
	DefaultReplicas  = 3
	DefaultHeartbeat = 10 * time.Second
	DefaultSnapshot  = 10000
	DefaultKeep      = 50000
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
	// SnapshotEvery is how many entries of the log go between two
	// snapshots of the tree; Keep how many entries the log keeps below
	// the snapshot when it is trimmed (-1: none).
	SnapshotEvery int
	Keep          int
	Logger        *slog.Logger
}

// Fleet is this node's membership of a fleet. Create it with [Open],
// start it with [Fleet.Run].
type Fleet struct {
	cfg     Config
	node    string
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  jetstream.Stream
	nodes   jetstream.KeyValue
	snaps   jetstream.ObjectStore
	meta    jetstream.KeyValue // the format, the newest snapshot's position
	subject string             // of the log
	log     *slog.Logger
	started time.Time

	counts *nats.Subscription
	tree   *channel.Tree

	mu       sync.Mutex
	tallies  map[string]*tally    // counts of this node's NOTIFYs, by proposal id
	seen     map[string]time.Time // last heartbeat seen of each node, on this node's clock
	applied  map[string]uint64    // the position each node said it applied
	snapping bool                 // a snapshot of this node is under way
	accused  map[string]time.Time // when this node proposed a node's death
	gap      error                // the log lost entries this node had not applied

	bmu      sync.Mutex
	bnext    *barrierCall // the request the reads coming now wait for
	brunning bool         // barriers runs

	stop chan struct{}
	done sync.WaitGroup
}

// tally is the counts of one NOTIFY reported by the other nodes.
type tally struct {
	sum   int
	from  map[string]bool
	at    time.Time
	ready chan struct{} // signalled at each report
}

// Open joins the fleet cfg names over nc: it creates the log stream and
// the buckets when they are missing (retrying while the JetStream cluster
// elects its leader) and checks the fleet's format. The node gets a fresh
// random id.
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*Fleet, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if !validName(cfg.Name) {
		return nil, fmt.Errorf("fleet: name %q: use letters, digits, - and _", cfg.Name)
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = DefaultReplicas
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.SnapshotEvery <= 0 {
		cfg.SnapshotEvery = DefaultSnapshot
	}
	switch {
	case cfg.Keep == 0:
		cfg.Keep = DefaultKeep
	case cfg.Keep < 0:
		cfg.Keep = 0
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	f := &Fleet{
		cfg: cfg, node: newNodeID(), nc: nc, js: js, log: cfg.Logger,
		subject: "reso." + cfg.Name + ".log",
		started: time.Now(),
		tallies: make(map[string]*tally),
		seen:    make(map[string]time.Time),
		applied: make(map[string]uint64),
		accused: make(map[string]time.Time),
		stop:    make(chan struct{}),
	}
	up := upper(cfg.Name)
	err = retry(ctx, func(ctx context.Context) error {
		f.stream, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:        "RESO_" + up + "_LOG",
			Subjects:    []string{f.subject},
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
			Duplicates:  time.Minute,
			AllowDirect: true,
			Metadata:    map[string]string{"reso-format": strconv.Itoa(Format)},
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: the log stream: %w", err)
	}
	err = retry(ctx, func(ctx context.Context) error {
		f.meta, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: "RESO_" + up + "_KV", Replicas: cfg.Replicas, Storage: jetstream.FileStorage,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: the key-value bucket: %w", err)
	}
	if err := checkFormat(ctx, f.meta, cfg.Name); err != nil {
		return nil, err
	}
	err = retry(ctx, func(ctx context.Context) error {
		f.nodes, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: "RESO_" + up + "_NODES", Replicas: cfg.Replicas, Storage: jetstream.MemoryStorage,
			TTL: 10 * cfg.Heartbeat,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: the nodes bucket: %w", err)
	}
	err = retry(ctx, func(ctx context.Context) error {
		f.snaps, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket: "RESO_" + up + "_SNAP", Replicas: cfg.Replicas, Storage: jetstream.FileStorage,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: the snapshot store: %w", err)
	}
	f.counts, err = nc.Subscribe(f.countSubject(f.node), f.onCount)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return f, nil
}

// validName reports whether name may name a fleet (it goes into subjects
// and stream names).
func validName(name string) bool {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return name != "" && len(name) <= 64
}

// upper returns the fleet's name as it goes into the names of streams and
// buckets.
func upper(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// checkFormat records the fleet's format, or refuses another one.
func checkFormat(ctx context.Context, meta jetstream.KeyValue, name string) error {
	want := strconv.Itoa(Format)
	return retry(ctx, func(ctx context.Context) error {
		_, err := meta.Create(ctx, "format", []byte(want))
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		e, err := meta.Get(ctx, "format")
		if err != nil {
			return err
		}
		if got := string(e.Value()); got != want {
			return permanent{fmt.Errorf("fleet %s has format %s; this reso reads format %s", name, got, want)}
		}
		return nil
	})
}

// permanent is an error retry gives up on at once.
type permanent struct{ error }

// retry runs op with a short time limit per attempt until it succeeds,
// fails permanently or ctx ends: a JetStream cluster that has not elected
// its leader yet leaves requests unanswered.
func retry(ctx context.Context, op func(ctx context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := op(actx)
		cancel()
		var p permanent
		switch {
		case err == nil:
			return nil
		case errors.As(err, &p):
			return p.error
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// newNodeID returns 16 random hex digits.
func newNodeID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Node returns this node's id.
func (f *Fleet) Node() string { return f.node }

// Name returns the fleet's name.
func (f *Fleet) Name() string { return f.cfg.Name }

// Run applies the log to tree, which must be new and created with this
// fleet as its Log and Node: from the newest snapshot, if any, and the
// entries after it. It returns once the
// tree has caught up with the log as it was when Run was called, and
// keeps applying in the background; it also starts the heartbeats and
// the watch for dead nodes.
func (f *Fleet) Run(ctx context.Context, tree *channel.Tree) error {
	f.tree = tree
	if _, err := f.restore(ctx); err != nil {
		return fmt.Errorf("fleet: snapshot: %w", err)
	}
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
	if err := f.beat(ctx); err != nil {
		return fmt.Errorf("fleet: heartbeat: %w", err)
	}
	f.done.Add(3)
	go f.consume()
	go f.heartbeats()
	go f.watch()
	if err := tree.WaitApplied(ctx, last); err != nil {
		return fmt.Errorf("fleet: catching up with the log: %w", err)
	}
	f.log.Info("fleet joined", "fleet", f.cfg.Name, "node", f.node, "applied", last)
	return nil
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
	f.done.Wait()
	_ = f.counts.Unsubscribe()
	ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
	defer cancel()
	_ = f.nodes.Delete(ctx, f.node)
}

// Ready returns why the node cannot serve now, or nil: NATS unreachable,
// the log's leader not answering, or the node more than a second behind
// the log. It returns by the time ctx ends, even while the NATS client
// holds its connection's lock to reconnect.
func (f *Fleet) Ready(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- f.ready(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return errors.New("fleet: no answer in time (nats unreachable?)")
	}
}

// ready is Ready without its bound.
func (f *Fleet) ready(ctx context.Context) error {
	if s := f.nc.Status(); s != nats.CONNECTED {
		return fmt.Errorf("fleet: nats unreachable (%s)", strings.ToLower(s.String()))
	}
	f.mu.Lock()
	gap := f.gap
	f.mu.Unlock()
	if gap != nil {
		return gap
	}
	if f.tree.Dead(f.node) {
		return errors.New("fleet: the other nodes took this node for dead (cut off for longer than the heartbeat timeout); restart it")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	last, err := f.Barrier(ctx)
	if err != nil {
		return fmt.Errorf("fleet: the log does not answer: %v", ctx.Err())
	}
	if err := f.tree.WaitApplied(ctx, last); err != nil {
		return fmt.Errorf("fleet: catching up (applied %d of %d)", f.tree.Applied(), last)
	}
	return nil
}

// consume feeds the log to the tree in order, one entry after the other,
// starting over after the last one applied whenever the consumer ends.
func (f *Fleet) consume() {
	defer f.done.Done()
	for {
		next := f.tree.Applied() + 1
		err := f.consumeFrom(next)
		select {
		case <-f.stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
		if err != nil {
			f.log.Warn("fleet: log consumer", "err", err, "next", next)
		}
	}
}

// consumeFrom applies the log from position next until an error or Close.
func (f *Fleet) consumeFrom(next uint64) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-f.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	var cons jetstream.Consumer
	err := retry(ctx, func(ctx context.Context) error {
		var err error
		cons, err = f.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:   next,
		})
		return err
	})
	if err != nil {
		return err
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		it.Stop()
	}()
	for {
		msg, err := it.Next()
		if err != nil {
			return err
		}
		md, err := msg.Metadata()
		if err != nil {
			return err
		}
		pos := md.Sequence.Stream
		switch applied := f.tree.Applied(); {
		case pos <= applied:
			continue // delivered again after a reset
		case pos > applied+1:
			f.mu.Lock()
			f.gap = fmt.Errorf("fleet: the log lost entries %d to %d before this node applied them", applied+1, pos-1)
			f.mu.Unlock()
			f.log.Error("fleet: gap in the log", "applied", applied, "next", pos)
			return f.gap
		}
		f.tree.Apply(pos, msg.Data())
		f.maybeSnapshot(pos)
	}
}

// Propose implements [channel.Log]: it publishes entry to the log with id
// as its message id, so that a retry after a lost acknowledgement is not
// stored twice, and retries until ctx ends.
func (f *Fleet) Propose(ctx context.Context, id string, entry []byte) error {
	err := retry(ctx, func(actx context.Context) error {
		_, err := f.js.Publish(actx, f.subject, entry, jetstream.WithMsgID(id))
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: %v", channel.ErrUnavailable, err)
	}
	return nil
}

// Barrier implements [channel.Log]: the last position of the stream, from
// its leader. The reads waiting at one moment share one request; a read
// that comes while a request is under way waits for the next one, which
// starts after it came, so that it sees every write acknowledged before.
func (f *Fleet) Barrier(ctx context.Context) (uint64, error) {
	f.bmu.Lock()
	c := f.bnext
	if c == nil {
		c = &barrierCall{done: make(chan struct{})}
		f.bnext = c
		if !f.brunning {
			f.brunning = true
			go f.barriers()
		}
	}
	f.bmu.Unlock()
	select {
	case <-c.done:
		return c.pos, c.err
	case <-ctx.Done():
		return 0, fmt.Errorf("%w: %v", channel.ErrUnavailable, ctx.Err())
	}
}

// barrierCall is one request for the stream's last position.
type barrierCall struct {
	done chan struct{}
	pos  uint64
	err  error
}

// barriers sends the requests of Barrier one after the other while reads
// wait for them.
func (f *Fleet) barriers() {
	for {
		f.bmu.Lock()
		c := f.bnext
		f.bnext = nil
		if c == nil {
			f.brunning = false
			f.bmu.Unlock()
			return
		}
		f.bmu.Unlock()
		// Attempts of attemptTimeout, for as long as a read waits at most.
		ctx, cancel := context.WithTimeout(context.Background(), barrierTimeout)
		err := retry(ctx, func(ctx context.Context) error {
			info, err := f.stream.Info(ctx)
			if err == nil {
				c.pos = info.State.LastSeq
			}
			return err
		})
		cancel()
		if err != nil {
			c.err = fmt.Errorf("%w: %v", channel.ErrUnavailable, err)
		}
		close(c.done)
	}
}

// countSubject is where the counts of node's NOTIFYs go.
func (f *Fleet) countSubject(node string) string {
	return "reso." + f.cfg.Name + ".count." + node
}

// Report implements [channel.Log].
func (f *Fleet) Report(node, id string, n int) {
	_ = f.nc.Publish(f.countSubject(node), []byte(id+" "+strconv.Itoa(n)+" "+f.node))
}

// onCount records one node's count of one of this node's NOTIFYs.
func (f *Fleet) onCount(m *nats.Msg) {
	parts := strings.Fields(string(m.Data))
	if len(parts) != 3 {
		return
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tallyOf(parts[0])
	if !t.from[parts[2]] {
		t.from[parts[2]] = true
		t.sum += n
	}
	select {
	case t.ready <- struct{}{}:
	default:
	}
}

// tallyOf returns the tally of proposal id, made on first use; f.mu is
// held. Tallies nobody gathered (a NOTIFY whose proposer gave up) are
// dropped after a minute.
func (f *Fleet) tallyOf(id string) *tally {
	t := f.tallies[id]
	if t == nil {
		now := time.Now()
		for k, old := range f.tallies {
			if now.Sub(old.at) > time.Minute {
				delete(f.tallies, k)
			}
		}
		t = &tally{from: make(map[string]bool), at: now, ready: make(chan struct{}, 1)}
		f.tallies[id] = t
	}
	return t
}

// Gather implements [channel.Log]: the sum of the counts of the other
// live nodes, waiting at most gatherTimeout for the last of them.
func (f *Fleet) Gather(ctx context.Context, id string) int {
	timer := time.NewTimer(gatherTimeout)
	defer timer.Stop()
	f.mu.Lock()
	t := f.tallyOf(id)
	f.mu.Unlock()
	for {
		live := f.Live()
		f.mu.Lock()
		all := true
		for _, n := range live {
			if n != f.node && !t.from[n] {
				all = false
			}
		}
		sum := t.sum
		if all {
			delete(f.tallies, id)
		}
		f.mu.Unlock()
		if all {
			return sum
		}
		select {
		case <-t.ready:
		case <-timer.C:
			f.mu.Lock()
			delete(f.tallies, id)
			f.mu.Unlock()
			return sum
		case <-ctx.Done():
			return sum
		}
	}
}

// Live returns the nodes whose heartbeat this node saw within the
// heartbeat timeout and that the log has not taken for dead, this one
// included.
func (f *Fleet) Live() []string {
	now := time.Now()
	f.mu.Lock()
	var ns []string
	for n, at := range f.seen {
		if now.Sub(at) <= f.cfg.Heartbeat && (f.tree == nil || !f.tree.Dead(n)) {
			ns = append(ns, n)
		}
	}
	f.mu.Unlock()
	return ns
}

// beat writes this node's heartbeat.
func (f *Fleet) beat(ctx context.Context) error {
	v, _ := json.Marshal(beat{Node: f.node, Applied: f.tree.Applied()})
	return retry(ctx, func(ctx context.Context) error {
		_, err := f.nodes.Put(ctx, f.node, v)
		return err
	})
}

// heartbeats writes this node's heartbeat every third of the timeout.
func (f *Fleet) heartbeats() {
	defer f.done.Done()
	tick := time.NewTicker(f.cfg.Heartbeat / 3)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), f.cfg.Heartbeat/3)
		if err := f.beat(ctx); err != nil {
			f.log.Warn("fleet: heartbeat", "err", err)
		}
		cancel()
	}
}

// watch follows the heartbeats of the other nodes and proposes the death
// of those silent for longer than the timeout.
func (f *Fleet) watch() {
	defer f.done.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	updates := make(chan beat, 64)
	go f.follow(ctx, updates)
	tick := time.NewTicker(max(f.cfg.Heartbeat/10, 50*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case b := <-updates:
			f.mu.Lock()
			f.seen[b.Node] = time.Now()
			f.applied[b.Node] = b.Applied
			f.mu.Unlock()
		case <-tick.C:
			f.accuse()
		}
	}
}

// beat is a node's heartbeat.
type beat struct {
	Node    string `json:"node"`
	Applied uint64 `json:"applied"`
}

// follow sends every heartbeat written to updates, watching the bucket
// again whenever the watch ends.
func (f *Fleet) follow(ctx context.Context, updates chan<- beat) {
	for ctx.Err() == nil {
		w, err := f.nodes.WatchAll(ctx)
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		for e := range w.Updates() {
			var b beat
			if e == nil || e.Operation() != jetstream.KeyValuePut || json.Unmarshal(e.Value(), &b) != nil || b.Node != e.Key() {
				continue
			}
			select {
			case updates <- b:
			case <-ctx.Done():
				_ = w.Stop()
				return
			}
		}
	}
}

// accuse proposes the death of every node that owns connections in the
// tree and was silent for longer than the timeout (a node never seen is
// timed from this node's start), at most once per timeout each.
func (f *Fleet) accuse() {
	if f.nc.Status() != nats.CONNECTED {
		return // this node's own silence is no news about the others
	}
	now := time.Now()
	for _, n := range f.tree.Nodes() {
		f.mu.Lock()
		last, ok := f.seen[n]
		if !ok {
			last = f.started
		}
		quiet := now.Sub(last) > f.cfg.Heartbeat && now.Sub(f.accused[n]) > f.cfg.Heartbeat
		if quiet {
			f.accused[n] = now
		}
		f.mu.Unlock()
		if !quiet {
			continue
		}
		f.log.Info("fleet: node silent, proposing its death", "node", n, "silent", now.Sub(last).Round(time.Millisecond))
		ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
		if err := f.tree.ProposeDead(ctx, n); err != nil {
			f.log.Warn("fleet: proposing a death", "node", n, "err", err)
		}
		cancel()
	}
}
