package channel

import (
	"context"
	"fmt"
	"testing"
)

// nopStore is a Store that keeps nothing: BenchmarkWrite measures the
// tree's work on a persistent write without the database's
// (sqlitestore's BenchmarkSave measures that).
type nopStore struct{}

func (nopStore) Load(context.Context) ([]StoredResource, uint64, error) { return nil, 0, nil }
func (nopStore) Save(context.Context, uint64, []StoredResource, []string) error {
	return nil
}

// BenchmarkWrite measures what the tree does per write of one connection
// (what bench/channel-writes.sh sends: a PUT with a msg_id creating a new
// resource under the connection's own parent, nobody subscribed),
// allocations included: transient, and persistent through the committer
// with the connection's writes pipelined (Options.Pipeline, as in reso).
// The messages are made before the timer starts; the replies are taken.
func BenchmarkWrite(b *testing.B) {
	for _, mode := range []string{"transient", "persistent"} {
		b.Run(mode, func(b *testing.B) {
			var st Store
			extra := ""
			if mode == "persistent" {
				st, extra = nopStore{}, `,"persistent":true`
			}
			tr := newTree(b, st, Options{Pipeline: true})
			c := connect(b, tr, "c", "")
			msgs := make([][]byte, b.N)
			for i := range msgs {
				msgs[i] = fmt.Appendf(nil, `{"method":"PUT","resource":"/bench/w/c1/%d","msg_id":%d%s,"entity":{"n":%d}}`, i, i, extra, i)
			}
			ctx := context.Background()
			now, cancel := context.WithCancel(ctx)
			cancel()
			var buf []Frame
			replies := 0
			b.ReportAllocs()
			b.ResetTimer()
			for _, m := range msgs {
				c.Exec(ctx, m)
				buf, _ = c.Next(now, buf)
				replies += len(buf)
			}
			for replies < b.N {
				var err error
				if buf, err = c.Next(ctx, buf); err != nil {
					b.Fatal(err)
				}
				replies += len(buf)
			}
		})
	}
}
