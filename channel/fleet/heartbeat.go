package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

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
// of those silent for longer than the timeout; it also sweeps the
// tallies of NOTIFY counts nobody gathered.
func (f *Fleet) watch() {
	defer f.done.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	updates := make(chan beat, 64)
	go f.follow(ctx, updates)
	tick := time.NewTicker(max(f.cfg.Heartbeat/10, 50*time.Millisecond))
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
			f.mu.Lock()
			f.seen[b.Node] = time.Now()
			f.applied[b.Node] = b.Applied
			f.mu.Unlock()
			f.compare(b)
		case <-tick.C:
			f.accuse()
		}
	}
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

// follow sends every heartbeat written to updates, watching the bucket
// again whenever the watch ends or goes stale: this node's own heartbeat
// comes through it every third of the timeout, so a watch silent for two
// thirds of it lost its consumer (NATS restarted under it). A watch
// begins with the last value of each key, which says nothing about the
// present: after the first watch those are skipped.
func (f *Fleet) follow(ctx context.Context, updates chan<- beat) {
	stale := f.cfg.Heartbeat * 2 / 3
	for first := true; ctx.Err() == nil; first = false {
		wctx, cancel := context.WithCancel(ctx)
		w, err := f.watch1(wctx, stale)
		if err != nil {
			cancel()
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		f.watchUntilStale(ctx, w, updates, stale, first)
		_ = w.Stop()
		cancel()
	}
}

// watch1 starts a watch of the heartbeats, which lives as long as ctx,
// giving up after limit (starting it may hang while NATS restarts).
func (f *Fleet) watch1(ctx context.Context, limit time.Duration) (jetstream.KeyWatcher, error) {
	type started struct {
		w   jetstream.KeyWatcher
		err error
	}
	done := make(chan started, 1)
	go func() {
		w, err := f.nodes.WatchAll(ctx)
		done <- started{w, err}
	}()
	select {
	case s := <-done:
		return s.w, s.err
	case <-time.After(limit):
		return nil, errors.New("fleet: no watch of the heartbeats in time")
	}
}

// watchUntilStale sends the heartbeats of w to updates until w ends, ctx
// ends or nothing comes for stale; old ones (before the watch's marker of
// the present) only when first.
func (f *Fleet) watchUntilStale(ctx context.Context, w jetstream.KeyWatcher, updates chan<- beat, stale time.Duration, first bool) {
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
			return
		case <-timer.C:
			f.log.Warn("fleet: the watch of heartbeats went silent; watching again")
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			timer.Reset(stale)
			if e == nil {
				present = true
				f.mu.Lock()
				f.watching, f.watchSince = true, time.Now()
				f.mu.Unlock()
				continue
			}
			var b beat
			if !present && !first || e.Operation() != jetstream.KeyValuePut || json.Unmarshal(e.Value(), &b) != nil || b.Node != e.Key() {
				continue
			}
			select {
			case updates <- b:
			case <-ctx.Done():
				return
			}
		}
	}
}

// accuse proposes the death of every node that owns connections in the
// tree and was silent for longer than the timeout (a node never seen is
// timed from this node's start, every node from this node's return after
// it lost NATS and from the start of the current watch of heartbeats,
// none while that watch is down), at most once per timeout each. Only
// watch calls it.
func (f *Fleet) accuse() {
	now := time.Now()
	if f.nc.Status() != nats.CONNECTED {
		f.offline = true
		return // this node's own silence is no news about the others
	}
	if f.offline {
		// Back after an outage: what this node saw of the others is old
		// news; they get a whole timeout from now to be heard again.
		f.offline = false
		f.back = now
	}
	for _, n := range f.tree.Nodes() {
		f.mu.Lock()
		last, ok := f.seen[n]
		if !ok {
			last = f.started
		}
		if !f.watching {
			f.mu.Unlock()
			return // blind: the silence is this node's
		}
		if last.Before(f.back) {
			last = f.back
		}
		if last.Before(f.watchSince) {
			last = f.watchSince
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
