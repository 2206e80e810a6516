package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/reso-project/reso/channel"
)

// The read barrier goes through the log itself (docs/fleet.md §2): a read
// appends a read mark to the stream and is answered once its node has
// applied the log up to the mark. The mark's position comes from the
// publish's acknowledgement, which JetStream gives only once the stream's
// quorum has stored the message, after every message stored before it:
// every write acknowledged before the read began (its node answered it
// once it applied it, so the log held it) has a lower position. The read
// waits for the entry just before the mark, not for the mark itself,
// which changes nothing: when the node is current it answers as soon as
// the acknowledgement comes. No answer
// of a single server about the stream (a STREAM.INFO from a leader that
// was paused and resumes believing it still leads, or from a replica that
// restarted and lags) can satisfy the barrier: only the quorum's order
// does, as the strong reads of rqlite go through Raft.
//
// The reads waiting at one moment share one mark; up to maxMarks marks
// are in flight at once, so that a read arriving while one is under way
// waits for a mark of its own rather than for that one's end.

// readMagic begins a read mark: "reso-read <node>\n". It changes
// nothing; a node that does not know it (reso before the mark) skips it
// as a message that is no batch.
const readMagic = "reso-read "

// maxMarks bounds the read marks of one node in flight at once.
const maxMarks = 2

// isReadMark reports whether data, a message of the log, is a read mark.
func isReadMark(data []byte) bool { return bytes.HasPrefix(data, []byte(readMagic)) }

// barrierCall is one read mark and the reads that wait for it.
type barrierCall struct {
	done chan struct{}
	pos  uint64
	err  error
}

// Barrier implements [channel.Log]: the position just before a read mark
// appended to the log after the call began. The reads that come while no mark is
// being sent share the next one.
func (f *Fleet) Barrier(ctx context.Context) (uint64, error) {
	f.bmu.Lock()
	c := f.bnext
	if c == nil {
		c = &barrierCall{done: make(chan struct{})}
		f.bnext = c
		go f.mark(c)
	}
	f.bmu.Unlock()
	select {
	case <-c.done:
		return c.pos, c.err
	case <-ctx.Done():
		return 0, fmt.Errorf("%w: %v", channel.ErrUnavailable, ctx.Err())
	}
}

// errNoLeader is the barrier's error while the log has no leader.
var errNoLeader = errors.New("fleet: the log has no leader")

// mark sends the read mark of c once fewer than maxMarks are in flight;
// until then, reads that come join c.
func (f *Fleet) mark(c *barrierCall) {
	defer close(c.done)
	select {
	case f.marking <- struct{}{}:
	case <-f.stop:
		c.err = fmt.Errorf("%w: the node stops", channel.ErrUnavailable)
		f.detach(c)
		return
	}
	defer func() { <-f.marking }()
	f.detach(c)
	ctx, cancel := context.WithTimeout(f.life, barrierTimeout)
	defer cancel()
	err := retry(ctx, func(ctx context.Context) error {
		ack, err := f.js.Publish(ctx, f.subject, f.readMark)
		if err != nil {
			return err
		}
		// Every entry before the mark; the mark itself changes nothing,
		// so the read need not wait for its own delivery.
		c.pos = ack.Sequence - 1
		return nil
	})
	if err != nil {
		f.leaderless.Store(f.noLeader())
		c.err = fmt.Errorf("%w: %v", channel.ErrUnavailable, err)
		return
	}
	f.leaderless.Store(false)
	f.sawLast(c.pos)
}

// detach makes c the last call reads may join.
func (f *Fleet) detach(c *barrierCall) {
	f.bmu.Lock()
	if f.bnext == c {
		f.bnext = nil
	}
	f.bmu.Unlock()
}

// noLeader reports whether the stream says it has no leader now (a
// majority of its servers down or cut off): for Ready's reason, after a
// mark failed.
func (f *Fleet) noLeader() bool {
	ctx, cancel := context.WithTimeout(f.life, attemptTimeout)
	defer cancel()
	info, err := f.stream.Info(ctx)
	return err == nil && info.Cluster != nil && info.Cluster.Leader == ""
}
