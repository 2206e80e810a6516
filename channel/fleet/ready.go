package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/reso-project/reso/channel"
)

// Ready returns why the node cannot serve now, or nil: NATS unreachable,
// a gap in the log, a diverged tree, the node taken for dead, the log
// without a leader or not answering (a read barrier, bounded by a
// second), or the node behind the log ([Fleet.Behind]) or not applying
// the read barrier's position within Config.MaxLag ("behind") or before
// ctx ends ("catching up"). It returns by the time ctx ends, even while
// the NATS client holds its connection's lock to reconnect.
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
	gap, divergent := f.gap, f.divergent
	f.mu.Unlock()
	if gap != nil {
		return gap
	}
	if divergent != nil {
		return divergent
	}
	if f.TakenForDead() {
		return errors.New("fleet: the other nodes took this node for dead (cut off for longer than the heartbeat timeout); it rejoins with a new id")
	}
	bctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	// The barrier tells the node the log's end even while its consumer
	// delivers nothing. The rule of lag.go then decides, as for the
	// admission of connections: the node must apply the barrier's
	// position within MaxLag of learning it. Ready waits that long for
	// it, within ctx: a node whose consumer delivers nothing (NATS just
	// back, say) is not ready although it learned of the position only
	// now.
	last, err := f.Barrier(bctx)
	switch {
	case err != nil && f.leaderless.Load():
		return errors.New("fleet: the log has no leader (most of its NATS servers down or cut off): it stores no write")
	case err != nil:
		return fmt.Errorf("fleet: the log does not answer: %v", bctx.Err())
	}
	if err := f.Behind(); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, f.cfg.MaxLag)
	defer cancel()
	if err := f.tree.WaitApplied(wctx, last); err != nil {
		if err := f.Behind(); err != nil {
			return err
		}
		return fmt.Errorf("fleet: catching up (applied %d of %d)", f.tree.Applied(), last)
	}
	return nil
}

var (
	_ channel.Log     = (*Fleet)(nil)
	_ channel.Epocher = (*Fleet)(nil)
)
