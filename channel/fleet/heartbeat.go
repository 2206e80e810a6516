package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Live returns the members of the fleet the log has not taken for dead,
// this one included, but for those this node watches and finds silent
// (see accuse).
func (f *Fleet) Live() []string {
	now := time.Now()
	f.mu.Lock()
	ns := []string{f.node}
	for n := range f.member {
		if n == f.node || f.tree != nil && f.tree.Dead(n) {
			continue
		}
		if s := f.sus[n]; s != nil && s.dead(now) {
			continue
		}
		ns = append(ns, n)
	}
	f.mu.Unlock()
	if f.TakenForDead() {
		return ns[1:]
	}
	return ns
}

// beat writes this node's heartbeat.
func (f *Fleet) beat(ctx context.Context) error {
	applied, seq, hash := f.tree.State()
	f.record(mark{applied, seq, hash})
	f.mu.Lock()
	marks := slices.Clone(f.marks)
	f.mu.Unlock()
	v, _ := json.Marshal(beat{Node: f.node, Applied: applied, Seq: seq, Hash: hash, Marks: marks})
	return retry(ctx, func(ctx context.Context) error {
		_, err := f.nodes.Put(ctx, f.node, v)
		return err
	})
}

// heartbeats writes this node's heartbeat every third of the timeout,
// and once per timeout its key in the members bucket if it went missing
// (NATS restarted, or a node found this one silent).
func (f *Fleet) heartbeats() {
	defer f.done.Done()
	tick := time.NewTicker(f.cfg.Heartbeat / 3)
	defer tick.Stop()
	for i := 1; ; i++ {
		select {
		case <-f.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), f.cfg.Heartbeat/3)
		if err := f.beat(ctx); err != nil {
			f.log.Warn("fleet: heartbeat", "err", err)
		}
		if i%3 == 0 {
			if err := f.enlist(ctx); err != nil {
				f.log.Warn("fleet: member key", "err", err)
			}
			f.sweepMarkers(ctx)
		}
		cancel()
	}
}

// watch follows the heartbeats of the nodes this node watches and
// proposes the death of those silent for too long; it also sweeps the
// tallies of NOTIFY counts nobody gathered.
func (f *Fleet) watch() {
	defer f.done.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	updates := make(chan beat, 64)
	go f.follow(ctx, updates)
	tick := time.NewTicker(f.tick())
	defer tick.Stop()
	sweep := time.NewTicker(tallySweep)
	defer sweep.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-sweep.C:
			f.sweepTallies()
		case b := <-updates:
			f.hear(b)
		case <-tick.C:
			// What came before the tick is heard first: a watcher that
			// did not run for a while has heartbeats waiting.
			for drained := false; !drained; {
				select {
				case b := <-updates:
					f.hear(b)
				default:
					drained = true
				}
			}
			f.accuse()
		}
	}
}

// tick returns the period of the watch's judgements.
func (f *Fleet) tick() time.Duration {
	return max(f.cfg.Heartbeat/10, 50*time.Millisecond)
}

// hear records a heartbeat received now and compares its marks.
func (f *Fleet) hear(b beat) {
	now := time.Now()
	f.mu.Lock()
	f.seen[b.Node] = now
	f.applied[b.Node] = b.Applied
	if b.Node == f.node {
		f.ownHeard = now
	}
	if s := f.sus[b.Node]; s != nil {
		s.heard(now)
	}
	f.mu.Unlock()
	f.compare(b)
}

// beat is a node's heartbeat.
type beat struct {
	Node    string `json:"node"`
	Applied uint64 `json:"applied"`
	// The tree's seq and running hash at Applied, and the node's last
	// marks (this one among them), compared by the other nodes.
	Seq   uint64 `json:"seq"`
	Hash  uint64 `json:"hash"`
	Marks []mark `json:"marks,omitempty"`
}

// follow watches the members bucket and sends the heartbeats of the
// nodes this node watches (see watched) to updates, watching the
// heartbeats again whenever those change, and both buckets again whenever
// a watch ends or goes stale: this node's own heartbeat comes through the
// watch every third of the timeout, so a watch silent for two thirds of
// it lost its consumer (NATS restarted under it). A watch begins with the
// last value of each key, which says nothing about the present: after
// the first watch those are skipped.
func (f *Fleet) follow(ctx context.Context, updates chan<- beat) {
	stale := f.cfg.Heartbeat * 2 / 3
	first := true
	for ctx.Err() == nil {
		mctx, mcancel := context.WithCancel(ctx)
		mw, err := f.watchMembers(mctx, stale)
		if err != nil {
			mcancel()
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		loaded := make(chan struct{})
		go func() {
			f.followMembers(mctx, mw, loaded)
			mcancel() // the members watch ended: both are watched again
		}()
		select {
		case <-loaded:
			f.joinedOnce.Do(func() { close(f.joined) })
		case <-mctx.Done():
		case <-time.After(stale):
			f.log.Warn("fleet: the watch of members did not start; watching again")
			mcancel()
		}
		f.followBeats(mctx, updates, stale, first)
		first = false
		_ = mw.Stop()
		mcancel()
	}
}

// followBeats watches the heartbeats of the nodes this node watches until
// ctx ends or a watch goes stale, watching again whenever that set
// changes.
func (f *Fleet) followBeats(ctx context.Context, updates chan<- beat, stale time.Duration, first bool) {
	fresh := true // the first watch after the members'
	for ctx.Err() == nil {
		keys := f.watched()
		wctx, cancel := context.WithCancel(ctx)
		w, err := within(stale, func() (jetstream.KeyWatcher, error) {
			if keys == nil {
				return f.nodes.WatchAll(wctx)
			}
			return f.nodes.WatchFiltered(wctx, slices.Clone(keys)) // it rewrites its argument
		})
		if err != nil {
			cancel()
			return
		}
		again := f.watchUntilStale(ctx, w, keys, updates, stale, first && fresh, fresh)
		fresh = false
		_ = w.Stop()
		cancel()
		if !again {
			return
		}
	}
}

// watchUntilStale sends the heartbeats of w, a watch of keys (nil: all),
// to updates until w ends, ctx ends or nothing comes for stale, and
// returns true when it ended because the nodes to watch changed. Old
// heartbeats (before the watch's marker of the present) only when old.
// At the marker, every node watched is timed from now when blind (the
// watch is new, not one of a changed set), those newly watched otherwise.
func (f *Fleet) watchUntilStale(ctx context.Context, w jetstream.KeyWatcher, keys []string, updates chan<- beat, stale time.Duration, old, blind bool) bool {
	timer := time.NewTimer(stale)
	defer timer.Stop()
	defer func() {
		f.mu.Lock()
		f.watching = false
		f.mu.Unlock()
	}()
	present := false
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			f.log.Warn("fleet: the watch of heartbeats went silent; watching again")
			return false
		case <-f.ring:
			if now := f.watched(); !slices.Equal(now, keys) {
				return true
			}
			if present && keys == nil {
				f.mu.Lock()
				f.track(nil, time.Now(), false)
				f.mu.Unlock()
			}
		case e, ok := <-w.Updates():
			if !ok {
				return false
			}
			timer.Reset(stale)
			if e == nil {
				present = true
				f.watchFrom(keys, time.Now(), blind)
				continue
			}
			var b beat
			if !present && !old || e.Operation() != jetstream.KeyValuePut || json.Unmarshal(e.Value(), &b) != nil || b.Node != e.Key() {
				continue
			}
			select {
			case updates <- b:
			case <-ctx.Done():
				return false
			}
		}
	}
}

// watchFrom records that the heartbeats of keys (nil: all) are watched
// from now: the nodes newly watched are timed from now, all of them when
// blind, and the suspicions of the nodes no longer watched are dropped.
func (f *Fleet) watchFrom(keys []string, now time.Time, blind bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// The marker came back: this node's way through NATS works now, its
	// own heartbeat possibly lost between two watches.
	f.watching, f.watchSince, f.ownHeard = true, now, now
	f.track(keys, now, blind)
}

// track makes the suspicions those of the nodes of keys (nil: the members
// and the nodes that own connections), but this one: those newly watched
// timed from now, all of them when blind; f.mu is held.
func (f *Fleet) track(keys []string, now time.Time, blind bool) {
	f.watchAll = keys == nil
	want := make(map[string]bool)
	for _, n := range keys {
		want[n] = true
	}
	if keys == nil {
		for _, n := range f.ringOf() {
			want[n] = true
		}
		for n := range f.sus {
			if !f.member[n] {
				want[n] = true // owns connections: see accuse
			}
		}
	}
	delete(want, f.node)
	for n := range f.sus {
		if !want[n] {
			delete(f.sus, n)
		}
	}
	f.suspect(want, now, blind)
}

// suspect makes a suspicion of each node of want that has none, timed
// from now, and times the others from now as well when blind; f.mu is
// held.
func (f *Fleet) suspect(want map[string]bool, now time.Time, blind bool) {
	for n := range want {
		if s := f.sus[n]; s == nil {
			f.sus[n] = newSuspicion(f.cfg.Heartbeat, ceilingOf(f.cfg.Heartbeat), now)
		} else if blind {
			s.resume(now)
		}
	}
}

// accuse judges the nodes this node watches (while its watch is live and
// it is not too late itself: see starved): each silent past its
// threshold (suspicion.go) is purged from the members bucket, and its
// death proposed when it owns connections in the tree, at most once per
// timeout each. A node watching every heartbeat (the smallest id) also
// judges the nodes that own connections and are no members. A node back
// after it lost NATS times every node from its return. Only watch calls
// it.
func (f *Fleet) accuse() {
	now := time.Now()
	// The end of this judgement, proposals included, is the watch's
	// last tick: the time it spends proposing is not a lateness.
	defer func() {
		f.mu.Lock()
		f.prevTick = time.Now()
		f.mu.Unlock()
	}()
	if f.nc.Status() != nats.CONNECTED {
		f.offline = true
		return // this node's own silence is no news about the others
	}
	owners := f.tree.Nodes()
	f.mu.Lock()
	prev := f.prevTick
	if !f.watching {
		f.mu.Unlock()
		return // blind: the silence is this node's
	}
	back := f.offline
	f.offline = false
	if f.watchAll {
		want := make(map[string]bool)
		for _, n := range owners {
			if n != f.node && !f.member[n] {
				want[n] = true
			}
		}
		for n := range f.sus {
			if !f.member[n] && !want[n] {
				delete(f.sus, n)
			}
		}
		f.suspect(want, now, false)
	}
	if back {
		// Back after an outage: what this node saw of the others is old
		// news; they get a whole timeout from now to be heard again.
		for _, s := range f.sus {
			s.resume(now)
		}
		f.ownHeard = now
	}
	if late, why := starved(now, f.ownHeard, prev, f.cfg.Heartbeat/3, f.tick()); late {
		if now.Sub(f.lateSaid) > f.cfg.Heartbeat {
			f.lateSaid = now
			f.log.Warn("fleet: this node is too late to judge the others' silence", "why", why,
				"own_heartbeat", now.Sub(f.ownHeard).Round(time.Millisecond), "tick", now.Sub(prev).Round(time.Millisecond))
		}
		f.mu.Unlock()
		return
	}
	type silent struct {
		node              string
		silence, expected time.Duration
		phi               float64
	}
	var found []silent
	for n, s := range f.sus {
		if n == f.node || f.tree.Dead(n) || !s.dead(now) || now.Sub(f.accused[n]) <= f.cfg.Heartbeat {
			continue
		}
		f.accused[n] = now
		found = append(found, silent{n, s.silence(now), s.threshold(), s.phi(now)})
	}
	f.mu.Unlock()
	for _, s := range found {
		owns := slices.Contains(owners, s.node)
		msg := "fleet: node silent, purging its member key"
		if owns {
			msg = "fleet: node silent, proposing its death"
		}
		f.log.Info(msg, "node", s.node, "silent", s.silence.Round(time.Millisecond),
			"threshold", s.expected.Round(time.Millisecond), "phi", fmt.Sprintf("%.1f", s.phi))
		ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
		if owns {
			if err := f.tree.ProposeDead(ctx, s.node); err != nil {
				f.log.Warn("fleet: proposing a death", "node", s.node, "err", err)
			}
		}
		if err := f.dismiss(ctx, s.node); err != nil {
			f.log.Warn("fleet: purging a member key", "node", s.node, "err", err)
		}
		cancel()
	}
}
