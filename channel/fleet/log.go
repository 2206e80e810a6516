package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/channel"
)

// consume feeds the log to the tree in order, one entry after the other,
// starting over after the last one applied whenever the consumer ends.
func (f *Fleet) consume() {
	defer f.done.Done()
	for {
		next := f.tree.Applied() + 1
		err := f.consumeFrom(next)
		if h := f.held.Load(); errors.Is(err, errHeld) && h != nil {
			select {
			case <-f.stop:
				return
			case <-*h:
			}
			continue
		}
		select {
		case <-f.stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
		var gap *gapError
		switch {
		case errors.As(err, &gap):
			f.rebuild(gap)
		case err != nil:
			f.log.Warn("fleet: log consumer", "err", err, "next", next)
		}
	}
}

// errHeld ends the consumer while held is set.
var errHeld = errors.New("fleet: the consumer is held")

// gapError is the log's loss of entries this node had not applied: they
// were trimmed below the newest snapshot before it applied them.
type gapError struct{ from, to uint64 }

func (e *gapError) Error() string {
	return fmt.Sprintf("fleet: the log lost entries %d to %d before this node applied them; rebuilding from the snapshot", e.from, e.to)
}

// rebuild replaces the tree's state by the newest snapshot, after a gap
// in the log: the tree ends its clients (close code 1012) and the
// consumer goes on from the snapshot's position. The node stays not ready
// (the gap) until the snapshot is in; then until it caught up with the
// log, as after its start. A snapshot older than the gap leaves the gap
// in place, and the consumer tries again.
func (f *Fleet) rebuild(gap *gapError) {
	ctx, cancel := context.WithTimeout(f.life, 30*time.Second)
	defer cancel()
	// The snapshot's name first: one too old is not downloaded.
	var data []byte
	ref, err := f.newest(ctx)
	if err == nil && ref.rev != 0 && ref.pos >= gap.to {
		var spos uint64
		data, spos, err = f.newestSnapshot(ctx)
		ref.pos = spos
	}
	switch {
	case err != nil:
	case ref.rev != 0 && ref.pos < gap.to:
		err = fmt.Errorf("the newest snapshot (%d) is older than the gap (%d to %d)", ref.pos, gap.from, gap.to)
	case data == nil:
		err = errors.New("no snapshot")
	}
	if err != nil {
		f.log.Warn("fleet: rebuilding after a gap in the log", "err", err)
		return
	}
	pos, err := f.tree.Reset(bytes.NewReader(data))
	if err != nil {
		f.log.Error("fleet: rebuilding after a gap in the log", "err", err)
		return
	}
	f.snapPos, f.snapAt = pos, time.Now()
	f.mu.Lock()
	f.gap = nil
	f.mu.Unlock()
	f.log.Info("fleet: tree rebuilt from the snapshot after a gap in the log", "applied", pos, "bytes", len(data))
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
	// Pull requests that expire after 2 s, with heartbeats every second:
	// by default (30 s, 5 s heartbeats) a first request lost while a new
	// stream or consumer settles in the cluster left the node applying
	// nothing for about 10 s, its writes answering unavailable though the
	// log held them (seen in TestFleet/CreateRace and at a node's start).
	//
	// The pulls keep nats.go's default size (500 messages): a pull bounded
	// by bytes (PullMaxBytes) left the consumer of one node of
	// tests/jepsen's TestShort delivering nothing for a minute after its
	// NATS server was killed, with no error, while the log went on
	// (docs/fleet.md#overload).
	it, err := cons.Messages(jetstream.PullExpiry(2 * time.Second))
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
		f.sawLast(pos + md.NumPending)
		f.delivered.Store(time.Now().UnixNano())
		if f.held.Load() != nil {
			return errHeld
		}
		switch applied := f.tree.Applied(); {
		case pos <= applied:
			continue // delivered again after a reset
		case pos > applied+1:
			gap := &gapError{applied + 1, pos - 1}
			f.mu.Lock()
			f.gap = gap
			f.mu.Unlock()
			f.log.Error("fleet: gap in the log", "applied", applied, "next", pos)
			return gap
		}
		if isReadMark(msg.Data()) {
			// Changes nothing; applied, it answers the reads waiting for it.
			f.tree.Apply(pos, channel.Batch{})
			f.markApplied(pos)
			f.maybeSnapshot(pos)
			continue
		}
		b, err := decodeBatch(msg.Data())
		if err != nil {
			f.log.Warn("fleet: a message of the log is no batch of this format; skipped", "pos", pos, "err", err)
		}
		start := time.Now()
		f.tree.Apply(pos, b)
		f.cfg.Observer.Applied(len(b.Entries), time.Since(start))
		f.markApplied(pos)
		f.maybeSnapshot(pos)
	}
}
