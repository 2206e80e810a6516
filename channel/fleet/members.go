package fleet

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/internal/natsname"
)

// watchers is how many nodes watch each node's heartbeats: a node watches
// its watchers predecessors on the ring of the members ordered by id (all
// the others in a fleet of watchers+1 nodes or fewer), and the node with
// the smallest id watches every node (docs/fleet.md#5-lifecycle-across-nodes).
const watchers = 3

// The members bucket holds a key per node of the fleet, created as the
// node joins and purged as it leaves or is found silent; every node
// watches it, so a node's arrival and departure reach every node once,
// and nothing comes while the fleet does not change.

// membersBucket returns the name of the members bucket of fleet name.
func membersBucket(name string) string {
	return natsname.Of(name, "MEMBERS")
}

// openMembers creates the members bucket when it is missing.
func (f *Fleet) openMembers(ctx context.Context) error {
	return retry(ctx, func(ctx context.Context) (err error) {
		f.members, err = f.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: membersBucket(f.cfg.Name), Replicas: f.cfg.Replicas, Storage: jetstream.MemoryStorage,
		})
		return err
	})
}

// markersSweep is how often the node watching every heartbeat drops the
// members bucket's purge markers (one per node id gone) older than
// half an hour (nats-server 2.10 has no markers that expire).
const markersSweep = 30 * time.Minute

// sweepMarkers drops the members bucket's old purge markers, at most once
// per markersSweep, when this node watches every heartbeat.
func (f *Fleet) sweepMarkers(ctx context.Context) {
	f.mu.Lock()
	due := f.watchAll && time.Since(f.swept) > markersSweep
	if due {
		f.swept = time.Now()
	}
	f.mu.Unlock()
	if !due {
		return
	}
	if err := f.members.PurgeDeletes(ctx); err != nil {
		f.log.Warn("fleet: dropping the members' purge markers", "err", err)
	}
}

// enlist writes this node's key in the members bucket unless it is there
// (or the log took this node for dead: it rejoins under another id).
func (f *Fleet) enlist(ctx context.Context) error {
	if f.TakenForDead() {
		return nil
	}
	_, err := f.members.Create(ctx, f.node, []byte(f.node))
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil
	}
	if err == nil {
		f.log.Debug("fleet: member key written", "node", f.node)
	}
	return err
}

// dismiss purges node's key from the members bucket.
func (f *Fleet) dismiss(ctx context.Context, node string) error {
	return f.members.Purge(ctx, node)
}

// followMembers keeps f.member the set of the members bucket's keys, as w
// delivers them, until w ends or ctx ends; it closes loaded at the first
// marker of the present and signals f.ring at each change.
func (f *Fleet) followMembers(ctx context.Context, w jetstream.KeyWatcher, loaded chan<- struct{}) {
	set := make(map[string]bool)
	present := false
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil {
				present = true
				close(loaded)
			} else if e.Operation() == jetstream.KeyValuePut {
				set[e.Key()] = true
			} else {
				delete(set, e.Key())
			}
			if !present {
				continue
			}
			f.mu.Lock()
			f.member = make(map[string]bool, len(set))
			for n := range set {
				f.member[n] = true
			}
			f.mu.Unlock()
			select {
			case f.ring <- struct{}{}:
			default:
			}
		}
	}
}

// watchMembers starts a watch of the members bucket, giving up after
// limit.
func (f *Fleet) watchMembers(ctx context.Context, limit time.Duration) (jetstream.KeyWatcher, error) {
	return within(limit, func() (jetstream.KeyWatcher, error) { return f.members.WatchAll(ctx) })
}

// ringOf returns the members not taken for dead, this node among them,
// ordered by id; f.mu is held.
func (f *Fleet) ringOf() []string {
	ns := []string{f.node}
	for n := range f.member {
		if n != f.node && (f.tree == nil || !f.tree.Dead(n)) {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	return ns
}

// watched returns the keys of the heartbeats this node watches: its own
// and its predecessors' on the ring; nil for all of them when it has the
// smallest id.
func (f *Fleet) watched() []string {
	f.mu.Lock()
	ring := f.ringOf()
	f.mu.Unlock()
	if ring[0] == f.node {
		return nil
	}
	return append(predecessors(f.node, ring, watchers), f.node)
}

// predecessors returns the k nodes before self on ring (ordered, self in
// it), nearest first, wrapping around; fewer when the ring is smaller.
func predecessors(self string, ring []string, k int) []string {
	i := slices.Index(ring, self)
	if i < 0 {
		return nil
	}
	var ps []string
	for j := 1; j <= k && j < len(ring); j++ {
		ps = append(ps, ring[(i-j+len(ring))%len(ring)])
	}
	return ps
}

// within runs start, giving up after limit (starting a watch may hang
// while NATS restarts).
func within(limit time.Duration, start func() (jetstream.KeyWatcher, error)) (jetstream.KeyWatcher, error) {
	type started struct {
		w   jetstream.KeyWatcher
		err error
	}
	done := make(chan started, 1)
	go func() {
		w, err := start()
		done <- started{w, err}
	}()
	select {
	case s := <-done:
		return s.w, s.err
	case <-time.After(limit):
		return nil, errors.New("fleet: no watch in time")
	}
}
