package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/reso-project/reso/channel"
)

// BenchmarkPersistentPut runs persistent PUTs from many parallel clients
// into an SQLite file, each waiting for its save (group commit), and
// reports PUTs per second (issue 9: 10,000/s).
func BenchmarkPersistentPut(b *testing.B) {
	st, err := Open(filepath.Join(b.TempDir(), "reso.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	tr, err := channel.New(context.Background(), st, channel.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	var n atomic.Int64
	b.SetParallelism(32) // 64 clients on 2 cores: many waiting for a save at once
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := n.Add(1)
		c, err := tr.Connect(fmt.Sprint("c", id), "")
		if err != nil {
			b.Error(err)
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var buf []channel.Frame
		for i := 0; pb.Next(); i++ {
			c.Exec(context.Background(), fmt.Appendf(nil, `{"method":"PUT","resource":"/data/%d/%d","persistent":true,"entity":{"n":%d,"text":"a persistent record"},"msg_id":%d}`, id, i%1000, i, i))
			buf, _ = c.Next(ctx, buf)
		}
		c.Disconnect()
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
}
