package app

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channel/fleet"
	"github.com/reso-project/reso/plugins"
	"github.com/reso-project/reso/plugins/doors"
)

// fleetMember is this node's place in a fleet: its membership and the
// tree that applies the log. When the other nodes take the node for dead
// while it lives (cut off from NATS for longer than the heartbeat
// timeout), its tree applies its own death when NATS is back: every
// connection of the node ends and the log refuses whatever the node
// proposes under that id from then on. The member then rejoins without a
// restart (docs/fleet.md#5-lifecycle-across-nodes): it joins again under
// a new id, with a new tree built from the newest snapshot and the log
// after it, serves from that tree, and closes the old one (whose clients
// the death ended already). Nothing of the old id comes back: its
// transient resources were deleted by its death, on every node.
//
// It is the host's tree (plugins.Tree), the readiness check and what the
// metrics read, each time through the current membership.
type fleetMember struct {
	nc     *nats.Conn
	join   func(ctx context.Context) (*channel.Tree, *fleet.Fleet, error)
	onID   func(id string) // told each new id
	logger *slog.Logger

	cur  atomic.Pointer[membership]
	mu   sync.Mutex // held while the membership is replaced or closed
	stop chan struct{}
	done chan struct{}
}

// membership is one id's membership of the fleet and its tree.
type membership struct {
	tree *channel.Tree
	fl   *fleet.Fleet
	door plugins.Tree
}

// rejoinCheck is how often a member looks whether it was taken for dead.
const rejoinCheck = 100 * time.Millisecond

// rejoinTimeout bounds one attempt at joining again (as a node's start).
const rejoinTimeout = time.Minute

// newFleetMember joins the fleet with join and starts watching for the
// node's death.
func newFleetMember(ctx context.Context, nc *nats.Conn, join func(ctx context.Context) (*channel.Tree, *fleet.Fleet, error), onID func(string), logger *slog.Logger) (*fleetMember, error) {
	tree, fl, err := join(ctx)
	if err != nil {
		return nil, err
	}
	m := &fleetMember{nc: nc, join: join, onID: onID, logger: logger, stop: make(chan struct{}), done: make(chan struct{})}
	m.cur.Store(&membership{tree, fl, doors.TreeOf(tree)})
	onID(fl.Node())
	go m.watch()
	return m, nil
}

// watch rejoins whenever the current membership was taken for dead and
// NATS is reachable, until Close.
func (m *fleetMember) watch() {
	defer close(m.done)
	tick := time.NewTicker(rejoinCheck)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
		if !m.cur.Load().fl.TakenForDead() || m.nc.Status() != nats.CONNECTED {
			continue
		}
		m.rejoin()
	}
}

// rejoin joins the fleet again under a new id and replaces the
// membership; on failure the next check tries again.
func (m *fleetMember) rejoin() {
	old := m.cur.Load()
	m.logger.Warn("fleet: the other nodes took this node for dead; rejoining with a new id", "node", old.fl.Node())
	ctx, cancel := context.WithTimeout(context.Background(), rejoinTimeout)
	go func() {
		select {
		case <-m.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	tree, fl, err := m.join(ctx)
	cancel()
	if err != nil {
		m.logger.Warn("fleet: rejoining", "err", err)
		return
	}
	m.mu.Lock()
	select {
	case <-m.stop: // closing: the new membership goes too
		m.mu.Unlock()
		closeMembership(&membership{tree: tree, fl: fl}, m.logger)
		return
	default:
	}
	m.cur.Store(&membership{tree, fl, doors.TreeOf(tree)})
	m.mu.Unlock()
	m.logger.Info("fleet rejoined", "node", fl.Node(), "was", old.fl.Node(), "applied", tree.Applied())
	m.onID(fl.Node())
	closeMembership(old, m.logger)
}

// closeMembership closes a tree (its clients get 1001) and leaves.
func closeMembership(ms *membership, logger *slog.Logger) {
	if err := ms.tree.Close(); err != nil {
		logger.Error("closing the channel's tree", "err", err)
	}
	ms.fl.Close()
}

// Close stops watching and closes the current membership.
func (m *fleetMember) Close() {
	m.mu.Lock()
	close(m.stop)
	m.mu.Unlock()
	<-m.done
	closeMembership(m.cur.Load(), m.logger)
}

// Connect implements plugins.Tree on the current tree.
func (m *fleetMember) Connect(ctx context.Context, id, identity string) (plugins.TreeClient, error) {
	return m.cur.Load().door.Connect(ctx, id, identity)
}

// Call implements plugins.Tree on the current tree.
func (m *fleetMember) Call(ctx context.Context, from, identity string, msg []byte) ([]byte, error) {
	return m.cur.Load().door.Call(ctx, from, identity, msg)
}

// EndIdentity ends the clients of identity on the current tree.
func (m *fleetMember) EndIdentity(identity string) { m.cur.Load().tree.EndIdentity(identity) }

// EndSession is the current tree's [channel.Tree.EndSession].
func (m *fleetMember) EndSession(id string) { m.cur.Load().tree.EndSession(id) }

// Ready is the current membership's readiness.
func (m *fleetMember) Ready(ctx context.Context) error { return m.cur.Load().fl.Ready(ctx) }

// Stats returns the current tree's counts.
func (m *fleetMember) Stats() channel.Stats { return m.cur.Load().tree.Stats() }

// Position returns the current node's place in the log (fleet.Fleet.Position).
func (m *fleetMember) Position() (applied, last uint64) { return m.cur.Load().fl.Position() }

// Applied returns the position of the log the current tree applied.
func (m *fleetMember) Applied() uint64 { return m.cur.Load().tree.Applied() }

// Node returns the current id.
func (m *fleetMember) Node() string { return m.cur.Load().fl.Node() }

// Name returns the fleet's name.
func (m *fleetMember) Name() string { return m.cur.Load().fl.Name() }

// Live returns the live nodes the current membership sees.
func (m *fleetMember) Live() []string { return m.cur.Load().fl.Live() }

// Divergent reports whether the current tree diverged.
func (m *fleetMember) Divergent() bool { return m.cur.Load().fl.Divergent() }

var _ plugins.Tree = (*fleetMember)(nil)
