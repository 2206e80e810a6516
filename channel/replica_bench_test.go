package channel

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
)

// loopLog is the log of a fleet of one node, in memory: it holds the
// entries proposed in their order and hands them back to its tree's
// Apply, each run of proposals as one batch, from one goroutine, as the
// backend does with the log's messages. It measures the tree's own work
// on a fleet write, without a network or a server.
type loopLog struct {
	t    *Tree
	node string

	mu      sync.Mutex
	pending []loopProposal
	wake    chan struct{}
	quit    chan struct{}
	done    chan struct{}
}

// loopProposal is an entry proposed to a loopLog and its callback.
type loopProposal struct {
	entry  []byte
	stored func(error)
}

// newLoopLog returns a loopLog for the node id node; start it with
// start once its tree exists.
func newLoopLog(node string) *loopLog {
	return &loopLog{node: node, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
}

// start applies the proposals to t until stop.
func (l *loopLog) start(t *Tree) {
	l.t = t
	go func() {
		defer close(l.done)
		var pos, n uint64
		for {
			select {
			case <-l.wake:
			case <-l.quit:
				return
			}
			l.mu.Lock()
			ps := l.pending
			l.pending = nil
			l.mu.Unlock()
			if len(ps) == 0 {
				continue
			}
			b := Batch{Node: l.node, Entries: make([][]byte, len(ps))}
			for i, p := range ps {
				b.Entries[i] = p.entry
			}
			pos++
			n++
			b.N = n
			for _, p := range ps {
				p.stored(nil)
			}
			t.Apply(pos, b)
		}
	}()
}

// stop ends the goroutine of start.
func (l *loopLog) stop() {
	close(l.quit)
	<-l.done
}

func (l *loopLog) Propose(_ context.Context, entry []byte, stored func(error)) {
	l.mu.Lock()
	l.pending = append(l.pending, loopProposal{entry, stored})
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *loopLog) Barrier(context.Context) (uint64, error) { return l.t.Applied(), nil }
func (l *loopLog) Report(string, []Count)                  {}
func (l *loopLog) Gather(context.Context, string) int      { return 0 }
func (l *loopLog) Reaches(context.Context, string) bool    { return false }

// newLoopTree returns the tree of a fleet of one node on a loopLog.
func newLoopTree(tb testing.TB) *Tree {
	l := newLoopLog("n1")
	tr := newTree(tb, nil, Options{Log: l, Node: "n1"})
	l.start(tr)
	tb.Cleanup(l.stop) // runs before the tree's Close, registered earlier
	return tr
}

// BenchmarkFleetWrite measures what the tree of a fleet's node does per
// write of one of its connections, from the message to its reply, the
// log's transport left out (loopLog): a PUT with a msg_id creating a new
// resource under the connection's own parent, nobody subscribed,
// transient and persistent, one write under way at a time. Its
// allocations are those of the proposing node: the entry, the proposal,
// the apply.
func BenchmarkFleetWrite(b *testing.B) {
	for _, mode := range []string{"transient", "persistent"} {
		b.Run(mode, func(b *testing.B) {
			extra := ""
			if mode == "persistent" {
				extra = `,"persistent":true`
			}
			tr := newLoopTree(b)
			c := connect(b, tr, "c", "")
			msgs := make([][]byte, b.N)
			for i := range msgs {
				msgs[i] = fmt.Appendf(nil, `{"method":"PUT","resource":"/bench/w/c1/%d","msg_id":%d%s,"entity":{"n":%d}}`, i, i, extra, i)
			}
			ctx := context.Background()
			var buf []Frame
			b.ReportAllocs()
			b.ResetTimer()
			for _, m := range msgs {
				c.Exec(ctx, m)
				var err error
				if buf, err = c.Next(ctx, buf); err != nil {
					b.Fatal(err)
				}
				if len(buf) != 1 || !bytes.HasSuffix(buf[0].Data, []byte(`,"code":"success"}`)) {
					b.Fatalf("reply %v to %s", buf, m)
				}
			}
		})
	}
}
