package doors_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/doors"
	"github.com/reso-project/reso/internal/poll"
)

// gatedSink is a sinkSession whose writes, once gated is set, wait for
// open to be closed (or for the write's context to end), counting
// themselves into waiting: a drain held in a write keeps its goroutine.
type gatedSink struct {
	*sinkSession
	gated   *atomic.Bool
	waiting *atomic.Int64
	open    chan struct{}
}

func (s gatedSink) Send(ctx context.Context, m core.Message) error {
	return s.SendBatch(ctx, []core.Message{m})
}

func (s gatedSink) SendBatch(ctx context.Context, ms []core.Message) error {
	if s.gated.Load() {
		s.waiting.Add(1)
		select {
		case <-s.open:
		case <-ctx.Done():
		}
	}
	return s.sinkSession.SendBatch(ctx, ms)
}

// TestDrainPoolShrinks: a burst grows the drain pool (here one NOTIFY to
// sessions whose writes all wait at once, so that each drain holds a
// goroutine of the pool), and once the burst is over the pool's
// goroutines return after the idle timeout (shortened here), so that the
// goroutine count goes back to what it was before the sessions (but for
// the exec pool's few idle goroutines, which stay). Before,
// they waited for work for good: an operator saw a leak.
func TestDrainPoolShrinks(t *testing.T) {
	defer doors.SetDrainIdleTimeout(10 * time.Millisecond)()
	const subscribers = 200
	tr, err := channel.New(t.Context(), nil, channel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	h := &doors.Session{Tree: channelhost.TreeOf(tr)}
	base := runtime.NumGoroutine()

	var delivered, replies, waiting atomic.Int64
	var gated atomic.Bool
	open := make(chan struct{})
	var openOnce sync.Once
	release := func() { openOnce.Do(func() { close(open) }) }
	defer release()
	var wg sync.WaitGroup
	serve := func(s core.Session) {
		wg.Go(func() { _ = h.ServeSession(context.Background(), &core.Request{}, s) })
	}
	var sinks []*sinkSession
	for i := range subscribers {
		s := newSink(fmt.Sprint("s", i), &delivered)
		s.in <- []byte(`{"method":"SUBSCRIBE","resource":"/room","msg_id":1}`)
		serve(gatedSink{s, &gated, &waiting, open})
		sinks = append(sinks, s)
	}
	poll.Until(t, 10*time.Second, "the SUBSCRIBE replies", func() bool { return delivered.Load() == subscribers })
	gated.Store(true)
	pub := newSink("pub", &replies)
	serve(pub)
	pub.in <- []byte(`{"method":"NOTIFY","resource":"/room","msg_id":1,"data":"hello"}`)
	poll.Until(t, 10*time.Second, "every subscriber's drain to wait in its write", func() bool {
		return waiting.Load() == subscribers
	})
	if n := runtime.NumGoroutine(); n < base+subscribers {
		t.Fatalf("%d goroutines with %d drains waiting in a write, %d before the sessions", n, subscribers, base)
	}
	release()
	poll.Until(t, 10*time.Second, "the NOTIFY's deliveries", func() bool { return delivered.Load() == 2*subscribers })
	for _, s := range append(sinks, pub) {
		s.Close(core.CloseNormal, "")
	}
	wg.Wait()
	// The exec pool keeps up to 16 goroutines of its own, for good.
	poll.Until(t, 10*time.Second, fmt.Sprintf("the drain pool to shrink back (%d goroutines before the sessions)", base), func() bool {
		return doors.IdleDrainers() == 0 && runtime.NumGoroutine() <= base+doors.IdleExecers()
	})
}
