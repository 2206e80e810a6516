package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/channel"
)

// snapKey is the key of the meta bucket that names the newest snapshot:
// the object "tree-<position>-<node>" holding it.
const snapKey = "snapshot"

// snapName returns the object name of node's snapshot at pos: two nodes
// taking one at the same position never touch each other's.
func snapName(pos uint64, node string) string {
	return "tree-" + strconv.FormatUint(pos, 10) + "-" + node
}

// snapPos returns the position in a snapshot's object name.
func snapPos(name string) (uint64, error) {
	parts := strings.Split(name, "-")
	if len(parts) != 3 || parts[0] != "tree" {
		return 0, fmt.Errorf("the snapshot key holds %q", name)
	}
	return strconv.ParseUint(parts[1], 10, 64)
}

// restore builds the tree from the newest snapshot, if there is one, and
// returns the position of the log it covers (0 without one).
func (f *Fleet) restore(ctx context.Context) (uint64, error) {
	data, _, err := f.newestSnapshot(ctx)
	if err != nil || data == nil {
		return 0, err
	}
	pos, err := f.tree.Restore(bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	f.snapPos = pos
	f.log.Info("fleet: tree restored from the snapshot", "applied", pos, "bytes", len(data))
	return pos, nil
}

// newestSnapshot returns the newest snapshot's bytes, nil without one,
// and the position its name gives. ctx bounds the questions to JetStream;
// the download goes on past its deadline while chunks come (download).
func (f *Fleet) newestSnapshot(ctx context.Context) ([]byte, uint64, error) {
	for {
		var name string
		var pos uint64
		err := retry(ctx, func(ctx context.Context) error {
			e, err := f.meta.Get(ctx, snapKey)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			if pos, err = snapPos(string(e.Value())); err != nil {
				return permanent{err}
			}
			name = string(e.Value())
			return nil
		})
		if err != nil || name == "" {
			return nil, 0, err
		}
		data, err := f.download(ctx, name)
		if err == nil {
			return data, pos, nil
		}
		// A newer snapshot may have replaced this one meanwhile (its
		// object deleted): ask again for the newest, while ctx lasts.
		f.log.Warn("fleet: snapshot", "name", name, "err", err)
		select {
		case <-ctx.Done():
			return nil, 0, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// maybeSnapshot is called by the consumer after it applied the entry at
// pos. A snapshot is due when at least SnapshotEvery entries and
// SnapshotInterval have passed since this node's last one (or its start),
// and this node is the live node with the smallest id. The tree is then
// frozen here, between two applies, so that the snapshot is the state at
// exactly pos; apply waits for that copy only, into room a goroutine
// prepared beside it (the first time a snapshot is due, the consumer
// starts that goroutine and freezes at a later entry). The encoding,
// storing and trimming run in the background, one snapshot at a time.
func (f *Fleet) maybeSnapshot(pos uint64) {
	if !f.due(pos, time.Now()) || !f.leads() {
		return
	}
	f.mu.Lock()
	room := f.room
	switch {
	case f.snapping:
		f.mu.Unlock()
		return
	case room == nil:
		if !f.preparing {
			f.preparing = true
			f.done.Add(1)
			go func() {
				defer f.done.Done()
				r := f.tree.PrepareFreeze()
				f.mu.Lock()
				f.room, f.preparing = r, false
				f.mu.Unlock()
			}()
		}
		f.mu.Unlock()
		return
	}
	f.room, f.snapping = nil, true
	f.mu.Unlock()
	frozen := f.tree.Freeze(room)
	f.snapPos, f.snapAt = frozen.Pos(), time.Now()
	f.done.Add(1)
	go func() {
		defer f.done.Done()
		defer func() {
			f.mu.Lock()
			f.snapping = false
			f.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := f.snapshot(ctx, frozen); err != nil {
			f.log.Warn("fleet: snapshot", "err", err)
		}
	}()
}

// due reports whether enough entries and time passed since this node's
// last snapshot for another after the entry at pos, at now.
func (f *Fleet) due(pos uint64, now time.Time) bool {
	return pos >= f.snapPos+uint64(f.cfg.SnapshotEvery) && now.Sub(f.snapAt) >= f.cfg.SnapshotInterval
}

// leads reports whether this node has the smallest id of the live nodes
// (once it has seen its own heartbeat, so that it has seen the others').
func (f *Fleet) leads() bool {
	self := false
	for _, n := range f.Live() {
		if n < f.node {
			return false
		}
		self = self || n == f.node
	}
	return self
}

// snapshot stores the frozen state of the tree in the object store and
// trims the log below the snapshot, Keep entries of margin left, and never
// past an entry a live node has yet to apply.
func (f *Fleet) snapshot(ctx context.Context, frozen *channel.Frozen) error {
	var b bytes.Buffer
	if _, err := frozen.WriteTo(&b); err != nil {
		return err
	}
	pos := frozen.Pos()
	name := snapName(pos, f.node)
	if _, err := f.snaps.PutBytes(ctx, name, b.Bytes()); err != nil {
		return fmt.Errorf("storing: %w", err)
	}
	// The newest snapshot wins: a node that took an older one meanwhile
	// does not replace it (compare-and-set on the key).
	old, err := f.newest(ctx)
	if err != nil {
		return err
	}
	if old.pos >= pos {
		_ = f.snaps.Delete(ctx, name)
		return nil
	}
	v := []byte(name)
	if old.rev == 0 {
		_, err = f.meta.Create(ctx, snapKey, v)
	} else {
		_, err = f.meta.Update(ctx, snapKey, v, old.rev)
	}
	if err != nil {
		// Another node named a snapshot meanwhile, or the answer was
		// lost: keep the object (the key may name it) and do not trim.
		return fmt.Errorf("naming the snapshot: %w", err)
	}
	if old.rev != 0 {
		_ = f.snaps.Delete(ctx, old.name)
	}
	upto := pos
	f.mu.Lock()
	for n, a := range f.applied {
		if time.Since(f.seen[n]) <= f.cfg.Heartbeat {
			upto = min(upto, a)
		}
	}
	f.mu.Unlock()
	if upto <= uint64(f.cfg.Keep) {
		return nil
	}
	if err := f.stream.Purge(ctx, jetstream.WithPurgeSequence(upto-uint64(f.cfg.Keep))); err != nil {
		return fmt.Errorf("trimming: %w", err)
	}
	f.log.Info("fleet: snapshot stored, log trimmed", "snapshot", pos, "first", upto-uint64(f.cfg.Keep), "bytes", b.Len())
	return nil
}

// snapRef is the newest snapshot named in the meta bucket; rev 0: none.
type snapRef struct {
	name     string
	pos, rev uint64
}

// newest returns the newest snapshot's position and its key's revision.
func (f *Fleet) newest(ctx context.Context) (snapRef, error) {
	e, err := f.meta.Get(ctx, snapKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return snapRef{}, nil
	}
	if err != nil {
		return snapRef{}, err
	}
	pos, err := snapPos(string(e.Value()))
	if err != nil {
		return snapRef{}, err
	}
	return snapRef{name: string(e.Value()), pos: pos, rev: e.Revision()}, nil
}
