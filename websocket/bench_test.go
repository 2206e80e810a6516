package websocket

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/reso-project/reso/core"
)

// BenchmarkSendBatch sends batches of notifications of about 160 bytes
// over a real connection whose client reads them away, and reports the
// allocations of a batch: none in steady state (the frames are written
// by conn into a pooled buffer, in one write).
func BenchmarkSendBatch(b *testing.B) {
	for _, n := range []int{1, 32} {
		b.Run(map[int]string{1: "1 message", 32: "32 messages"}[n], func(b *testing.B) {
			srv, ch := served(b, New(Options{}))
			c, _, err := dial(b, srv, nil)
			if err != nil {
				b.Fatal(err)
			}
			s := recvSession(b, ch).(core.BatchSender)
			go func() { _, _ = io.Copy(io.Discard, c.UnderlyingConn()) }()
			data := bytes.Repeat([]byte("x"), 160)
			ms := make([]core.Message, n)
			for i := range ms {
				ms[i] = core.Message{Data: data}
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := s.SendBatch(ctx, ms); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/message")
		})
	}
}

// BenchmarkRecv reads messages of about 150 bytes that a client writes
// over a real connection, and reports the allocations of one: its copy of
// the message's size (and what the library takes per message).
func BenchmarkRecv(b *testing.B) {
	srv, ch := served(b, New(Options{}))
	c, _, err := dial(b, srv, nil)
	if err != nil {
		b.Fatal(err)
	}
	s := recvSession(b, ch)
	msg := bytes.Repeat([]byte("y"), 150)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if c.WriteMessage(1, msg) != nil {
				return
			}
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		m, err := s.Recv(ctx)
		if err != nil || len(m.Data) != len(msg) {
			b.Fatalf("Recv: %d bytes, %v", len(m.Data), err)
		}
	}
}
