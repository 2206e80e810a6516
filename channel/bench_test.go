package channel

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkFanout sends a NOTIFY of about 100 bytes to 1,000 subscribers
// that drain their queues in goroutines, and reports delivered
// notifications per second (the figure of issue 9: 200,000/s): with the
// open rules, and with one group rule on the room ("group:rs", a group
// of 1,000 e-mails that holds every subscriber's), which judges each
// subscriber at each delivery.
func BenchmarkFanout(b *testing.B) {
	b.Run("open", func(b *testing.B) { benchFanout(b, false) })
	b.Run("group rule", func(b *testing.B) { benchFanout(b, true) })
}

func benchFanout(b *testing.B, ruled bool) {
	const subscribers = 1000
	tr := newTree(b, nil, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	identity := func(i int) string { return fmt.Sprintf("user%d@example.com", i) }
	if ruled {
		members := make([]string, subscribers)
		for i := range members {
			members[i] = `"` + identity(i) + `"`
		}
		admin := connect(b, tr, "admin", Admin)
		admin.Exec(ctx, []byte(`{"method":"PUT","resource":"/room/1","persistent":true}`))
		admin.Exec(ctx, []byte(`{"method":"RULES","resource":"/room/1","rules":"group:rs","group":[`+strings.Join(members, ",")+`]}`))
		admin.Disconnect()
	}
	var delivered, gone atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < subscribers; i++ {
		c := connect(b, tr, fmt.Sprint("s", i), identity(i))
		c.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/room/1"}`))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []Frame
			for {
				var err error
				buf, err = c.Next(ctx, buf)
				delivered.Add(int64(len(buf)))
				if err != nil {
					if ctx.Err() == nil {
						gone.Add(1)
					}
					return
				}
			}
		}()
	}
	sender := connect(b, tr, "sender", Admin)
	msg := []byte(`{"method":"NOTIFY","resource":"/room/1","data":{"text":"hello, this is a chat line of about a hundred bytes"}}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sender.Exec(ctx, msg)
	}
	want := int64(b.N) * subscribers
	for delivered.Load() < want && gone.Load() == 0 {
		runtime.Gosched() // the drainers finish the work being timed
	}
	b.StopTimer()
	cancel()
	wg.Wait()
	b.ReportMetric(float64(delivered.Load())/b.Elapsed().Seconds(), "msgs/s")
	if g := gone.Load(); g > 0 {
		b.ReportMetric(float64(g), "slow-consumers")
	}
}

// BenchmarkTransientPut runs transient PUTs with a msg_id from parallel
// clients, each reading its replies, with one subscriber of the parent
// that drains; it reports PUTs per second (issue 9: 50,000/s).
func BenchmarkTransientPut(b *testing.B) {
	tr := newTree(b, nil, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := connect(b, tr, "watcher", "")
	w.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/users"}`))
	done := make(chan struct{})
	go func() {
		defer close(done)
		var buf []Frame
		for {
			var err error
			if buf, err = w.Next(ctx, buf); err != nil {
				return
			}
		}
	}()
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := n.Add(1)
		c, err := tr.Connect(fmt.Sprint("c", id), "")
		if err != nil {
			b.Error(err)
			return
		}
		var buf []Frame
		dctx, dcancel := context.WithCancel(ctx)
		dcancel()
		for i := 0; pb.Next(); i++ {
			c.Exec(ctx, fmt.Appendf(nil, `{"method":"PUT","resource":"/users/%d-%d","entity":{"name":"user","status":"online"},"msg_id":%d}`, id, i%64, i))
			buf, _ = c.Next(dctx, buf)
		}
		c.Disconnect()
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
	cancel()
	<-done
}

// BenchmarkIdleClient reports the heap a connected client with one
// subscription of its own costs the tree (issue 9 aims under 20 KB per
// idle WebSocket connection, all layers together).
func BenchmarkIdleClient(b *testing.B) {
	tr := newTree(b, nil, Options{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := tr.Connect(fmt.Sprint("c", i), "")
		if err != nil {
			b.Fatal(err)
		}
		c.Exec(context.Background(), fmt.Appendf(nil, `{"method":"SUBSCRIBE","resource":"/user/%d"}`, i))
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heap-B/client")
}
