package fleet

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/reso-project/reso/channel"
)

// Member is this node's place in a fleet across its rejoins: one tree,
// which applies the log for as long as the node runs, and the current
// [Fleet] (one id). When the other nodes take the node for dead while it
// lives (cut off from NATS, or starved, for longer than the heartbeat
// timeout), its tree applies its own death when it reads the log again:
// its connections' transient resources are deleted as on every node, but
// the connections stay open with their subscriptions
// ([channel.Options.Rejoin]). The member then rejoins without a restart
// (docs/fleet.md#5-lifecycle-across-nodes): it opens a Fleet under a new
// id, hands the tree over to it ([channel.Tree.Rejoin], which makes the
// deleted resources again under the new id) and closes the old one; the
// new Fleet goes on applying the log where the old one stopped. Create it
// with [Join].
type Member struct {
	nc   *nats.Conn
	cfg  Config
	tree *channel.Tree
	cur  atomic.Pointer[Fleet]

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

// rejoinCheck is how often a member looks whether it was taken for dead.
const rejoinCheck = 100 * time.Millisecond

// rejoinTimeout bounds one attempt at joining again (as a node's start).
const rejoinTimeout = time.Minute

// Join opens a membership of the fleet cfg names over nc ([Open]), makes
// the node's tree with opt (its Log, Node and Rejoin are set here) and
// applies the log to it ([Fleet.Run]); it returns once the tree caught up
// with the log, and then watches for the node's death, to rejoin.
// cfg.Rejoined, when set, is told each rejoin.
func Join(ctx context.Context, nc *nats.Conn, cfg Config, opt channel.Options) (*Member, error) {
	f, err := Open(ctx, nc, cfg)
	if err != nil {
		return nil, err
	}
	f.log.Info("fleet node", "node", f.Node(), "fleet", f.Name())
	opt.Log, opt.Node, opt.Rejoin = f, f.Node(), true
	tree, err := channel.New(ctx, nil, opt)
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Run(ctx, tree); err != nil {
		_ = tree.Close()
		f.Close()
		return nil, err
	}
	m := &Member{nc: nc, cfg: f.cfg, tree: tree, stop: make(chan struct{}), done: make(chan struct{})}
	m.cur.Store(f)
	go m.watch()
	return m, nil
}

// watch rejoins whenever the current membership was taken for dead and
// NATS is reachable, until Close.
func (m *Member) watch() {
	defer close(m.done)
	tick := time.NewTicker(rejoinCheck)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
		f := m.cur.Load()
		if !f.TakenForDead() || m.nc.Status() != nats.CONNECTED {
			continue
		}
		m.rejoin(f)
	}
}

// rejoin joins the fleet again under a new id and hands the tree over;
// on a failure before the hand-over the next check tries again.
func (m *Member) rejoin(old *Fleet) {
	log := old.log
	log.Warn("fleet: the other nodes took this node for dead; rejoining with a new id", "node", old.Node())
	ctx, cancel := context.WithTimeout(context.Background(), rejoinTimeout)
	defer cancel()
	go func() {
		select {
		case <-m.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	f, err := Open(ctx, m.nc, m.cfg)
	if err != nil {
		log.Warn("fleet: rejoining", "err", err)
		return
	}
	err = f.takeOver(ctx, old)
	if m.tree.Node() != f.Node() { // not handed over: the old one goes on
		f.Close()
		log.Warn("fleet: rejoining", "err", err)
		return
	}
	m.cur.Store(f)
	if err != nil { // handed over, but not caught up in time: it goes on
		log.Warn("fleet: rejoined, catching up", "node", f.Node(), "err", err)
	}
	log.Info("fleet rejoined", "node", f.Node(), "was", old.Node(), "applied", m.tree.Applied())
	if m.cfg.Rejoined != nil {
		m.cfg.Rejoined(f.Node(), old.Node())
	}
}

// takeOver makes f, a new membership, the one that applies old's tree:
// once f's first heartbeat is stored the tree takes f's id and log
// ([channel.Tree.Rejoin]), old stops, and f applies the log from the
// entry after the last one the tree applied.
func (f *Fleet) takeOver(ctx context.Context, old *Fleet) error {
	tree := old.tree
	f.tree = tree
	return f.start(ctx, func() error {
		if err := tree.Rejoin(f.node, f); err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
		// The tree is f's: entries old's consumer still applies before
		// it stops apply as they would under f.
		old.Close()
		f.snapPos, f.snapAt = old.snapPos, old.snapAt
		return nil
	})
}

// Close stops watching, closes the tree (its clients get close code 1001
// and the others delete its transient resources at once) and leaves.
func (m *Member) Close() {
	m.stopOnce.Do(func() { close(m.stop) })
	<-m.done
	if err := m.tree.Close(); err != nil {
		m.cur.Load().log.Error("closing the channel's tree", "err", err)
	}
	m.cur.Load().Close()
}

// Tree returns the node's tree: the same across rejoins.
func (m *Member) Tree() *channel.Tree { return m.tree }

// Fleet returns the current membership.
func (m *Member) Fleet() *Fleet { return m.cur.Load() }

// Node returns the node's current id.
func (m *Member) Node() string { return m.cur.Load().Node() }

// Name returns the fleet's name.
func (m *Member) Name() string { return m.cfg.Name }

// Ready is the current membership's [Fleet.Ready].
func (m *Member) Ready(ctx context.Context) error { return m.cur.Load().Ready(ctx) }

// Position is the current membership's [Fleet.Position].
func (m *Member) Position() (applied, last uint64) { return m.cur.Load().Position() }

// Live is the current membership's [Fleet.Live].
func (m *Member) Live() []string { return m.cur.Load().Live() }

// Lag returns the current membership's lag behind the log ([Fleet.Lag]).
func (m *Member) Lag() time.Duration { return m.cur.Load().Lag() }

// Divergent is the current membership's [Fleet.Divergent].
func (m *Member) Divergent() bool { return m.cur.Load().Divergent() }
