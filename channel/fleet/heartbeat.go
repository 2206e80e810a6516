package fleet

import (
	"context"
	"encoding/json"
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
