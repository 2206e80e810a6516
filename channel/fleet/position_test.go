package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// recorder is an Observer that keeps what it was told.
type recorder struct {
	mu       sync.Mutex
	applied  []int // entries of each message applied
	took     []time.Duration
	proposed []int // entries of each batch stored
}

func (r *recorder) Applied(entries int, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applied = append(r.applied, entries)
	r.took = append(r.took, took)
}

func (r *recorder) Proposed(entries int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.proposed = append(r.proposed, entries)
}

// sums returns the messages applied, their entries, and the entries of
// the batches stored.
func (r *recorder) sums() (messages, applied, proposed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.applied {
		applied += n
	}
	for _, n := range r.proposed {
		proposed += n
	}
	return len(r.applied), applied, proposed
}

// positionLag: a node's Position and Observer follow the log: writes move
// the applied and last positions of every node alike, the writer's
// batches and every node's applied messages are observed with their
// entries; a node whose consumer is held lags (last above applied, by the
// timer's request since its consumer delivers nothing) and, once it has
// known of an entry it did not apply for MaxLag, is behind and not ready;
// released, it lags by 0, is not behind and is ready again.
func positionLag(t *testing.T, cl *natstest.Cluster) {
	// A long heartbeat: no node is taken for dead on a loaded machine.
	cfg := Config{Name: natsName(t.Name()), Heartbeat: time.Minute}
	var ns []*node
	var recs []*recorder
	for range 2 {
		r := &recorder{}
		c := cfg
		c.Observer = r
		ns = append(ns, startNode(t, cl, c))
		recs = append(recs, r)
	}
	w, lag := ns[0], ns[1]
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	wc := connect(t, w, "")
	const writes = 10
	put := func(i int) {
		t.Helper()
		if r := wc.do(fmt.Sprintf(`{"method":"PUT","resource":"/pos/x%d","entity":{},"persistent":true}`, i)); code(r) != "success" {
			t.Fatal(r)
		}
	}
	m0, a0, p0 := recs[0].sums()
	for i := range writes {
		put(i)
	}
	// The writer applied its own writes before they were answered, and
	// is told of each message applied right after the apply (which the
	// answer may pass: a CI run saw 9 of 10); it observes the last batch
	// stored once its acknowledgement is in, which may come after the
	// apply (a write is answered once applied).
	m1, a1, p1 := recs[0].sums()
	for deadline := time.Now().Add(10 * time.Second); (p1-p0 < writes || a1-a0 < writes) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		m1, a1, p1 = recs[0].sums()
	}
	if p1-p0 < writes || a1-a0 < writes || m1-m0 < 1 || m1-m0 > a1-a0 {
		t.Fatalf("writer observed %d batches of %d entries stored, %d messages of %d entries applied; want %d entries at least", len(recs[0].proposed), p1-p0, m1-m0, a1-a0, writes)
	}
	applied, last := w.f.Position()
	if applied != w.tree.Applied() || last != applied {
		t.Fatalf("writer at %d of %d after its writes, tree at %d", applied, last, w.tree.Applied())
	}
	if err := lag.tree.WaitApplied(ctx, applied); err != nil {
		t.Fatal(err)
	}
	if a, l := lag.f.Position(); a != applied || l != applied {
		t.Fatalf("other node at %d of %d, want %d of %d", a, l, applied, applied)
	}

	h := make(chan struct{})
	lag.f.held.Store(&h)
	held := lag.tree.Applied()
	for i := range writes {
		put(writes + i)
	}
	end, _ := w.f.Position()
	// Awaited: the held node learns the stream's last position.
	for {
		a, l := lag.f.Position()
		if a == held && l == end {
			break
		}
		if a != held {
			t.Fatalf("the held node applied %d, held at %d", a, held)
		}
		if ctx.Err() != nil {
			t.Fatalf("the held node knows the log's last position as %d, want %d", l, end)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Ready's barrier appends a read mark after end; the held node knew
	// of end, unapplied, and is behind once it has for MaxLag. Behind
	// says the same without asking NATS.
	var behind *BehindError
	for {
		err := lag.f.Ready(ctx)
		if errors.As(err, &behind) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("held node's readiness: %v, want a BehindError", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if behind.Applied != held || behind.Last < end || behind.Lag <= behind.MaxLag || behind.MaxLag != DefaultMaxLag {
		t.Fatalf("held node's readiness: %+v, want applied %d of N >= %d, lag above %s", behind, held, end, DefaultMaxLag)
	}
	if !strings.HasPrefix(behind.Error(), fmt.Sprintf("fleet: behind the log (applied %d of %d; ", held, behind.Last)) {
		t.Fatalf("held node's readiness says %q", behind)
	}
	if err := lag.f.Behind(); !errors.As(err, new(*BehindError)) {
		t.Fatalf("held node's Behind: %v", err)
	}
	mark := behind.Last
	end = mark
	lag.f.held.Store(nil)
	close(h)
	if err := lag.tree.WaitApplied(ctx, end); err != nil {
		t.Fatal(err)
	}
	// Caught up with the log, the read mark after end included.
	for {
		a, l := lag.f.Position()
		if a == l && a >= end {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("released node at %d of %d, want at least %d of as many", a, l, end)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Awaited: ready and not behind (the read mark of Ready is applied
	// within MaxLag, on a loaded machine at the second try perhaps).
	for {
		err := lag.f.Ready(ctx)
		if err == nil {
			err = lag.f.Behind()
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("released node not ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Every message the other node applied was observed, with its entries.
	msgs, entries, _ := recs[1].sums()
	if msgs < int(end-held) || entries < 2*writes {
		t.Fatalf("other node observed %d messages of %d entries applied, want %d messages and %d entries at least", msgs, entries, end-held, 2*writes)
	}
	recs[1].mu.Lock()
	defer recs[1].mu.Unlock()
	for _, d := range recs[1].took {
		if d <= 0 {
			t.Fatalf("an apply took %v", d)
		}
	}
}

// readyDead: a node the others took for dead (its death applied from the
// log, as when it was silent past the heartbeat timeout) reports why it
// is not ready.
func readyDead(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 2, Config{Heartbeat: time.Minute})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := ns[1].f.Ready(ctx); err != nil {
		t.Fatalf("not ready at start: %v", err)
	}
	if err := ns[0].tree.ProposeDead(ctx, ns[1].f.Node()); err != nil {
		t.Fatal(err)
	}
	const want = "fleet: the other nodes took this node for dead (cut off for longer than the heartbeat timeout); it rejoins with a new id"
	for {
		err := ns[1].f.Ready(ctx)
		if err != nil && err.Error() == want {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("readiness of the node taken for dead: %v, want %q", err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := ns[0].f.Ready(ctx); err != nil {
		t.Fatalf("the other node not ready: %v", err)
	}
}
