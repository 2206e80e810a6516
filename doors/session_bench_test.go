package doors_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/doors"
)

// BenchmarkSessionMessages measures one session's messages through the
// WebSocket door on the tree in process, over a pipe session: a NOTIFY
// of a resource without subscribers and its reply, 16 in flight.
func BenchmarkSessionMessages(b *testing.B) {
	tr, err := channel.New(b.Context(), nil, channel.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	h := &doors.Session{Tree: channelhost.TreeOf(tr)}
	server, client := core.Pipe("bench")
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeSession(context.Background(), &core.Request{}, server)
		server.Close(core.CloseNormal, "")
	}()
	msg := core.Message{Data: []byte(`{"method":"NOTIFY","resource":"/bench","msg_id":1}`)}
	const window = 16
	ctx := context.Background()
	sent, got := 0, 0
	b.ReportAllocs()
	for b.Loop() {
		for sent-got < window {
			if err := client.Send(ctx, msg); err != nil {
				b.Fatal(err)
			}
			sent++
		}
		if _, err := client.Recv(ctx); err != nil {
			b.Fatal(err)
		}
		got++
	}
	for got < sent {
		if _, err := client.Recv(ctx); err != nil {
			b.Fatal(err)
		}
		got++
	}
	client.Close(core.CloseNormal, "")
	<-done
}

// sinkSession is a session whose peer sends the messages of in and takes
// every message sent to it at once, counting them into n: what the door
// does per delivery is measured without a transport's own work.
type sinkSession struct {
	id     string
	in     chan []byte
	n      *atomic.Int64
	closed chan struct{}
	once   sync.Once
}

func newSink(id string, n *atomic.Int64) *sinkSession {
	return &sinkSession{id: id, in: make(chan []byte, 64), n: n, closed: make(chan struct{})}
}

func (s *sinkSession) ID() string { return s.id }

func (s *sinkSession) Recv(ctx context.Context) (core.Message, error) {
	select {
	case m := <-s.in:
		return core.Message{Data: m}, nil
	case <-s.closed:
		return core.Message{}, &core.CloseError{Code: core.CloseNormal}
	case <-ctx.Done():
		return core.Message{}, ctx.Err()
	}
}

func (s *sinkSession) Send(ctx context.Context, m core.Message) error {
	return s.SendBatch(ctx, []core.Message{m})
}

func (s *sinkSession) SendBatch(_ context.Context, ms []core.Message) error {
	s.n.Add(int64(len(ms)))
	return nil
}

func (s *sinkSession) Close(int, string) error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

// BenchmarkSessionFanout measures the WebSocket door's part of a fan-out
// on the tree in process: 1,000 sessions subscribed to one resource, one
// publisher session sending NOTIFYs of about 100 bytes of data with a
// msg_id, 32 in flight; each session's frames are drained (the drain
// pool, TryNext) and handed to a session that takes them at once. It
// reports allocations per delivery.
func BenchmarkSessionFanout(b *testing.B) {
	const subscribers, window = 1000, 32
	tr, err := channel.New(b.Context(), nil, channel.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	h := &doors.Session{Tree: channelhost.TreeOf(tr)}
	var delivered, replies atomic.Int64
	var wg sync.WaitGroup
	serve := func(s *sinkSession) {
		wg.Go(func() { _ = h.ServeSession(context.Background(), &core.Request{}, s) })
	}
	var sinks []*sinkSession
	for i := range subscribers {
		s := newSink(fmt.Sprint("s", i), &delivered)
		s.in <- []byte(`{"method":"SUBSCRIBE","resource":"/room","msg_id":0}`)
		serve(s)
		sinks = append(sinks, s)
	}
	for delivered.Load() < subscribers { // the SUBSCRIBE replies
		runtime.Gosched()
	}
	delivered.Store(0)
	pub := newSink("pub", &replies)
	serve(pub)
	msg := []byte(`{"method":"NOTIFY","resource":"/room","msg_id":1,"data":{"text":"hello, this is a chat line of about a hundred bytes!!"}}`)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	b.ReportAllocs()
	sent := int64(0)
	for b.Loop() {
		for sent-replies.Load() >= window {
			runtime.Gosched()
		}
		pub.in <- msg
		sent++
	}
	for replies.Load() < sent || delivered.Load() < sent*subscribers {
		runtime.Gosched()
	}
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(sent*subscribers), "allocs/delivery")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(sent*subscribers), "ns/delivery")
	for _, s := range append(sinks, pub) {
		s.Close(core.CloseNormal, "")
	}
	wg.Wait()
}
