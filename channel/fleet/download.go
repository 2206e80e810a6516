package fleet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/internal/natsname"
)

// snapIdle bounds the silence of a snapshot's download: it fails once no
// chunk came for that long (or, before the first, since it began). A
// download that receives chunks goes on however long the whole takes: a
// loaded node restoring a large tree (issue 36: 13 MB, at a load average
// of 70 on two cores) is not failed while it progresses.
const snapIdle = 30 * time.Second

// download returns the bytes of the snapshot object name, read chunk by
// chunk from the object store's stream with a pull consumer whose
// requests ask for at most pullBytes at a time: the server never has more
// of the snapshot queued for a node that reads slowly. Its bound is its
// progress, not ctx's deadline: it ends when ctx is canceled or when no
// chunk came for snapIdle. It checks the object's size and digest.
//
// nats.go's ObjectStore.Get pushes the chunks with JetStream's flow
// control (up to 32 MB in flight: all of a 13 MB snapshot queued at the
// server for the node) and bounds the whole download by its context's
// deadline (5 s without one); the download inside retry's attempts was
// bounded by their 2 s each and started over from the first chunk, so a
// loaded node never got its snapshot (issue 36: "fleet: snapshot: context
// deadline exceeded").
func (f *Fleet) download(ctx context.Context, name string) ([]byte, error) {
	var info *jetstream.ObjectInfo
	if err := retry(ctx, func(ctx context.Context) error {
		var err error
		info, err = f.snaps.GetInfo(ctx, name)
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return permanent{err}
		}
		return err
	}); err != nil {
		return nil, err
	}
	want, err := jetstream.DecodeObjectDigest(info.Digest)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", name, err)
	}
	sum := sha256.New()
	if info.Size == 0 {
		return checkObject(name, nil, info, sum, want)
	}
	var cons jetstream.Consumer
	if err := retry(ctx, func(ctx context.Context) error {
		cons, err = f.js.OrderedConsumer(ctx, "OBJ_"+f.snapBucket(), jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{"$O." + f.snapBucket() + ".C." + info.NUID},
		})
		return err
	}); err != nil {
		return nil, err
	}
	it, err := cons.Messages(jetstream.PullMaxBytes(f.pullBytes()), jetstream.PullExpiry(2*time.Second))
	if err != nil {
		return nil, err
	}
	defer it.Stop()
	var last atomic.Int64 // when the last chunk came (or the start), Unix nanoseconds
	last.Store(time.Now().UnixNano())
	var why atomic.Pointer[error]
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTimer(snapIdle)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				if errors.Is(ctx.Err(), context.Canceled) {
					err := ctx.Err()
					why.Store(&err)
					it.Stop()
					return
				}
				// ctx's deadline passed: progress alone bounds the
				// download from now on.
				ctx = context.Background()
			case <-t.C:
				idle := time.Since(time.Unix(0, last.Load()))
				if idle >= snapIdle {
					err := fmt.Errorf("no chunk for %s", snapIdle)
					why.Store(&err)
					it.Stop()
					return
				}
				t.Reset(snapIdle - idle)
			}
		}
	}()
	data := make([]byte, 0, min(info.Size, 1<<30))
	for chunks := uint32(0); ; {
		msg, err := it.Next()
		if err != nil {
			if w := why.Load(); w != nil {
				err = *w
			}
			return nil, fmt.Errorf("snapshot %s: downloading after %d of %d bytes: %w", name, len(data), info.Size, err)
		}
		last.Store(time.Now().UnixNano())
		data = append(data, msg.Data()...)
		sum.Write(msg.Data())
		chunks++
		md, err := msg.Metadata()
		if err != nil {
			return nil, err
		}
		if md.NumPending == 0 || chunks >= info.Chunks {
			return checkObject(name, data, info, sum, want)
		}
	}
}

// checkObject returns data once it has the size and digest info gives.
func checkObject(name string, data []byte, info *jetstream.ObjectInfo, sum hash.Hash, want []byte) ([]byte, error) {
	if uint64(len(data)) != info.Size {
		return nil, fmt.Errorf("snapshot %s: %d bytes downloaded, the object has %d", name, len(data), info.Size)
	}
	if !bytes.Equal(sum.Sum(nil), want) {
		return nil, fmt.Errorf("snapshot %s: %w", name, jetstream.ErrDigestMismatch)
	}
	return data, nil
}

// snapBucket returns the name of the fleet's object store of snapshots.
func (f *Fleet) snapBucket() string { return natsname.Of(f.cfg.Name, "SNAP") }

// pullBytes is the most bytes this node's pull consumer of a snapshot's
// chunks has requested and not received at once: twice the
// largest message NATS takes (max_payload, 1 MB by default). A request
// goes out once half of it was received, so that each asks for at least
// a largest message, and the server never has more than this queued for
// the node, whatever the node's other work leaves it of the processor.
func (f *Fleet) pullBytes() int {
	mp := int(f.nc.MaxPayload())
	if mp <= 0 {
		mp = 1 << 20
	}
	return 2 * mp
}
