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

// BenchmarkSave saves batches of new records (32 writers, each appending
// to its own parent, as bench/channel-writes.sh does) into an SQLite file
// and reports the time and allocations per record (an op is one record).
// A batch of 32 is what the committer gathers from 32 connections with one
// write each in the tree; 512 one with 16 each.
func BenchmarkSave(b *testing.B) {
	for _, size := range []int{4, 32, 512} {
		b.Run(fmt.Sprint("batch=", size), func(b *testing.B) { benchSave(b, size) })
	}
}

func benchSave(b *testing.B, size int) {
	st, err := Open(filepath.Join(b.TempDir(), "reso.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	puts := make([]channel.StoredResource, size)
	entity := []byte(`{"n":12345}`)
	var seq uint64
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += size {
		b.StopTimer() // the records are the caller's
		for i := range puts {
			seq++
			puts[i] = channel.StoredResource{
				Path: fmt.Sprintf("/bench/p1/c%d/%d", seq%32, seq), Type: "application/json",
				Entity: entity, Created: seq,
			}
		}
		b.StartTimer()
		if err := st.Save(ctx, seq+1<<16, puts, nil); err != nil {
			b.Fatal(err)
		}
	}
}
