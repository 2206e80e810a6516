package fleet

import (
	"context"
	"time"
)

// A node's place in the log, for its metrics (docs/fleet.md#15-running-a-fleet):
// the position it applied, the stream's last position as it last knew
// it, and what passes through it (entries per batch, apply time).

// lastRefresh is how often a node whose consumer delivered nothing for
// that long asks the stream for its last position. While messages
// come, each one carries the stream's pending count, so a busy node
// asks nothing.
const lastRefresh = 2 * time.Second

// Observer is told of the traffic of the log through a node; app feeds
// its Prometheus histograms with it (this package imports no metrics
// library). Its methods are called from the node's consumer and sender
// goroutines and must not block.
type Observer interface {
	// Applied is called after each message of the log was applied to the
	// tree, with its number of entries and the time Apply took.
	Applied(entries int, took time.Duration)
	// Proposed is called after each batch of this node's entries was
	// stored in the log, with its number of entries.
	Proposed(entries int)
}

// noObserver is the Observer of a Config without one.
type noObserver struct{}

func (noObserver) Applied(int, time.Duration) {}
func (noObserver) Proposed(int)               {}

// Position returns the position (stream sequence) of the last message of
// the log this node applied, and the last position of the log it knows
// of: the stream's last sequence as the consumer's pending count, a read
// barrier or, while the consumer delivers nothing, a request every
// lastRefresh said it, and never below applied. last minus applied is
// how far the node lags behind the log.
func (f *Fleet) Position() (applied, last uint64) {
	applied = f.tree.Applied()
	return applied, max(f.last.Load(), applied)
}

// sawLast records that the stream's last position is at least pos, and
// when the node first knew of it (lag.go).
func (f *Fleet) sawLast(pos uint64) {
	for {
		old := f.last.Load()
		if pos <= old {
			return
		}
		if f.last.CompareAndSwap(old, pos) {
			break
		}
	}
	var applied uint64
	if f.tree != nil {
		applied = f.tree.Applied()
	}
	f.lag.learn(pos, applied, time.Now())
}

// refreshLast asks the stream for its last position every lastRefresh
// while the consumer delivered nothing for that long (held, cut off, or
// the log idle), one bounded request at a time, until Close.
func (f *Fleet) refreshLast() {
	defer f.done.Done()
	tick := time.NewTicker(lastRefresh)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-tick.C:
		}
		if time.Since(time.Unix(0, f.delivered.Load())) < lastRefresh {
			continue
		}
		ctx, cancel := context.WithTimeout(f.life, attemptTimeout)
		if info, err := f.stream.Info(ctx); err == nil {
			f.sawLast(info.State.LastSeq)
		}
		cancel()
	}
}

var _ Observer = noObserver{}
