package fleet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// BenchmarkNotifyRound: a NOTIFY with msg_id, one in flight, from a client
// of node 0 to a subscriber on each of three nodes, against its floor on
// the same cluster without reso (Floor: a publish to an R3 stream, its
// acknowledgement, three consumers, two reports back over core NATS).
func BenchmarkNotifyRound(b *testing.B) {
	cl := natstest.Start(b, 3)
	b.Run("Fleet", func(b *testing.B) {
		ns := fleet(b, cl, 3, Config{})
		for _, n := range ns {
			if r := connect(b, n, "").do(`{"method":"SUBSCRIBE","resource":"/n"}`); code(r) != "success" {
				b.Fatal(r)
			}
		}
		c := connect(b, ns[0], "")
		for b.Loop() {
			if r := c.do(`{"method":"NOTIFY","resource":"/n","data":1}`); r["sent_count"] != float64(3) {
				b.Fatal(r)
			}
		}
	})
	floors := 0
	b.Run("Floor", func(b *testing.B) {
		ctx := b.Context()
		floors++ // a stream of its own per run: the benchmark runs it more than once
		name := fmt.Sprintf("FLOOR%d", floors)
		subject, report := strings.ToLower(name), strings.ToLower(name)+".report"
		var ncs []*nats.Conn
		for range 3 {
			nc, err := nats.Connect(cl.URLs())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(nc.Close)
			ncs = append(ncs, nc)
		}
		js, err := jetstream.New(ncs[0])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject},
			Storage: jetstream.FileStorage, Replicas: 3, Duplicates: time.Minute, AllowDirect: true}); err != nil {
			b.Fatal(err)
		}
		mine, reports := make(chan struct{}, 1), make(chan struct{}, 2)
		if _, err := ncs[0].Subscribe(report, func(*nats.Msg) { reports <- struct{}{} }); err != nil {
			b.Fatal(err)
		}
		if err := ncs[0].Flush(); err != nil {
			b.Fatal(err)
		}
		for i, nc := range ncs {
			njs, _ := jetstream.New(nc)
			s, err := njs.Stream(ctx, name)
			if err != nil {
				b.Fatal(err)
			}
			cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
			if err != nil {
				b.Fatal(err)
			}
			cc, err := cons.Consume(func(jetstream.Msg) {
				if i == 0 {
					mine <- struct{}{}
					return
				}
				_ = nc.Publish(report, []byte("1"))
			})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(cc.Stop)
		}
		entry := make([]byte, 300)
		n := 0
		for b.Loop() {
			n++
			if _, err := js.Publish(ctx, subject, entry, jetstream.WithMsgID(fmt.Sprint(n))); err != nil {
				b.Fatal(err)
			}
			for range 3 {
				select {
				case <-mine:
				case <-reports:
				case <-time.After(10 * time.Second):
					b.Fatal("no delivery or report in 10 s")
				}
			}
		}
	})
}
