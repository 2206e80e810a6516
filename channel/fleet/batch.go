package fleet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/channel"
)

// The log is fed by group commit (docs/fleet.md#6-entries-snapshot-trimming-format):
// a node keeps one queue of the entries its tree proposes, in arrival
// order, and has at most one message of the log in flight; what arrives
// meanwhile goes together in the next message, sent when the previous one
// is acknowledged, or sooner when it reaches the size cap. There is no
// timer: an idle node sends its next entry at once.

// Bounds of the queue of proposals.
const (
	// batchTimeout bounds the attempts at storing one batch, as the
	// tree's proposals are bounded.
	batchTimeout = 5 * time.Second
	// maxQueued bounds the bytes of the entries waiting for a batch;
	// beyond it Propose answers unavailable at once.
	maxQueued = 64 << 20
	// headerRoom is what a batch leaves of the server's max_payload for
	// the message's headers (Nats-Msg-Id).
	headerRoom = 1024
)

// batchMagic begins every message of the log.
const batchMagic = "reso-batch "

// proposal is one entry waiting for its batch to be stored.
type proposal struct {
	ctx    context.Context
	data   []byte
	stored func(error) // called once; must not block
}

// outbox is the queue of this node's proposals and the number of its
// last batch.
type outbox struct {
	mu     sync.Mutex
	queue  []*proposal
	bytes  int
	wake   chan struct{} // signalled when the queue gets an entry
	n      uint64        // the last batch sent; only the sender touches it
	maxLen int           // the size cap of a batch's message
	closed bool          // the node stops: no more proposals
}

// Propose implements [channel.Log]: entry joins this node's queue and goes
// to the log in the next batch. stored is called once the batch is
// stored, or with an error when the batch could not be stored within
// batchTimeout, ctx ended before it left, or the node stops (the log
// then may or may not hold the entry).
func (f *Fleet) Propose(ctx context.Context, entry []byte, stored func(error)) {
	p := &proposal{ctx: ctx, data: entry, stored: stored}
	o := &f.out
	o.mu.Lock()
	switch {
	case o.closed:
		o.mu.Unlock()
		stored(fmt.Errorf("%w: the node stops", channel.ErrUnavailable))
		return
	case o.bytes+len(entry) > maxQueued:
		n := o.bytes
		o.mu.Unlock()
		stored(fmt.Errorf("%w: %d bytes of entries already wait for the log", channel.ErrUnavailable, n))
		return
	}
	o.queue = append(o.queue, p)
	o.bytes += len(entry)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// take removes from the queue the proposals of the next batch: from the
// front, as many as fit in the size cap (one at least). A proposal whose
// proposer gave up is dropped with its error.
func (o *outbox) take() []*proposal {
	o.mu.Lock()
	defer o.mu.Unlock()
	size, i := len(batchMagic)+40, 0
	var ps []*proposal
	for ; i < len(o.queue); i++ {
		p := o.queue[i]
		if err := p.ctx.Err(); err != nil {
			p.stored(fmt.Errorf("%w: %v", channel.ErrUnavailable, err))
			o.bytes -= len(p.data)
			continue
		}
		n := len(p.data) + binary.MaxVarintLen32
		if len(ps) > 0 && size+n > o.maxLen {
			break
		}
		size += n
		ps = append(ps, p)
		o.bytes -= len(p.data)
	}
	clear(o.queue[:i])
	o.queue = o.queue[i:]
	if len(o.queue) == 0 {
		o.queue = nil // let the backing array go
	}
	return ps
}

// close fails the proposals still queued and every later one.
func (o *outbox) close() {
	o.mu.Lock()
	ps := o.queue
	o.queue, o.bytes, o.closed = nil, 0, true
	o.mu.Unlock()
	for _, p := range ps {
		p.stored(fmt.Errorf("%w: the node stops", channel.ErrUnavailable))
	}
}

// send stores the batches of the queue one after the other until Close.
func (f *Fleet) send() {
	defer f.done.Done()
	for {
		ps := f.out.take()
		if len(ps) == 0 {
			select {
			case <-f.stop:
				f.out.close()
				return
			case <-f.out.wake:
			}
			continue
		}
		err := f.publish(ps)
		for _, p := range ps {
			p.stored(err)
		}
	}
}

// publish stores one batch, retrying with the same message id (node id
// and batch number) until it is acknowledged or batchTimeout passes.
func (f *Fleet) publish(ps []*proposal) error {
	f.out.n++
	entries := make([][]byte, len(ps))
	for i, p := range ps {
		entries[i] = p.data
	}
	data := encodeBatch(f.node, f.out.n, entries)
	if len(data) > f.out.maxLen {
		return fmt.Errorf("%w: an entry of %d bytes is over the log's message size", channel.ErrUnavailable, len(ps[0].data))
	}
	id := f.node + "-" + strconv.FormatUint(f.out.n, 10)
	ctx, cancel := context.WithTimeout(f.life, batchTimeout)
	defer cancel()
	err := retry(ctx, func(actx context.Context) error {
		_, err := f.js.Publish(actx, f.subject, data, jetstream.WithMsgID(id))
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: %v", channel.ErrUnavailable, err)
	}
	f.cfg.Observer.Proposed(len(ps))
	return nil
}

// encodeBatch returns the message of the log carrying entries as node's
// batch n: "reso-batch <node> <n>\n", then each entry as its length
// (uvarint) and its bytes.
func encodeBatch(node string, n uint64, entries [][]byte) []byte {
	size := len(batchMagic) + len(node) + 22
	for _, e := range entries {
		size += binary.MaxVarintLen32 + len(e)
	}
	b := make([]byte, 0, size)
	b = append(b, batchMagic...)
	b = append(b, node...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, n, 10)
	b = append(b, '\n')
	for _, e := range entries {
		b = binary.AppendUvarint(b, uint64(len(e)))
		b = append(b, e...)
	}
	return b
}

// errBatch is returned for a message of the log that is not a batch.
var errBatch = errors.New("fleet: not a batch of this format")

// decodeBatch reads a message written by encodeBatch; the entries are
// slices of data.
func decodeBatch(data []byte) (channel.Batch, error) {
	var b channel.Batch
	rest, ok := bytes.CutPrefix(data, []byte(batchMagic))
	if !ok {
		return b, errBatch
	}
	i := bytes.IndexByte(rest, '\n')
	if i < 0 {
		return b, errBatch
	}
	node, num, ok := bytes.Cut(rest[:i], []byte{' '})
	n, err := strconv.ParseUint(string(num), 10, 64)
	if !ok || len(node) == 0 || err != nil || n == 0 {
		return b, errBatch
	}
	rest = rest[i+1:]
	var entries [][]byte
	for len(rest) > 0 {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l > uint64(len(rest)-k) {
			return b, errBatch
		}
		entries = append(entries, rest[k:k+int(l)])
		rest = rest[k+int(l):]
	}
	return channel.Batch{Node: string(node), N: n, Entries: entries}, nil
}
