package channel

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// The delivery path of issue 30, measured in the tree: a NOTIFY with a
// msg_id of about 100 bytes of data, parsed, encoded once and queued to
// every subscriber, whose queue a goroutine of its own drains; the
// publisher's reply is drained too. Each reports, besides the usual per-NOTIFY figures,
// allocations per delivery (allocs/delivery, the whole process's).

var benchNotify = `{"method":"NOTIFY","resource":"%s","msg_id":%d,"data":{"text":"hello, this is a chat line of about a hundred bytes!!"}}`

// benchDrainer drains c on a goroutine of its own until ctx ends,
// counting the frames taken into n.
func benchDrainer(ctx context.Context, c *Client, n *atomic.Int64, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		var buf []Frame
		for {
			var err error
			buf, err = c.Next(ctx, buf)
			n.Add(int64(len(buf)))
			if err != nil {
				return
			}
		}
	}()
}

// benchDelivery connects subs subscribers to each of rooms resources
// and one publisher per room, then runs b.N NOTIFYs, the publishers in
// turn; with oneInFlight each waits until every subscriber took it.
func benchDelivery(b *testing.B, rooms, subs int, oneInFlight bool) {
	tr := newTree(b, nil, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var delivered, replies atomic.Int64
	var wg sync.WaitGroup
	pubs := make([]*Client, rooms)
	msgs := make([][]byte, rooms)
	for r := range rooms {
		res := fmt.Sprintf("/room/%d", r)
		for i := range subs {
			c := connect(b, tr, fmt.Sprintf("s%d-%d", r, i), "")
			c.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"`+res+`"}`))
			if fs, _ := c.TryNext(nil); len(fs) != 0 {
				b.Fatalf("SUBSCRIBE without msg_id answered %s", fs[0].Data)
			}
			benchDrainer(ctx, c, &delivered, &wg)
		}
		pubs[r] = connect(b, tr, fmt.Sprint("p", r), "")
		benchDrainer(ctx, pubs[r], &replies, &wg)
		msgs[r] = fmt.Appendf(nil, benchNotify, res, r)
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		r := i % rooms
		pubs[r].Exec(ctx, msgs[r])
		i++
		if oneInFlight {
			for delivered.Load() < int64(i*subs) {
				runtime.Gosched()
			}
		}
	}
	for delivered.Load() < int64(i*subs) || replies.Load() < int64(i) {
		runtime.Gosched()
	}
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(i*subs), "allocs/delivery")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i*subs), "ns/delivery")
	cancel()
	wg.Wait()
}

// BenchmarkDelivery runs the three loads of issue 30 in the tree: fan-out
// to 1,000 subscribers of one resource; the same with one NOTIFY in
// flight (each waits for all 1,000 deliveries); 1,000 resources with one
// subscriber and one publisher each.
func BenchmarkDelivery(b *testing.B) {
	b.Run("fanout 1000", func(b *testing.B) { benchDelivery(b, 1, 1000, false) })
	b.Run("one in flight to 1000", func(b *testing.B) { benchDelivery(b, 1, 1000, true) })
	b.Run("1000 channels", func(b *testing.B) { benchDelivery(b, 1000, 1, false) })
}
